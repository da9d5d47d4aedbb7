/* bench_eval: time of each phase of scoring the 4,982-image golden case (../shared/metrics):
 * JSON parsing, PTB tokenization of 29,902 captions, BLEU, ROUGE-L, CIDEr-D, METEOR. Best of 3,
 * process CPU time (wall time is noisy on a shared machine) and wall time. */
#include <cjson/cJSON.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "attncap/metrics.h"

static double cpu(void) { return (double)clock() / CLOCKS_PER_SEC; }

int main(void) {
    const char *d = getenv("ATTNCAP_DATA");
    char path[4096];
    snprintf(path, sizeof path, "%s/metrics/magic_mscoco_result.json", d && *d ? d : "../shared");
    char *txt;
    size_t len;
    ac_err e;
    if (ac_read_file(path, 1u << 30, &txt, &len, &e)) {
        printf("skip: %s\n", e.msg);
        return 0;
    }
    const char *names[6] = {"JSON parse", "tokenize (PTB)", "BLEU-1..4", "ROUGE-L", "CIDEr-D", "METEOR"};
    double best_cpu[6], best_wall[6];
    for (int k = 0; k < 6; k++) best_cpu[k] = best_wall[k] = 1e30;
    for (int rep = 0; rep < 3; rep++) {
        double c[7], w[7];
        c[0] = cpu(), w[0] = ac_now();
        cJSON *j = cJSON_Parse(txt);
        c[1] = cpu(), w[1] = ac_now();
        ac_eval_set s = {0};
        cJSON *it;
        cJSON_ArrayForEach(it, j) {
            const char *refs[64];
            int n = 0;
            cJSON *r;
            cJSON_ArrayForEach(r, cJSON_GetObjectItem(it, "captions")) if (n < 64) refs[n++] = r->valuestring;
            if (ac_eval_set_add(&s, NULL, refs, n, cJSON_GetObjectItem(it, "prediction")->valuestring, 1, &e)) {
                printf("error: %s\n", e.msg);
                return 1;
            }
        }
        cJSON_Delete(j);
        c[2] = cpu(), w[2] = ac_now();
        double b[4], mean;
        ac_bleu_counts bc;
        ac_bleu(s.items, s.n, b, &bc, NULL);
        c[3] = cpu(), w[3] = ac_now();
        for (int i = 0; i < s.n; i++) ac_rouge_l(s.items[i].cand, s.items[i].refs, s.items[i].n_refs);
        c[4] = cpu(), w[4] = ac_now();
        ac_cider_d(s.items, s.n, &mean, NULL);
        c[5] = cpu(), w[5] = ac_now();
        ac_scores sc;
        int ok = ac_metrics_compute(&s, AC_METRICS_METEOR, NULL, &sc, &e) == 0;
        c[6] = cpu(), w[6] = ac_now();
        if (ok) { /* ac_metrics_compute also reran BLEU, ROUGE, CIDEr: subtract them */
            c[6] -= c[5] - c[2];
            w[6] -= w[5] - w[2];
            ac_scores_free(&sc);
        }
        for (int k = 0; k < 6; k++) {
            if (c[k + 1] - c[k] < best_cpu[k]) best_cpu[k] = c[k + 1] - c[k];
            if (w[k + 1] - w[k] < best_wall[k]) best_wall[k] = w[k + 1] - w[k];
        }
        ac_eval_set_free(&s);
    }
    free(txt);
    double tc = 0, tw = 0;
    for (int k = 0; k < 6; k++) {
        printf("%-16s cpu %7.3f s   wall %7.3f s\n", names[k], best_cpu[k], best_wall[k]);
        tc += best_cpu[k], tw += best_wall[k];
    }
    printf("%-16s cpu %7.3f s   wall %7.3f s   (4,982 images; coco-caption has no peer installed here)\n", "total", tc, tw);
    return 0;
}
