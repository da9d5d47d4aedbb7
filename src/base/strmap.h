/* strmap.h (internal): a string -> int hash map with open addressing. Keys are copied. Used by
 * the vocabulary, the dataset readers and the metrics (word interning). */
#ifndef ATTNCAP_STRMAP_H
#define ATTNCAP_STRMAP_H
#include <stddef.h>
#include <stdint.h>

typedef struct ac_strmap {
    char **keys;   /* cap slots, NULL = empty */
    int *vals;
    size_t cap, n;
} ac_strmap;

uint64_t ac_hash_bytes(const void *p, size_t n); /* FNV-1a 64 */
/* Returns the value of key, or -1 if absent. */
int ac_strmap_get(const ac_strmap *m, const char *key);
/* Inserts key -> val if absent. Returns the stored value (the old one if present), -2 if out of memory. */
int ac_strmap_put(ac_strmap *m, const char *key, int val);
void ac_strmap_free(ac_strmap *m);
#endif
