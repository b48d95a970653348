/* registry.c: the registry, one array of the descriptors listed in registry.def (see
 * include/flashlab/schedule.h).  A test build appends schedules of its own, one line X(name) each
 * in the file FL_TEST_SCHEDULES_DEF (cmake -DFLASHLAB_TEST_SCHEDULES=DIR: DIR/schedules.def and
 * the sources beside it; tests/extra/), without touching a file of the library. */
#include <string.h>

#include <flashlab/schedule.h>

#define X(name) extern const fl_schedule fl_sched_##name;
#include "registry.def"
#ifdef FL_TEST_SCHEDULES_DEF
#include FL_TEST_SCHEDULES_DEF
#endif
#undef X

#define X(name) &fl_sched_##name,
static const fl_schedule *const registry[] = {
#include "registry.def"
#ifdef FL_TEST_SCHEDULES_DEF
#include FL_TEST_SCHEDULES_DEF
#endif
};
#undef X

enum { NSCHED = (int)(sizeof registry / sizeof registry[0]) };
_Static_assert(NSCHED <= FL_ALGO_MAX, "the registry holds more than FL_ALGO_MAX schedules");
#define X(name) FL_POS_##name,
enum {
#include "registry.def"
};
#undef X
_Static_assert(FL_POS_flash2 == FL_ALGO_DEFAULT, "FL_ALGO_DEFAULT is the position of the schedule flagged FL_SCHED_DEFAULT");

int fl_schedule_count(void) { return NSCHED; }

const fl_schedule *fl_schedule_get(fl_algo a)
{
    return ((int)a >= 0 && (int)a < NSCHED) ? registry[a] : NULL;
}

const fl_schedule *fl_schedule_find(const char *name, fl_algo *a)
{
    for (int i = 0; name && i < NSCHED; i++)
        if (strcmp(name, registry[i]->name) == 0) {
            if (a) *a = (fl_algo)i;
            return registry[i];
        }
    return NULL;
}

int fl_algos_with(unsigned with, fl_algo *out)
{
    int n = 0;
    for (int a = 0; a < NSCHED; a++)
        if ((registry[a]->flags & with) == with) out[n++] = (fl_algo)a;
    return n;
}

int fl_algos_all(const fl_problem *p, fl_algo *out)
{
    const int grouped = p && fl_problem_group_ratio(p) > 1;
    int n = 0;
    for (int a = 0; a < NSCHED; a++) {
        const unsigned f = registry[a]->flags;
        if ((f & FL_SCHED_IN_ALL) && (grouped || !(f & FL_SCHED_STACKS_GROUP))) out[n++] = (fl_algo)a;
    }
    return n;
}

fl_algo fl_algo_with_role(unsigned role)
{
    for (int a = 0; a < NSCHED; a++)
        if (registry[a]->flags & role) return (fl_algo)a;
    return (fl_algo)0;
}

int fl_algo_name_valid(const char *name)
{
    size_t n = name ? strlen(name) : 0;
    if (n < 1 || n > 31 || name[0] < 'a' || name[0] > 'z' || name[n - 1] == '-') return 0;
    for (size_t i = 1; i < n; i++) {
        const char c = name[i];
        if (!((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-') || (c == '-' && name[i - 1] == '-'))
            return 0;
    }
    return 1;
}

unsigned fl_algo_flags(fl_algo a)
{
    const fl_schedule *s = fl_schedule_get(a);
    return s ? s->flags : 0u;
}
