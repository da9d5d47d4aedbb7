/* attncap/shard.h: not part of the stable API; may change in any release (the stable core: attncap.h). */
/* attncap/shard.h: one task's share of a list of photos, so that N machines (a Slurm job array, GNU
 * parallel over ssh) together do what one process does, each photo exactly once.
 *
 * The split is by a stable hash of the photo's file name (the bytes after the last '/'):
 *
 *     share(name) = splitmix64(fnv1a64(name)) mod N
 *
 * (FNV-1a 64: offset basis 0xcbf29ce484222325, prime 0x100000001b3; splitmix64's finaliser:
 * z ^= z >> 30, z *= 0xbf58476d1ce4e5b9, z ^= z >> 27, z *= 0x94d049bb133111eb, z ^= z >> 31.)
 * It depends on nothing but the name and N: the order of the list, the other photos in it and the
 * directory do not matter, so adding photos to an archive never moves the ones already done to
 * another share, and caption, features and eval --model given the same I/N take the same photos.
 * This is also why feature-cache keys (file names) never collide across shares. The price: shares are
 * balanced only statistically (100 photos in 4 shares: 25 +- 4.3 each; a share may be empty). */
#ifndef ATTNCAP_SHARD_H
#define ATTNCAP_SHARD_H
#include "attncap/common.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct ac_shard {
    int index, count; /* this task is index of count (0 <= index < count); count 0 = no split */
} ac_shard;

enum { AC_SHARD_MAX = 1000000 };

/* Parses "I/N" (whole numbers, 0 <= I < N <= AC_SHARD_MAX) or "slurm": I and N from the job array,
 * I = $SLURM_ARRAY_TASK_ID - $SLURM_ARRAY_TASK_MIN (MIN unset: 0), N = $SLURM_ARRAY_TASK_COUNT (unset:
 * MAX - MIN + 1).
 * An array with gaps or a step (--array=1,5,9 or 0-10:2) is refused: its tasks would not cover
 * 0..N-1. The message says what was wrong and names the value (for "attncap CMD: --shard: ..."). */
int ac_shard_parse(const char *spec, ac_shard *s, ac_err *err);

/* The hash above, of the whole string given. */
uint64_t ac_shard_hash(const char *name);
/* 1 if the photo at `path` (a path or a bare file name) is in share s, 0 if not; always 1 when
 * s->count is 0. */
int ac_shard_owns(const ac_shard *s, const char *path);
/* Keeps, in order, the items[i] that share s owns and returns how many; each dropped item is
 * passed to drop (e.g. free) unless drop is NULL. */
int ac_shard_filter(const ac_shard *s, char **items, int n, void (*drop)(void *));
#ifdef __cplusplus
}
#endif
#endif
