/* pool.c: the thread pool (see pool.h).
 *
 * A layer's work is cut into CHUNKS_PER_THREAD chunks per thread, which the threads (the caller
 * included) claim one at a time. Thread t owns the t-th share of them (chunk ranges follow the rows,
 * so its share is the same rows of every layer, and the next layer finds them in its own cache) and
 * takes them from the front; when its share is done it takes what is left of the others' from their
 * back: on a busy machine, where a thread may lose its core for a few milliseconds, the others take
 * over its share instead of waiting at the end of every layer. Each share's counters carry the job's
 * generation, so a thread that wakes late can never claim a chunk of a job that has moved on. A layer takes from tens of microseconds to a few milliseconds, so both
 * sides spin before sleeping on the condition variables: for SPIN_NS of the clock rather than a count
 * of pauses (a pause takes 10 cycles on some CPUs, 140 on others), long enough that within a CNN pass
 * a worker is never asleep when the next layer comes (waking a sleeping thread costs tens of
 * microseconds, more in a virtual machine, where the idle CPU halts), and that passes run back to
 * back (`attncap features`) find them awake; ac_pool_wake wakes them at the start of a pass, while the
 * caller is still copying its input. (Sending them to sleep at the end of every pass, so as not to
 * spin into the search, made each pass pay a wakeup: int8 at 224 on 2 threads, median 3.7-3.9 ms
 * against 2.9-3.0 without it, both with leave_callers_cpu below; one photo's caption was no faster
 * for it.) */
#include "pool.h"
#include "alloc_internal.h"

#include <cblas.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>
#include <time.h>

#define SPIN_NS 300000 /* 0.3 ms */
#define CHUNKS_PER_THREAD 4

struct ac_pool {
    int n, chunks; /* threads; the default number of chunks a job is cut into */
    pthread_t *th;
    pthread_mutex_t mu;
    pthread_cond_t start, done;
    /* generation << 32 | chunks << 16 of the current job */
    _Atomic uint64_t work;
    /* per thread: generation << 32 | front << 16 | back, the chunks [front, back) of its share still
     * unclaimed: one word, so a thread that read the last job's state can never claim a chunk of the
     * next one */
    struct share {
        _Alignas(64) _Atomic uint64_t w;
    } *share;
    atomic_int done_chunks, quit;
    atomic_int caller_cpu; /* the CPU the last job was published from (-1: unknown) */
    void (*fn)(void *, int, int);
    void *arg;
    /* ac_pool_beside's task, for the first worker free: SIDE_* below, set under mu (read without it in spins) */
    void (*side_fn)(void *);
    void *side_arg;
    atomic_int side;
    pthread_cond_t side_done;
};

enum { SIDE_NONE, SIDE_PENDING, SIDE_RUNNING, SIDE_DONE };

typedef struct worker_arg {
    ac_pool *p;
    int t;
} worker_arg;

static inline void cpu_relax(void) {
#if defined(__x86_64__) || defined(__i386__)
    __builtin_ia32_pause();
#endif
}

#define MAX_CHUNKS 0xffff

/* A chunk of job `gen` from share s: its front (own = 1) or its back; -1 if the share is empty or
 * the job has moved on. */
static int claim(ac_pool *p, int s, uint32_t gen, int own) {
    uint64_t v = atomic_load(&p->share[s].w), next;
    int c;
    do {
        const int front = (int)((v >> 16) & MAX_CHUNKS), back = (int)(v & MAX_CHUNKS);
        if ((uint32_t)(v >> 32) != gen || front >= back) return -1;
        c = own ? front : back - 1;
        next = own ? v + ((uint64_t)1 << 16) : v - 1;
    } while (!atomic_compare_exchange_weak(&p->share[s].w, &v, next));
    return c;
}

/* Runs chunks of job `gen` until none is left: thread t's own share first, then the others'. */
static void do_chunks(ac_pool *p, uint32_t gen, int t) {
    for (int k = 0; k < p->n; k++) {
        const int s = (t + k) % p->n;
        for (int c; (c = claim(p, s, gen, k == 0)) >= 0;) {
            /* the job cannot finish before this chunk does, so fn, arg and the count are still its own */
            const int n = (int)((atomic_load(&p->work) >> 16) & MAX_CHUNKS);
            p->fn(p->arg, c, n);
            if (atomic_fetch_add(&p->done_chunks, 1) + 1 == n) {
                pthread_mutex_lock(&p->mu);
                pthread_cond_signal(&p->done);
                pthread_mutex_unlock(&p->mu);
            }
        }
    }
}

