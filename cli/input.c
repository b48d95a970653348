/* input.c: opening a file the user names as input (cli.h). */
#define _POSIX_C_SOURCE 200809L /* fileno, fstat */
#include <errno.h>
#include <string.h>
#include <sys/stat.h>

#include "args.h"
#include "cli.h"

fl_status fl_cli_open_input(const char *path, const char *option, FILE **in)
{
    *in = NULL;
    if (strcmp(path, "-") == 0) {
        *in = stdin;
        return FL_OK;
    }
    /* a named input must be a regular file: a FIFO with no writer would block the open, a device
     * never end ('-' is the way to pipe) */
    struct stat sb;
    if (stat(path, &sb) == 0 && !S_ISREG(sb.st_mode) && !S_ISDIR(sb.st_mode))
        return fl_fail(FL_EINVAL, "%s: %s is not a regular file (pipe it through '%s -' instead)", option,
                       fl_shown(path), option);
    FILE *f = fopen(path, "r");
    if (!f) return fl_fail(FL_EINVAL, "%s: cannot open %s (%s)", option, fl_shown(path), strerror(errno));
    if (fstat(fileno(f), &sb) == 0 && S_ISDIR(sb.st_mode)) {
        fclose(f);
        return fl_fail(FL_EINVAL, "%s: %s is a directory", option, fl_shown(path));
    }
    *in = f;
    return FL_OK;
}

void fl_cli_close_input(FILE *in)
{
    if (in && in != stdin) fclose(in);
}
