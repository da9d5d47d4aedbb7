/* shard.c: a task's share of the photos, by a stable hash of the file name (see shard.h). */
#include "attncap/shard.h"

#include <string.h>

#include "attncap/locate.h"

uint64_t ac_shard_hash(const char *name) {
    uint64_t h = 0xcbf29ce484222325ull; /* FNV-1a 64 */
    for (const unsigned char *p = (const unsigned char *)name; *p; p++) h = (h ^ *p) * 0x100000001b3ull;
    /* FNV's low bits mix poorly for short, similar names; the splitmix64 finaliser spreads them. */
    h ^= h >> 30;
    h *= 0xbf58476d1ce4e5b9ull;
    h ^= h >> 27;
    h *= 0x94d049bb133111ebull;
    h ^= h >> 31;
    return h;
}

int ac_shard_owns(const ac_shard *s, const char *path) {
    if (s->count <= 0) return 1;
    const char *slash = strrchr(path, '/');
    return ac_shard_hash(slash ? slash + 1 : path) % (uint64_t)s->count == (uint64_t)s->index;
}

int ac_shard_filter(const ac_shard *s, char **items, int n, void (*drop)(void *)) {
    int kept = 0;
    for (int i = 0; i < n; i++) {
        if (ac_shard_owns(s, items[i])) items[kept++] = items[i];
        else if (drop) drop(items[i]);
    }
    return kept;
}

/* A whole number of 1 to 9 digits (no sign, no spaces) ending at `end` or at the string's end. */
static int parse_count(const char *p, const char *end, long *v) {
    if (!end) end = p + strlen(p);
    if (end == p || end - p > 9) return -1;
    long x = 0;
    for (; p < end; p++) {
        if (*p < '0' || *p > '9') return -1;
        x = 10 * x + (*p - '0');
    }
    *v = x;
    return 0;
}

static int env_count(const char *name, long *v, int required, ac_err *err) {
    const char *s = ac_env(name);
    if (!s) {
        *v = -1;
        return required ? ac_errf(err, "slurm: $%s is not set (not inside a Slurm job array)", name) : 0;
    }
    if (parse_count(s, NULL, v)) return ac_errf(err, "slurm: $%s is '%s', not a whole number", name, s);
    return 0;
}

static int parse_slurm(ac_shard *s, ac_err *err) {
    long id, lo, hi, count;
    if (env_count("SLURM_ARRAY_TASK_ID", &id, 1, err) || env_count("SLURM_ARRAY_TASK_MIN", &lo, 0, err) ||
        env_count("SLURM_ARRAY_TASK_MAX", &hi, 0, err) || env_count("SLURM_ARRAY_TASK_COUNT", &count, 0, err))
        return -1;
    if (lo < 0) lo = 0; /* MIN unset: an array counted from 0 */
    if (count < 0 && hi < 0)
        return ac_errf(err, "slurm: neither $SLURM_ARRAY_TASK_COUNT nor $SLURM_ARRAY_TASK_MAX is set");
    if (count < 0) count = hi - lo + 1;
    if (hi >= 0 && count != hi - lo + 1)
        return ac_errf(err, "slurm: the array %ld-%ld has %ld tasks, not %ld (a list or a step): submit a contiguous "
                            "array of tasks 0-%ld, or give the share as I/N", lo, hi, count, hi - lo + 1, count - 1);
    if (count < 1 || count > AC_SHARD_MAX) return ac_errf(err, "slurm: %ld tasks, not 1..%d", count, AC_SHARD_MAX);
    if (id < lo || id - lo >= count)
        return ac_errf(err, "slurm: task %ld is outside the array %ld-%ld", id, lo, lo + count - 1);
    s->index = (int)(id - lo), s->count = (int)count;
    return 0;
}

int ac_shard_parse(const char *spec, ac_shard *s, ac_err *err) {
    memset(s, 0, sizeof *s);
    if (!strcmp(spec, "slurm")) return parse_slurm(s, err);
    const char *slash = strchr(spec, '/');
    long i, n;
    if (!slash || parse_count(spec, slash, &i) || parse_count(slash + 1, NULL, &n))
        return ac_errf(err, "wants I/N (task I of N, 0 <= I < N) or slurm, got '%s'", spec);
    if (n < 1 || n > AC_SHARD_MAX) return ac_errf(err, "N in I/N must be 1..%d, got '%s'", AC_SHARD_MAX, spec);
    if (i >= n) return ac_errf(err, "I in I/N counts from 0 and must be below N, got '%s'", spec);
    s->index = (int)i, s->count = (int)n;
    return 0;
}
