/* test_library_io: what moved out of the CLI into the library, against hand-written expectations:
 * the overlay folder names of a batch (ac_overlay_stems) and the COCO results file
 * (ac_eval_write_results, read back by ac_eval_load_results). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "attncap/metrics.h"
#include "attncap/overlay.h"
#include "test.h"

static void overlay_stems(void) {
    /* same names in other folders, a name that looks like a numbered repeat, no extension, a dot file */
    const char *paths[] = {"a/dog.jpg", "b/dog.png", "dog-2.jpg", "c/dog.JPG", "cat", ".hidden.jpg", "x/cat.gif"};
    const char *want[] = {"dog", "dog-2", "dog-2-2", "dog-3", "cat", ".hidden", "cat-2"};
    enum { N = sizeof paths / sizeof *paths };
    char *stems[N];
    ac_err err;
    CHECKF(ac_overlay_stems(paths, N, stems, &err) == 0, "%s", err.msg);
    for (int i = 0; i < N; i++) {
        CHECKF(!strcmp(stems[i], want[i]), "%s: got %s, want %s", paths[i], stems[i], want[i]);
        free(stems[i]);
    }
    /* many photos of one name: each gets its own number (the table grows past its first size) */
    enum { M = 300 };
    const char *same[M];
    char *many[M];
    for (int i = 0; i < M; i++) same[i] = "p/x.jpg";
    CHECK(ac_overlay_stems(same, M, many, &err) == 0);
    CHECK(!strcmp(many[0], "x") && !strcmp(many[1], "x-2") && !strcmp(many[M - 1], "x-300"));
    for (int i = 0; i < M; i++) free(many[i]);
}

static void results_file(void) {
    const char *t = getenv("ATTNCAP_TEST_TMP");
    char path[4096], refs[4096];
    snprintf(path, sizeof path, "%s/results_%d.json", t && *t ? t : "/tmp", (int)getpid());
    snprintf(refs, sizeof refs, "%s/refs_%d.tsv", t && *t ? t : "/tmp", (int)getpid());
    ac_eval_set s = {0};
    ac_err err;
    const char *r1[] = {"a dog"}, *r2[] = {"a cat"};
    CHECK(ac_eval_set_add(&s, "42", r1, 1, "A dog \"runs\"", 1, &err) == 0);
    CHECK(ac_eval_set_add(&s, "cat.jpg", r2, 1, "a cat", 1, &err) == 0);
    CHECKF(ac_eval_write_results(path, &s, "models/m.safetensors", &err) == 0, "%s", err.msg);
    /* numeric ids as numbers, others as strings; the candidates as scored (tokenized: no quotes); the
     * model's file name */
    const char *want = "[\n  {\"image_id\":42,\"caption\":\"a dog runs\",\"model\":\"m.safetensors\"},\n"
                       "  {\"image_id\":\"cat.jpg\",\"caption\":\"a cat\",\"model\":\"m.safetensors\"}\n]\n";
    char buf[512] = {0};
    FILE *f = fopen(path, "r");
    size_t n = f ? fread(buf, 1, sizeof buf - 1, f) : 0;
    if (f) fclose(f);
    CHECKF(n == strlen(want) && !strcmp(buf, want), "got:\n%s", buf);
    ac_eval_set_free(&s);
    /* and it reads back as a results file */
    f = fopen(refs, "w");
    if (f) fputs("42\ta dog\ncat.jpg\ta cat\n", f), fclose(f);
    ac_eval_set back = {0};
    CHECKF(ac_eval_load_results(refs, path, &back, NULL, &err) == 0 && back.n == 2, "%s", err.msg);
    if (back.n == 2) CHECK(!strcmp(back.items[0].cand, "a dog runs") && !strcmp(back.items[1].id, "cat.jpg"));
    ac_eval_set_free(&back);
    remove(path), remove(refs);
}

int main(void) {
    RUN(overlay_stems);
    RUN(results_file);
    return TEST_EXIT();
}
