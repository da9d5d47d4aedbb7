/* test_pool: the CNN's thread pool (src/base/pool.c) runs every chunk of every job exactly once, with the
 * chunk count each job asked for, when consecutive jobs ask for different counts (the fused
 * convolutions' ac_pool_run_n between the default jobs). Checked against a count kept by the chunks
 * themselves, over many short jobs, where a worker that read one job's state and claims a chunk as
 * the next one is published is most likely. */
#include <stdatomic.h>

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

int main(void) {
    RUN(test_chunks_once);
    return TEST_EXIT();
}
