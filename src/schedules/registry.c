/* registry.c: every schedule flashlab knows, one line each (see include/flashlab/schedule.h).
 *
 * To add a schedule: write src/schedules/<name>.c holding its loop and its descriptor
 * `const fl_schedule fl_sched_<name>`, and add X(<name>) at the end of the list below.  Its
 * fl_algo value is its position; the runner, the CLI, the optimizer and the conformance tests
 * pick it up from here.  The first entries keep the positions problem.h names
 * (tests/conformance/test_registry.c checks them). */
#include <string.h>

#include <flashlab/schedule.h>

#define FL_SCHEDULES(X)   \
    X(standard)           \
    X(flash1)             \
    X(flash2)             \
    X(flash2_gqa)         \
    X(decode)             \
    X(blocksparse)        \
    X(memeff)             \
    X(softmax_safe)       \
    X(softmax_online)     \
    X(smallcache)

#define FL_DECLARE(name) extern const fl_schedule fl_sched_##name;
FL_SCHEDULES(FL_DECLARE)
#define FL_ENTRY(name) &fl_sched_##name,
static const fl_schedule *const registry[] = {FL_SCHEDULES(FL_ENTRY)};

enum { NSCHED = (int)(sizeof registry / sizeof registry[0]) };
_Static_assert(NSCHED <= FL_ALGO_MAX, "the registry holds more than FL_ALGO_MAX schedules");

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
