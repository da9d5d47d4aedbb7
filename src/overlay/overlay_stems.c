/* overlay_stems.c: the overlay folder names of a batch of photos (overlay.h). */
#include "attncap/overlay.h"
#include "alloc_internal.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* FNV-1a: the stem table's hash. */
static uint64_t hash_str(const char *s) {
    uint64_t h = 1469598103934665603ull;
    for (; *s; s++) h = (h ^ (unsigned char)*s) * 1099511628211ull;
    return h;
}

int ac_overlay_stems(const char *const *paths, int n, char **stems, ac_err *err) {
    size_t cap = 64;
    while (cap < 2 * (size_t)n + 2) cap *= 2;
    int *table = ac_malloc(cap * sizeof *table); /* index into stems, or -1 */
    if (!table) return ac_errf(err, "out of memory");
    for (size_t k = 0; k < cap; k++) table[k] = -1;
    int done = 0;
    for (; done < n; done++) {
        const char *b = strrchr(paths[done], '/');
        b = b ? b + 1 : paths[done];
        char stem[200], buf[220];
        snprintf(stem, sizeof stem, "%s", b);
        char *dot = strrchr(stem, '.');
        if (dot && dot != stem) *dot = 0;
        snprintf(buf, sizeof buf, "%s", stem);
        size_t slot;
        for (int k = 2;; k++) {
            slot = hash_str(buf) & (cap - 1);
            while (table[slot] >= 0 && strcmp(stems[table[slot]], buf)) slot = (slot + 1) & (cap - 1);
            if (table[slot] < 0) break;
            snprintf(buf, sizeof buf, "%s-%d", stem, k);
        }
        if (!(stems[done] = ac_strdup(buf))) break;
        table[slot] = done;
    }
    free(table);
    if (done == n) return 0;
    for (int i = 0; i < done; i++) free(stems[i]), stems[i] = NULL;
    return ac_errf(err, "out of memory");
}