static uint32_t cur_gen(ac_pool *p) { return (uint32_t)(atomic_load(&p->work) >> 32); }

static uint64_t now_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* Spins while busy(p, x) holds, up to SPIN_NS (the clock read every 64 pauses); 1 if it stopped holding. */
static int spin_while(ac_pool *p, int (*busy)(ac_pool *, uint64_t), uint64_t x) {
    uint64_t t0 = 0;
    for (unsigned i = 1; busy(p, x); i++) {
        cpu_relax();
        if (i % 64 == 0) {
            const uint64_t t = now_ns();
            if (!t0) t0 = t;
            else if (t - t0 > SPIN_NS) return 0;
        }
    }
    return 1;
}

/* The caller's waits: spin while busy(p, x), then sleep on cv (signalled under mu when it stops). */
static void wait_while(ac_pool *p, int (*busy)(ac_pool *, uint64_t), uint64_t x, pthread_cond_t *cv) {
    if (spin_while(p, busy, x)) return;
    pthread_mutex_lock(&p->mu);
    while (busy(p, x)) pthread_cond_wait(cv, &p->mu);
    pthread_mutex_unlock(&p->mu);
}

/* A worker's wait: no job after generation `seen` yet, no ac_pool_beside task waiting, and the pool
 * not quitting. */
static int no_job(ac_pool *p, uint64_t seen) {
    return cur_gen(p) == (uint32_t)seen && !atomic_load_explicit(&p->quit, memory_order_relaxed) &&
           atomic_load_explicit(&p->side, memory_order_relaxed) != SIDE_PENDING;
}

/* The beside task, if one is waiting: run here, outside the jobs' chunks (the other threads take this
 * worker's share meanwhile). */
static void run_side(ac_pool *p) {
    int pending = SIDE_PENDING;
    if (!atomic_compare_exchange_strong(&p->side, &pending, SIDE_RUNNING)) return;
    p->side_fn(p->side_arg);
    pthread_mutex_lock(&p->mu);
    atomic_store(&p->side, SIDE_DONE);
    pthread_cond_broadcast(&p->side_done);
    pthread_mutex_unlock(&p->mu);
}

/* The caller's wait: chunks of the job still running. */
static int chunks_running(ac_pool *p, uint64_t chunks) { return atomic_load(&p->done_chunks) < (int)chunks; }

/* A worker woken on the CPU its caller runs on would share that CPU with a caller spinning for the
 * worker's chunks, and the kernel's balancer takes milliseconds to part them. A virtual machine's
 * scheduler does this often: a halted vCPU counts as preempted, not idle, so the wakeup goes to the
 * waker's. Measured on a 2-vCPU VM (int8 MobileNetV2 at 224, 2 threads, passes 0.3 s apart): passes
 * of 2.7 ms took 8-9. So the worker moves itself: it leaves the caller's CPU out of its affinity (the
 * kernel migrates it at once), then restores the mask it had. Nothing happens when it is elsewhere or
 * has no other CPU. */
static void leave_callers_cpu(ac_pool *p) {
    const int c = atomic_load_explicit(&p->caller_cpu, memory_order_relaxed);
    if (c < 0 || c >= CPU_SETSIZE || sched_getcpu() != c) return;
    cpu_set_t mask, others;
    if (sched_getaffinity(0, sizeof mask, &mask) != 0) return;
    others = mask;
    CPU_CLR(c, &others);
    if (CPU_COUNT(&others) == 0 || sched_setaffinity(0, sizeof others, &others) != 0) return;
    sched_setaffinity(0, sizeof mask, &mask);
}

static void *worker(void *a) {
    worker_arg *wa = a;
    ac_pool *p = wa->p;
    const int t = wa->t;
    free(wa);
    uint32_t seen = 0;
    for (;;) {
        spin_while(p, no_job, seen);
        pthread_mutex_lock(&p->mu);
        while (cur_gen(p) == seen && !atomic_load(&p->quit) && atomic_load(&p->side) != SIDE_PENDING)
            pthread_cond_wait(&p->start, &p->mu);
        pthread_mutex_unlock(&p->mu);
        if (atomic_load(&p->quit)) return NULL;
        run_side(p); /* the first worker to see a beside task takes it; then on with whatever job is running */
        seen = cur_gen(p);
        leave_callers_cpu(p);
        do_chunks(p, seen, t);
    }
}

