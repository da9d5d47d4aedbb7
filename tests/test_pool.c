/* test_pool: the CNN's thread pool (src/base/pool.c) runs every chunk of every job exactly once, with the
 * chunk count each job asked for, when consecutive jobs ask for different counts (the fused
 * convolutions' ac_pool_run_n between the default jobs). Checked against a count kept by the chunks
 * themselves, over many short jobs, where a worker that read one job's state and claims a chunk as
 * the next one is published is most likely. And ac_pool_beside: its task runs once, on a worker, while
 * the caller's jobs go on without that worker (a task that waits for them to finish would otherwise
 * never end), and the worker serves jobs again afterwards. And a worker woken on the caller's CPU
 * moves off it, leaving its affinity as it was. */
#include <dirent.h>
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <string.h>
#include <stdatomic.h>
#include <time.h>

#include "pool.h"
#include "test.h"

enum { MAX_N = 40, JOBS = 100000 };

typedef struct job {
    atomic_int ran[MAX_N];
    atomic_int bad_n;
    int n;
} job;

static void count_chunk(void *arg, int t, int n) {
    job *j = arg;
    if (n != j->n || t < 0 || t >= n) atomic_fetch_add(&j->bad_n, 1);
    else atomic_fetch_add(&j->ran[t], 1);
}

static void test_chunks_once(void) {
    for (int threads = 2; threads <= 3; threads++) {
        ac_pool *p = ac_pool_create(threads);
        CHECK(p != NULL);
        static job jobs[2];
        for (int k = 0; k < JOBS; k++) {
            job *j = &jobs[k & 1]; /* reused every other job, as the CNN's jobs reuse their arguments */
            const int use_default = k % 3 == 0;
            j->n = use_default ? ac_pool_chunks(p) : 1 + (k * 7) % (MAX_N - 1);
            for (int t = 0; t < MAX_N; t++) atomic_store(&j->ran[t], 0);
            atomic_store(&j->bad_n, 0);
            if (use_default) ac_pool_run(p, count_chunk, j);
            else ac_pool_run_n(p, count_chunk, j, j->n);
            CHECKF(atomic_load(&j->bad_n) == 0, "%d threads, job %d: a chunk ran with another job's count", threads, k);
            for (int t = 0; t < MAX_N; t++)
                CHECKF(atomic_load(&j->ran[t]) == (t < j->n), "%d threads, job %d of %d chunks: chunk %d ran %d times",
                       threads, k, j->n, t, atomic_load(&j->ran[t]));
        }
        ac_pool_free(p);
    }
}

typedef struct side {
    atomic_int release, ran, timed_out;
    pthread_t caller, on;
} side;

/* Waits (up to 20 s) for the caller to release it: the caller's jobs must finish meanwhile. */
static void side_task(void *arg) {
    side *s = arg;
    s->on = pthread_self();
    struct timespec t0, t;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    while (!atomic_load(&s->release)) {
        clock_gettime(CLOCK_MONOTONIC, &t);
        if (t.tv_sec - t0.tv_sec > 20) {
            atomic_store(&s->timed_out, 1);
            break;
        }
    }
    atomic_fetch_add(&s->ran, 1);
}

static void run_counted(ac_pool *p, job *j, int n, int threads, int k) {
    j->n = n;
    for (int t = 0; t < MAX_N; t++) atomic_store(&j->ran[t], 0);
    atomic_store(&j->bad_n, 0);
    ac_pool_run_n(p, count_chunk, j, n);
    int bad = atomic_load(&j->bad_n);
    for (int t = 0; t < MAX_N; t++) bad += atomic_load(&j->ran[t]) != (t < n);
    CHECKF(!bad, "%d threads, job %d beside a task: %d chunks ran wrongly", threads, k, bad);
}

