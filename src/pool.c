/* pool.c: the thread pool (see pool.h).
 *
 * A layer's work is cut into CHUNKS_PER_THREAD chunks per thread, which the threads (the caller
 * included) claim one at a time: on a busy machine, where a thread may lose its core for a few
 * milliseconds, the others take over its share instead of waiting at the end of every layer. The
 * chunk counter carries the job's generation, so a thread that wakes late can never claim a chunk of
 * a job that has moved on. A layer takes from tens of microseconds to a few milliseconds, so both
 * sides spin briefly before sleeping on the condition variables. */
#include "pool.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>

#define SPIN_ITERS 4000
#define CHUNKS_PER_THREAD 4

struct ac_pool {
    int n, chunks;
    pthread_t *th;
    pthread_mutex_t mu;
    pthread_cond_t start, done;
    _Atomic uint64_t work; /* generation << 32 | next chunk */
    atomic_int done_chunks, quit;
    void (*fn)(void *, int, int);
    void *arg;
};

typedef struct worker_arg {
    ac_pool *p;
    int t;
} worker_arg;

static inline void cpu_relax(void) {
#if defined(__x86_64__) || defined(__i386__)
    __builtin_ia32_pause();
#endif
}

/* Runs chunks of job `gen` until none is left. */
static void do_chunks(ac_pool *p, uint32_t gen) {
    for (;;) {
        uint64_t v = atomic_load(&p->work);
        do {
            if ((uint32_t)(v >> 32) != gen || (uint32_t)v >= (uint32_t)p->chunks) return;
        } while (!atomic_compare_exchange_weak(&p->work, &v, v + 1));
        /* the job cannot finish before this chunk does, so fn and arg are still its own */
        p->fn(p->arg, (int)(uint32_t)v, p->chunks);
        if (atomic_fetch_add(&p->done_chunks, 1) + 1 == p->chunks) {
            pthread_mutex_lock(&p->mu);
            pthread_cond_signal(&p->done);
            pthread_mutex_unlock(&p->mu);
        }
    }
}

static uint32_t cur_gen(ac_pool *p) { return (uint32_t)(atomic_load(&p->work) >> 32); }

static void *worker(void *a) {
    worker_arg *wa = a;
    ac_pool *p = wa->p;
    free(wa);
    uint32_t seen = 0;
    for (;;) {
        for (int i = 0; i < SPIN_ITERS && cur_gen(p) == seen && !atomic_load_explicit(&p->quit, memory_order_relaxed); i++)
            cpu_relax();
        pthread_mutex_lock(&p->mu);
        while (cur_gen(p) == seen && !atomic_load(&p->quit)) pthread_cond_wait(&p->start, &p->mu);
        pthread_mutex_unlock(&p->mu);
        if (atomic_load(&p->quit)) return NULL;
        seen = cur_gen(p);
        do_chunks(p, seen);
    }
}

ac_pool *ac_pool_create(int n) {
    ac_pool *p = calloc(1, sizeof *p);
    if (!p) return NULL;
    p->n = n < 1 ? 1 : n;
    pthread_mutex_init(&p->mu, NULL);
    pthread_cond_init(&p->start, NULL);
    pthread_cond_init(&p->done, NULL);
    atomic_init(&p->work, 0);
    atomic_init(&p->done_chunks, 0);
    atomic_init(&p->quit, 0);
    if (p->n > 1) {
        p->th = calloc((size_t)p->n, sizeof *p->th);
        if (!p->th) p->n = 1;
        for (int t = 1; t < p->n; t++) {
            worker_arg *wa = malloc(sizeof *wa);
            if (wa) *wa = (worker_arg){p, t};
            if (!wa || pthread_create(&p->th[t], NULL, worker, wa) != 0) {
                free(wa);
                p->n = t; /* run with the threads we got */
                break;
            }
        }
    }
    p->chunks = p->n * CHUNKS_PER_THREAD;
    return p;
}

void ac_pool_run(ac_pool *p, void (*fn)(void *, int, int), void *arg) {
    if (!p || p->n == 1) {
        fn(arg, 0, 1);
        return;
    }
    p->fn = fn;
    p->arg = arg;
    atomic_store(&p->done_chunks, 0);
    pthread_mutex_lock(&p->mu); /* publishing under the mutex: a worker about to sleep cannot miss it */
    uint32_t gen = cur_gen(p) + 1;
    atomic_store(&p->work, (uint64_t)gen << 32);
    pthread_cond_broadcast(&p->start);
    pthread_mutex_unlock(&p->mu);
    do_chunks(p, gen);
    for (int i = 0; i < SPIN_ITERS && atomic_load(&p->done_chunks) < p->chunks; i++) cpu_relax();
    if (atomic_load(&p->done_chunks) < p->chunks) {
        pthread_mutex_lock(&p->mu);
        while (atomic_load(&p->done_chunks) < p->chunks) pthread_cond_wait(&p->done, &p->mu);
        pthread_mutex_unlock(&p->mu);
    }
}

int ac_pool_chunks(const ac_pool *p) { return !p || p->n == 1 ? 1 : p->chunks; }

void ac_pool_free(ac_pool *p) {
    if (!p) return;
    pthread_mutex_lock(&p->mu);
    atomic_store(&p->quit, 1);
    pthread_cond_broadcast(&p->start);
    pthread_mutex_unlock(&p->mu);
    for (int t = 1; t < p->n; t++) pthread_join(p->th[t], NULL);
    pthread_mutex_destroy(&p->mu);
    pthread_cond_destroy(&p->start);
    pthread_cond_destroy(&p->done);
    free(p->th);
    free(p);
}
