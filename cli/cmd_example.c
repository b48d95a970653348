/* cmd_example.c: `flashlab example list | NAME`: the seeds' worked examples. */
#include <stdio.h>
#include <string.h>

#include "args.h"
#include "cli.h"
#include <flashlab/examples.h>
#include <flashlab/status.h>

int fl_cmd_example(int argc, char **argv)
{
    int n;
    const fl_example *ex = fl_examples(&n);
    if (argc < 1) /* bad input: the one line only, nothing on stdout */
        return fl_cli_error(fl_fail(FL_EINVAL, "example: needs a name (try: flashlab example list)"));
    if (strncmp(argv[0], "--help=", 7) == 0) return fl_cli_error(fl_args_flag("--help", argv[0] + 7));
    if (strcmp(argv[0], "--help") == 0) {
        printf("usage: flashlab example list | NAME\n"
               "Reproduces a worked example from the seed documents and checks its numbers.\n"
               "Exit status 0 when every check passes, 1 when one fails.\n");
        return 0;
    }
    if (argc > 1) return fl_cli_error(fl_fail(FL_EINVAL, "example: takes one name, got '%s' too", fl_shown(argv[1])));
    if (strcmp(argv[0], "list") == 0) {
        for (int i = 0; i < n; i++) printf("%-16s %s\n", ex[i].name, ex[i].summary);
        return 0;
    }
    const fl_example *e = fl_example_find(argv[0]);
    if (!e)
        return fl_cli_error(fl_fail(FL_EINVAL, "example: unknown example '%s' (see flashlab example list)", fl_shown(argv[0])));
    return e->run(stdout) ? 0 : 1;
}
