/* pool.h: every thread the library starts is started here. Not a public header.
 *
 * ac_parallel_for is the one fork/join: the stages that run in parallel (training's shards and
 * optimizer slices, decoding many rows, overlays) call it, and ac_parallel_all runs the stages of
 * feature extraction and batch captioning; nothing else calls pthread_create.
 *
 * The persistent pool below (n-1 worker threads plus the caller) is for the CNN's layers, which are
 * too short to start threads for, and for the decoder step of one photo's search
 * (ac_decoder_set_threads: its products, attention, cell and rows split; lanes searching side by side do not use it).
 *
 * ac_pool_run(p, fn, arg) calls fn(arg, t, n) once for each chunk t in [0, n), n = a few chunks per
 * thread (ac_pool_chunks), on whichever thread is free, and returns when all are done; so fn must
 * compute the same result for any split (ours do: each output element is computed the same way
 * whatever chunk it falls in). A NULL pool, or one of one thread, runs fn(arg, 0, 1) in the caller.
 * One job at a time: a pool is not shared by concurrent callers. */
#ifndef ATTNCAP_POOL_H
#define ATTNCAP_POOL_H

/* fn(arg, task, thread): task in [0, n_tasks); thread in [0, threads) names the running thread, for
 * per-thread scratch (never for the result: which thread runs which task varies). */
typedef void (*ac_task_fn)(void *arg, int task, int thread);

/* Runs fn for every task in [0, n_tasks) on up to `threads` threads (the caller is thread 0; < 1
 * means 1) and returns when all are done. Tasks are claimed in increasing order by whichever thread
 * is free; a thread that cannot be started is simply missing and the others take its tasks, so
 * every task always runs. Results must not depend on the split: each task writes its own outputs.
 * While more than one thread runs, OpenBLAS is held single-threaded (its own threads must not be
 * driven from several threads at once) and restored after the last concurrent call ends: a
 * process-wide count, so calls running at the same time from different threads are safe. */
void ac_parallel_for(int n_tasks, int threads, ac_task_fn fn, void *arg);
/* The same for tasks that wait for each other (a pipeline's stages): every task on a thread of its
 * own, all at once (n_tasks <= 64), thread == task. Returns -1, having run nothing, if the threads
 * cannot all be started. No BLAS guard: at most one of the stages may call BLAS (it keeps the
 * thread count it was given, e.g. the CNN's). */
int ac_parallel_all(int n_tasks, ac_task_fn fn, void *arg);

typedef struct ac_pool ac_pool;
ac_pool *ac_pool_create(int n);
void ac_pool_run(ac_pool *p, void (*fn)(void *arg, int t, int n), void *arg);
void ac_pool_free(ac_pool *p);
/* The same cut into `chunks` chunks (a job whose chunks cost more the more there are: the fused
 * convolutions recompute the rows neighbouring chunks share). 1 or less runs fn(arg, 0, 1). */
void ac_pool_run_n(ac_pool *p, void (*fn)(void *arg, int t, int n), void *arg, int chunks);
/* A run of jobs (a CNN pass) is about to start: wake the workers now, so they spin ready for its first
 * job. Only a hint: a job always runs, whatever was said before it. */
void ac_pool_wake(ac_pool *p);
/* fn(arg) on one of the pool's workers beside the jobs run meanwhile (that worker joins them when fn
 * returns; until then the other threads take its chunks, so no job waits for it): two pieces of work
 * of unequal length on the same threads without oversubscribing them. With no worker, fn runs at once
 * in the caller. One beside task at a time: ac_pool_beside_wait returns when it is done, and must be
 * called before the next, or before ac_pool_free. fn must not use this pool. */
void ac_pool_beside(ac_pool *p, void (*fn)(void *arg), void *arg);
void ac_pool_beside_wait(ac_pool *p);
/* Chunk t of n of [0, len) in whole units of `unit` (the last unit may be short): [*b0, *b1), even
 * chunks whatever len, empty when there are more chunks than units. */
static inline void ac_pool_chunk(int len, int unit, int t, int n, int *b0, int *b1) {
    const long units = (len + unit - 1) / unit;
    const int e = unit * (int)(units * (t + 1) / n);
    *b0 = unit * (int)(units * t / n);
    *b1 = e < len ? e : len;
}
/* How many chunks (the n passed to fn) ac_pool_run cuts a job into, and how many threads run them. */
int ac_pool_chunks(const ac_pool *p);
int ac_pool_threads(const ac_pool *p);
#endif
