/* cmd_schedules.c: `flashlab schedules`: the registry as the rest of the house sees it -- every
 * schedule's name, whether it is one of "all", how optimize searches each pass (the lemma of
 * docs/model.md §7, or not in the family), its roles and its one-line summary.  Nothing here
 * names a schedule: the rows are the registry's (schedule.h). */
#include <stdio.h>

#include "cli.h"
#include <flashlab/schedule.h>

static const char *usage =
    "usage: flashlab schedules [--format table|csv]\n"
    "Lists the registered schedules: name; all (one of --algo all: yes, or 'groups' when it\n"
    "joins only where the query heads form GQA groups); how optimize searches the forward and\n"
    "the backward (docs/model.md §7: O1 Br free, O2 Bc free, O3 the frontier, O4 branch and\n"
    "bound; '-': not in the family for that pass); its passes; its roles; its summary.\n\n"
    "  --format F  table or csv  [table]\n"
    "  --help      this text\n";

static const char *lemma(fl_search s)
{
    switch (s) {
    case FL_SEARCH_ROWS_FREE: return "O1";
    case FL_SEARCH_COLS_FREE: return "O2";
    case FL_SEARCH_FRONTIER: return "O3";
    case FL_SEARCH_BOUND: return "O4";
    default: return "-";
    }
}

/* The roles and kinds of a schedule, '+'-separated ("-" when none). */
static void roles(const fl_schedule *s, char *buf, size_t cap)
{
    static const struct { unsigned flag; const char *name; } r[] = {
        {FL_SCHED_DEFAULT, "default"}, {FL_SCHED_PAPER_LAW, "paper-law"}, {FL_SCHED_COMPARED, "compared"},
        {FL_SCHED_MATERIALIZES, "materializes"}, {FL_SCHED_OWN_PROBLEM, "own-problem"},
        {FL_SCHED_SOFTMAX, "softmax"}, {FL_SCHED_STACKS_GROUP, "stacks-group"}, {FL_SCHED_CHUNKS_D, "chunks-d"}};
    size_t n = 0;
    buf[0] = 0;
    for (size_t i = 0; i < sizeof r / sizeof r[0] && n < cap; i++)
        if (s->flags & r[i].flag) n += (size_t)snprintf(buf + n, cap - n, "%s%s", n ? "+" : "", r[i].name);
    if (!n) snprintf(buf, cap, "-");
}

int fl_cmd_schedules(int argc, char **argv)
{
    int csv;
    const int rc = fl_cli_list_opts(argc, argv, "schedules", usage, &csv);
    if (rc >= 0) return rc;
    if (csv) puts("name,all,search_fwd,search_bwd,passes,roles,summary");
    else printf("%-15s %-6s %-4s %-4s %-8s %-30s %s\n", "schedule", "all", "fwd", "bwd", "passes", "roles", "summary");
    for (int i = 0; i < fl_schedule_count(); i++) {
        const fl_schedule *s = fl_schedule_get((fl_algo)i);
        const char *all = !(s->flags & FL_SCHED_IN_ALL) ? "no" : (s->flags & FL_SCHED_STACKS_GROUP) ? "groups" : "yes";
        char r[160];
        roles(s, r, sizeof r);
        const char *passes = s->bwd ? "fwd,bwd" : "fwd";
        if (csv) printf("%s,%s,%s,%s,%s,%s,\"%s\"\n", s->name, all, lemma(s->search[0]), lemma(s->search[1]),
                        s->bwd ? "fwd+bwd" : "fwd", r, s->summary);
        else printf("%-15s %-6s %-4s %-4s %-8s %-30s %s\n", s->name, all, lemma(s->search[0]), lemma(s->search[1]),
                    passes, r, s->summary);
    }
    return 0;
}