static void test_beside(void) {
    static job j;
    for (int threads = 2; threads <= 3; threads++) {
        ac_pool *p = ac_pool_create(threads);
        for (int round = 0; round < 200; round++) {
            side s = {.caller = pthread_self()};
            ac_pool_beside(p, side_task, &s);
            for (int k = 0; k < 50; k++) run_counted(p, &j, 1 + (k * 7 + round) % (MAX_N - 1), threads, k);
            atomic_store(&s.release, 1);
            ac_pool_beside_wait(p);
            CHECKF(atomic_load(&s.ran) == 1 && !atomic_load(&s.timed_out), "%d threads, round %d: ran %d times%s",
                   threads, round, atomic_load(&s.ran), atomic_load(&s.timed_out) ? ", waited for the jobs in vain" : "");
            CHECKF(!pthread_equal(s.on, s.caller), "%d threads: the task ran on the caller's thread", threads);
            for (int k = 0; k < 5; k++) run_counted(p, &j, ac_pool_chunks(p), threads, k);
        }
        ac_pool_free(p);
    }
    /* no worker: the task runs at once in the caller */
    ac_pool *p = ac_pool_create(1);
    side s = {.caller = pthread_self(), .release = 1};
    ac_pool_beside(p, side_task, &s);
    CHECK(atomic_load(&s.ran) == 1 && pthread_equal(s.on, s.caller));
    ac_pool_beside_wait(p);
    ac_pool_free(p);
}

/* A chunk that takes ~50 us and says on which CPU a worker ran it. */
typedef struct placed {
    pthread_t caller;
    int caller_cpu;
    atomic_int on_worker, on_callers_cpu;
} placed;

static void placed_chunk(void *arg, int t, int n) {
    (void)t, (void)n;
    placed *pl = arg;
    const struct timespec d = {0, 50000};
    nanosleep(&d, NULL);
    if (pthread_equal(pthread_self(), pl->caller)) return;
    atomic_fetch_add(&pl->on_worker, 1);
    if (sched_getcpu() == pl->caller_cpu) atomic_fetch_add(&pl->on_callers_cpu, 1);
}

/* Every thread's allowed CPUs, as /proc lists them, equal to `want` (the pool's workers included). */
static int all_threads_allowed(const char *want) {
    DIR *d = opendir("/proc/self/task");
    if (!d) return 1;
    int ok = 1;
    for (struct dirent *e; (e = readdir(d));) {
        if (e->d_name[0] == '.') continue;
        char path[300], line[512];
        snprintf(path, sizeof path, "/proc/self/task/%s/status", e->d_name);
        FILE *f = fopen(path, "r");
        while (f && fgets(line, sizeof line, f))
            if (!strncmp(line, "Cpus_allowed_list:", 18) && strcmp(line + 18 + strspn(line + 18, " \t"), want)) ok = 0;
        if (f) fclose(f);
    }
    closedir(d);
    return ok;
}

static void test_leaves_callers_cpu(void) {
    cpu_set_t all, one;
    CHECK(sched_getaffinity(0, sizeof all, &all) == 0);
    if (CPU_COUNT(&all) < 2) {
        printf("skip test_leaves_callers_cpu: one CPU allowed\n");
        return;
    }
    char want[512] = "";
    FILE *f = fopen("/proc/self/status", "r");
    for (char line[512]; f && fgets(line, sizeof line, f);)
        if (!strncmp(line, "Cpus_allowed_list:", 18)) snprintf(want, sizeof want, "%s", line + 18 + strspn(line + 18, " \t"));
    if (f) fclose(f);
    ac_pool *p = ac_pool_create(2); /* its worker may run anywhere */
    int c0 = 0;
    while (!CPU_ISSET(c0, &all)) c0++;
    CPU_ZERO(&one);
    CPU_SET(c0, &one);
    CHECK(sched_setaffinity(0, sizeof one, &one) == 0); /* the caller, on c0 only */
    placed pl = {.caller = pthread_self(), .caller_cpu = c0};
    for (int k = 0; k < 300; k++) {
        ac_pool_run_n(p, placed_chunk, &pl, 8);
        const struct timespec idle = {0, 1000000}; /* past the spin: the worker sleeps, and is woken */
        nanosleep(&idle, NULL);
    }
    sched_setaffinity(0, sizeof all, &all);
    /* Without the move, on a 2-vCPU VM: 65-78 % of the worker's chunks ran on the caller's CPU. With it,
     * none should (the worker moves before its first chunk); a quarter leaves room for a busy machine. */
    const int w = atomic_load(&pl.on_worker), there = atomic_load(&pl.on_callers_cpu);
    CHECKF(w > 0 && there * 4 <= w, "the worker ran %d of its %d chunks on the caller's CPU", there, w);
    CHECKF(all_threads_allowed(want), "a thread's allowed CPUs are no longer %.*s", (int)strcspn(want, "\n"), want);
    ac_pool_free(p);
}

int main(void) {
    RUN(test_chunks_once);
    RUN(test_beside);
    RUN(test_leaves_callers_cpu);
    return TEST_EXIT();
}
