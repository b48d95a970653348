/* ref_mask.c: the keep rule of the definitions, one comparison per constraint (see ref_mask.h). */
#include "ref_mask.h"

int fl_ref_mask_dense(const fl_ref_mask *mk)
{
    return mk->causal == 0 && mk->left == -1 && mk->right == -1;
}

int fl_ref_keep(int64_t i, int64_t j, const void *ctx)
{
    const fl_ref_mask *mk = ctx;
    const int64_t o = mk->Nk - mk->Nq;
    if (mk->causal == 1 && j > i) return 0;
    if (mk->causal == 2 && j > i + o) return 0;
    if (mk->left != -1 && j < i + o - mk->left) return 0;
    if (mk->right != -1 && j > i + o + mk->right) return 0;
    return 1;
}
