/* list_opts.c: the options of the listing commands (cli.h: fl_cli_list_opts). */
#include <stdio.h>
#include <string.h>

#include "args.h"
#include "cli.h"

int fl_cli_list_opts(int argc, char **argv, const char *command, const char *usage, int *csv)
{
    const char *name, *iv, *v;
    fl_args a;
    int k;
    *csv = 0;
    fl_args_init(&a, argc, argv);
    while ((k = fl_args_next_option(&a, &name, &iv)) == 1) {
        if (fl_args_value(&a, name, iv, &v)) return fl_cli_error(FL_EINVAL);
        if (strcmp(name, "--format") != 0)
            return fl_cli_error(fl_fail(FL_EINVAL, "%s: unknown option for %s (see flashlab %s --help)", name,
                                        command, command));
        if (strcmp(v, "table") && strcmp(v, "csv"))
            return fl_cli_error(fl_fail(FL_EINVAL, "--format: unknown format '%s' (choose table or csv)", fl_shown(v)));
        *csv = strcmp(v, "csv") == 0;
    }
    if (k == FL_ARGS_HELP) {
        fputs(usage, stdout);
        return 0;
    }
    return k < 0 ? fl_cli_error(FL_EINVAL) : -1;
}
