/* disk.h: what a command left on disk, for tests: a folder's entries, a file's magic bytes, and
 * whether gnuplot can draw the figures at all.  Header-only, for tests. */
#ifndef FL_TESTS_DISK_H
#define FL_TESTS_DISK_H

#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The entries of dir but "." and "..", sorted (alphasort), as "a b c " into out (cap bytes, cut
 * to fit); "" for an empty or unreadable folder. */
static inline void dir_entries(const char *dir, char *out, size_t cap)
{
    struct dirent **list;
    int n = scandir(dir, &list, NULL, alphasort);
    out[0] = 0;
    for (int i = 0; i < n; i++) {
        if (strcmp(list[i]->d_name, ".") && strcmp(list[i]->d_name, "..")) {
            size_t len = strlen(out);
            if (len + 1 < cap) snprintf(out + len, cap - len, "%s ", list[i]->d_name);
        }
        free(list[i]);
    }
    if (n >= 0) free(list);
}

/* 1 when the file at path starts with the bytes of magic (at most 15), else 0 (also when it
 * cannot be read). */
static inline int file_starts_with(const char *path, const char *magic)
{
    char buf[16] = {0};
    FILE *f = fopen(path, "rb");
    if (!f) return 0;
    size_t n = fread(buf, 1, strlen(magic), f);
    fclose(f);
    return n == strlen(magic) && memcmp(buf, magic, n) == 0;
}

/* 1 when gnuplot runs and has the pngcairo, pdfcairo and svg terminals the figures use. */
static inline int have_gnuplot(void)
{
    return system("gnuplot -e 'set terminal pngcairo; set terminal pdfcairo; set terminal svg' >/dev/null 2>&1") == 0;
}

#endif
