/* tests/test.h: a tiny test harness. Each tests/test_*.c is one binary; main() calls RUN(fn) for
 * each test and returns TEST_EXIT(). Output per test: "ok NAME", "FAIL NAME: why", "skip NAME: why";
 * last line "# passed P failed F skipped S" which tests/run.sh sums. */
#ifndef ATTNCAP_TEST_H
#define ATTNCAP_TEST_H
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int t_passed, t_failed, t_skipped, t_cur_failed, t_cur_skipped;
static const char *t_cur_name;

#define CHECK(cond)                                                                   \
    do {                                                                              \
        if (!(cond)) {                                                                \
            printf("FAIL %s: %s:%d: %s\n", t_cur_name, __FILE__, __LINE__, #cond);    \
            t_cur_failed = 1;                                                         \
            return;                                                                   \
        }                                                                             \
    } while (0)

#define CHECKF(cond, ...)                                                             \
    do {                                                                              \
        if (!(cond)) {                                                                \
            printf("FAIL %s: %s:%d: ", t_cur_name, __FILE__, __LINE__);               \
            printf(__VA_ARGS__);                                                      \
            printf("\n");                                                             \
            t_cur_failed = 1;                                                         \
            return;                                                                   \
        }                                                                             \
    } while (0)

#define CHECK_NEAR(a, b, tol)                                                          \
    do {                                                                               \
        double t_a = (double)(a), t_b = (double)(b);                                   \
        if (!(fabs(t_a - t_b) <= (tol))) {                                             \
            printf("FAIL %s: %s:%d: %s = %.9g, %s = %.9g, tolerance %g\n", t_cur_name, \
                   __FILE__, __LINE__, #a, t_a, #b, t_b, (double)(tol));               \
            t_cur_failed = 1;                                                          \
            return;                                                                    \
        }                                                                              \
    } while (0)

#define SKIP(...)                                             \
    do {                                                      \
        printf("skip %s: ", t_cur_name);                      \
        printf(__VA_ARGS__);                                  \
        printf("\n");                                         \
        t_cur_skipped = 1;                                    \
        return;                                               \
    } while (0)

#define RUN(fn)                                                \
    do {                                                       \
        t_cur_name = #fn;                                      \
        t_cur_failed = t_cur_skipped = 0;                      \
        fn();                                                  \
        if (t_cur_failed) t_failed++;                          \
        else if (t_cur_skipped) t_skipped++;                   \
        else { t_passed++; printf("ok %s\n", #fn); }           \
        fflush(stdout);                                        \
    } while (0)

#define TEST_EXIT()                                                                      \
    (printf("# passed %d failed %d skipped %d\n", t_passed, t_failed, t_skipped), \
     t_failed ? 1 : 0)

/* The shared data dir for tests ($ATTNCAP_DATA, set by tests/run.sh), or NULL. */
static inline const char *test_data_dir(void) {
    const char *d = getenv("ATTNCAP_DATA");
    return d && *d ? d : NULL;
}

/* Path to a file under the shared data dir in a static buffer, or NULL if it does not exist. */
static inline const char *test_shared(const char *rel) {
    static char buf[8][4096];
    static int slot;
    const char *d = test_data_dir();
    if (!d) return NULL;
    char *b = buf[slot++ % 8];
    snprintf(b, 4096, "%s/%s", d, rel);
    FILE *f = fopen(b, "rb");
    if (!f) return NULL;
    fclose(f);
    return b;
}

/* Path to REL in the repo ($ATTNCAP_ROOT, set by tests/run.sh, else "."), in one of 8 static buffers
 * (so a few can be alive at once): samples/dog.jpg, models/... */
static inline const char *test_repo_path(const char *rel) {
    static char buf[8][4096];
    static int slot;
    const char *root = getenv("ATTNCAP_ROOT");
    char *b = buf[slot++ % 8];
    snprintf(b, 4096, "%s/%s", root && *root ? root : ".", rel);
    return b;
}

/* Path to tests/fixtures/REL in the repo, as test_repo_path's. */
static inline const char *test_fixture(const char *rel) {
    char r[2048]; /* a fixture's name is short; the root may be long */
    snprintf(r, sizeof r, "tests/fixtures/%s", rel);
    return test_repo_path(r);
}

/* Scratch dir for a test binary (created by tests/run.sh, removed after). */
static inline const char *test_tmpdir(void) {
    const char *d = getenv("ATTNCAP_TEST_TMP");
    return d && *d ? d : "/tmp";
}
/* n deterministic pseudo-random annotation values in [0, 2) (the decoder tests' photos): the same seed,
 * the same values. */
static inline void fill_ann(float *a, int n, unsigned seed) {
    for (int i = 0; i < n; i++) a[i] = (float)((((i * 2654435761u + seed * 40503u) >> 8) % 1000) / 1000.0 * 2.0);
}

#endif
