/* pool.h: a persistent pool of n-1 worker threads plus the caller, for the CNN's layers. Not a
 * public header. (Splitting the decoder step's products over it was measured slower: the step
 * streams its weights over the memory bus both cores share.)
 *
 * ac_pool_run(p, fn, arg) calls fn(arg, t, n) once for each chunk t in [0, n), n = a few chunks per
 * thread (ac_pool_chunks), on whichever thread is free, and returns when all are done; so fn must
 * compute the same result for any split (ours do: each output element is computed the same way
 * whatever chunk it falls in). A NULL pool, or one of one thread, runs fn(arg, 0, 1) in the caller.
 * One job at a time: a pool is not shared by concurrent callers. */
#ifndef ATTNCAP_POOL_H
#define ATTNCAP_POOL_H

typedef struct ac_pool ac_pool;
ac_pool *ac_pool_create(int n);
void ac_pool_run(ac_pool *p, void (*fn)(void *arg, int t, int n), void *arg);
void ac_pool_free(ac_pool *p);
/* How many chunks (the n passed to fn) a job is cut into. */
int ac_pool_chunks(const ac_pool *p);
#endif
