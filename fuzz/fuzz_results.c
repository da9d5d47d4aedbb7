/* fuzz/fuzz_results.c: libFuzzer target for the readers of `eval`: the first byte picks (odd/even)
 * the results reader (COCO-format results JSON, scored against a fixed small COCO captions file with
 * ids 1, 2, 42 and file names a.jpg, b.jpg, c.jpg) or the --pairs reader; whatever loads is scored
 * (BLEU, ROUGE-L, CIDEr-D; not METEOR, whose WordNet load would dominate) and must give finite
 * scores. Seeds: fuzz/corpus/results. Replayed by tests/test_fuzz_regress.c. */
#include "fuzz_main.h"
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "attncap/metrics.h"

static char fuzz_results_dir[4096];

static int fuzz_results(const uint8_t *data, size_t size) {
    if (size < 1) return 0;
    char refs[4200], path[4200];
    if (!fuzz_results_dir[0]) {
        snprintf(fuzz_results_dir, sizeof fuzz_results_dir, "%s/fuzz-results-XXXXXX", getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp");
        if (!mkdtemp(fuzz_results_dir)) abort();
        snprintf(refs, sizeof refs, "%s/refs.json", fuzz_results_dir);
        FILE *f = fopen(refs, "wb");
        if (!f) abort();
        fputs("{\"images\": [{\"id\": 1, \"file_name\": \"a.jpg\"}, {\"id\": 2, \"file_name\": \"b.jpg\"},"
              " {\"id\": 42, \"file_name\": \"c.jpg\"}], \"annotations\": ["
              "{\"image_id\": 1, \"caption\": \"A dog runs on the grass.\"},"
              "{\"image_id\": 1, \"caption\": \"a brown dog running\"},"
              "{\"image_id\": 2, \"caption\": \"Two people sit on a bench, reading.\"},"
              "{\"image_id\": 42, \"caption\": \"a cat\"}]}", f);
        fclose(f);
    }
    snprintf(refs, sizeof refs, "%s/refs.json", fuzz_results_dir);
    snprintf(path, sizeof path, "%s/results.json", fuzz_results_dir);
    FILE *f = fopen(path, "wb");
    if (!f) abort();
    fwrite(data + 1, 1, size - 1, f);
    fclose(f);
    ac_eval_set s;
    ac_err err;
    int rc = data[0] & 1 ? ac_eval_load_pairs(path, &s, &err) : ac_eval_load_results(refs, path, &s, NULL, &err);
    if (rc != 0) {
        if (strchr(err.msg, '\n')) abort();
        return 0;
    }
    ac_scores sc;
    if (ac_metrics_compute(&s, 0, NULL, &sc, &err) == 0) {
        if (sc.n != s.n || !isfinite(sc.cider_d) || !isfinite(sc.rouge_l)) abort();
        for (int k = 0; k < 4; k++)
            if (!(sc.bleu[k] >= 0 && sc.bleu[k] <= 1 + 1e-9)) abort();
        char *js = ac_scores_to_json(&sc);
        free(js);
        ac_scores_free(&sc);
    } else if (strchr(err.msg, '\n')) {
        abort();
    }
    ac_eval_set_free(&s);
    return 0;
}

AC_FUZZ_MAIN(fuzz_results, "ATTNCAP_MAX_FILE_BYTES", "1000000")