ac_pool *ac_pool_create(int n) {
    ac_pool *p = ac_calloc(1, sizeof *p);
    if (!p) return NULL;
    p->n = n < 1 ? 1 : n;
    pthread_mutex_init(&p->mu, NULL);
    pthread_cond_init(&p->start, NULL);
    pthread_cond_init(&p->done, NULL);
    atomic_init(&p->work, 0);
    atomic_init(&p->done_chunks, 0);
    atomic_init(&p->quit, 0);
    atomic_init(&p->caller_cpu, -1);
    atomic_init(&p->side, SIDE_NONE);
    pthread_cond_init(&p->side_done, NULL);
    if (p->n > 1) {
        p->th = ac_calloc((size_t)p->n, sizeof *p->th);
        p->share = ac_aligned_alloc(64, (size_t)p->n * sizeof *p->share);
        if (!p->th || !p->share) p->n = 1;
        for (int t = 0; p->share && t < p->n; t++) atomic_init(&p->share[t].w, 0);
        for (int t = 1; t < p->n; t++) {
            worker_arg *wa = ac_malloc(sizeof *wa);
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

/* Makes job `chunks` (0: none, only a wake-up) the current one and wakes the sleeping workers; its
 * generation. Under the mutex: a worker about to sleep cannot miss it. */
static uint32_t publish(ac_pool *p, int chunks) {
    pthread_mutex_lock(&p->mu);
    const uint32_t gen = cur_gen(p) + 1;
    atomic_store_explicit(&p->caller_cpu, sched_getcpu(), memory_order_relaxed);
    for (int t = 0; t < p->n; t++) /* the shares first: a worker seeing the new generation finds them */
        atomic_store(&p->share[t].w, (uint64_t)gen << 32 | (uint64_t)(chunks * t / p->n) << 16 | (uint64_t)(chunks * (t + 1) / p->n));
    atomic_store(&p->work, (uint64_t)gen << 32 | (uint64_t)chunks << 16);
    pthread_cond_broadcast(&p->start);
    pthread_mutex_unlock(&p->mu);
    return gen;
}

void ac_pool_wake(ac_pool *p) {
    if (p && p->n > 1) publish(p, 0);
}

void ac_pool_run(ac_pool *p, void (*fn)(void *, int, int), void *arg) {
    ac_pool_run_n(p, fn, arg, ac_pool_chunks(p));
}

void ac_pool_run_n(ac_pool *p, void (*fn)(void *, int, int), void *arg, int chunks) {
    if (!p || p->n == 1 || chunks <= 1) {
        fn(arg, 0, 1);
        return;
    }
    if (chunks > MAX_CHUNKS) chunks = MAX_CHUNKS;
    p->fn = fn;
    p->arg = arg;
    atomic_store(&p->done_chunks, 0);
    const uint32_t gen = publish(p, chunks);
    do_chunks(p, gen, 0);
    wait_while(p, chunks_running, (uint64_t)chunks, &p->done);
}

void ac_pool_beside(ac_pool *p, void (*fn)(void *), void *arg) {
    if (!p || p->n == 1) {
        fn(arg);
        return;
    }
    pthread_mutex_lock(&p->mu);
    p->side_fn = fn, p->side_arg = arg;
    atomic_store(&p->side, SIDE_PENDING);
    pthread_cond_broadcast(&p->start);
    pthread_mutex_unlock(&p->mu);
}

static int side_running(ac_pool *p, uint64_t unused) {
    (void)unused;
    return atomic_load(&p->side) != SIDE_DONE;
}

void ac_pool_beside_wait(ac_pool *p) {
    if (!p || p->n == 1) return;
    if (atomic_load(&p->side) == SIDE_NONE) return;
    wait_while(p, side_running, 0, &p->side_done);
    atomic_store(&p->side, SIDE_NONE);
}

int ac_pool_chunks(const ac_pool *p) { return !p || p->n == 1 ? 1 : p->chunks; }

int ac_pool_threads(const ac_pool *p) { return p ? p->n : 1; }

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
    pthread_cond_destroy(&p->side_done);
    free(p->th);
    free(p->share);
    free(p);
}

/* ---- fork/join ---- */

/* OpenBLAS's thread count is a process-wide setting, so the guard is too: the first concurrent
 * ac_parallel_for makes BLAS single-threaded, the last one to end restores what it found. This is
 * the library's one piece of mutable global state, and it mirrors OpenBLAS's own. */
static pthread_mutex_t blas_guard_mu = PTHREAD_MUTEX_INITIALIZER;
static int blas_guard_users, blas_guard_saved;

static void blas_guard_enter(void) {
    pthread_mutex_lock(&blas_guard_mu);
    if (blas_guard_users++ == 0) {
        blas_guard_saved = openblas_get_num_threads();
        if (blas_guard_saved != 1) openblas_set_num_threads(1);
    }
    pthread_mutex_unlock(&blas_guard_mu);
}

static void blas_guard_leave(void) {
    pthread_mutex_lock(&blas_guard_mu);
    if (--blas_guard_users == 0 && blas_guard_saved != 1) openblas_set_num_threads(blas_guard_saved);
    pthread_mutex_unlock(&blas_guard_mu);
}

#define MAX_FORK 64

typedef struct fork_job {
    int n_tasks;
    ac_task_fn fn;
    void *arg;
    atomic_int next;
    /* ac_parallel_all: the threads wait at the gate until all are started (go = 1) or one failed
     * (go = -1, they return without running) */
    int all, go;
    pthread_mutex_t mu;
    pthread_cond_t gate;
} fork_job;

typedef struct fork_thread {
    fork_job *job;
    int thread;
} fork_thread;

static void *fork_run(void *a) {
    const fork_thread *ft = a;
    fork_job *j = ft->job;
    if (j->all) {
        pthread_mutex_lock(&j->mu);
        while (!j->go) pthread_cond_wait(&j->gate, &j->mu);
        const int go = j->go;
        pthread_mutex_unlock(&j->mu);
        if (go > 0) j->fn(j->arg, ft->thread, ft->thread);
        return NULL;
    }
    for (int t; (t = atomic_fetch_add(&j->next, 1)) < j->n_tasks;) j->fn(j->arg, t, ft->thread);
    return NULL;
}

/* Starts threads 1..T-1 on job j; returns how many started (thread 0, the caller, included). */
static int fork_start(fork_job *j, int T, pthread_t *th, fork_thread *ft) {
    int started = 1;
    for (int t = 1; t < T; t++) {
        ft[t] = (fork_thread){j, t};
        if (pthread_create(&th[t], NULL, fork_run, &ft[t]) != 0) break;
        started++;
    }
    return started;
}

void ac_parallel_for(int n_tasks, int threads, ac_task_fn fn, void *arg) {
    if (n_tasks <= 0) return;
    int T = threads < 1 ? 1 : threads;
    if (T > n_tasks) T = n_tasks;
    if (T > MAX_FORK) T = MAX_FORK;
    if (T == 1) {
        for (int t = 0; t < n_tasks; t++) fn(arg, t, 0);
        return;
    }
    fork_job j = {.n_tasks = n_tasks, .fn = fn, .arg = arg};
    atomic_init(&j.next, 0);
    pthread_t th[MAX_FORK];
    fork_thread ft[MAX_FORK];
    blas_guard_enter();
    const int started = fork_start(&j, T, th, ft);
    ft[0] = (fork_thread){&j, 0};
    fork_run(&ft[0]);
    for (int t = 1; t < started; t++) pthread_join(th[t], NULL);
    blas_guard_leave();
}

int ac_parallel_all(int n_tasks, ac_task_fn fn, void *arg) {
    if (n_tasks <= 0) return 0;
    if (n_tasks > MAX_FORK) return -1;
    if (n_tasks == 1) {
        fn(arg, 0, 0);
        return 0;
    }
    fork_job j = {.n_tasks = n_tasks, .fn = fn, .arg = arg, .all = 1};
    atomic_init(&j.next, 0);
    pthread_mutex_init(&j.mu, NULL);
    pthread_cond_init(&j.gate, NULL);
    pthread_t th[MAX_FORK];
    fork_thread ft[MAX_FORK];
    const int started = fork_start(&j, n_tasks, th, ft);
    pthread_mutex_lock(&j.mu);
    j.go = started == n_tasks ? 1 : -1;
    pthread_cond_broadcast(&j.gate);
    pthread_mutex_unlock(&j.mu);
    if (j.go > 0) fn(arg, 0, 0);
    for (int t = 1; t < started; t++) pthread_join(th[t], NULL);
    pthread_mutex_destroy(&j.mu);
    pthread_cond_destroy(&j.gate);
    return j.go > 0 ? 0 : -1;
}
