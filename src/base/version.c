/* version.c: the library's version (version.h, generated from CMakeLists.txt's project VERSION). */
#include <flashlab/version.h>

const char *fl_version(void)
{
    return FLASHLAB_VERSION;
}
