/* registry.cu: the ladder's versions, in the order of kernels/ladder/ladder.def, each with its
 * file, what it needs of the GPU, its table of kernel variants and its probe (attn.h).  What a
 * version needs is its file's FL_V_NEEDS (one definition, which its kernels' guards and its probe
 * use too). */
#include "attn.h"

static const fl_version_info versions[] = {
#define FL_RUNG(v, stem, lib, fwd, what) \
    {FL_RUNG_NUMBER(v), #stem ".cu", what, lib, fwd, fl_v##v##_needs, fl_v##v##_kernels, fl_v##v##_probe},
#include "../ladder/ladder.def"
};

const fl_version_info *fl_versions(int *n)
{
    *n = (int)(sizeof versions / sizeof versions[0]);
    return versions;
}

const fl_version_info *fl_version(int v)
{
    for (const fl_version_info &r : versions)
        if (r.version == v) return &r;
    return NULL;
}
