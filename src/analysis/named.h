/* named.h: the entry of a catalogue that the user names (an SRAM preset, a dtype, a model, a
 * host): each catalogue is an array of structs whose first member is the entry's name
 * (const char *), which every file that uses it asserts. */
#ifndef FL_NAMED_H
#define FL_NAMED_H
#include <stddef.h>
#include <string.h>

/* The entry of table (n entries, size bytes apart) whose name is name; NULL when none is, or
 * when name is NULL. */
static inline const void *fl_named(const void *table, size_t n, size_t size, const char *name)
{
    for (size_t i = 0; name && i < n; i++) {
        const void *entry = (const char *)table + i * size;
        if (strcmp(name, *(const char *const *)entry) == 0) return entry;
    }
    return NULL;
}

/* fl_named of a whole array. */
#define FL_NAMED(table, name) fl_named((table), sizeof(table) / sizeof((table)[0]), sizeof((table)[0]), (name))

#endif
