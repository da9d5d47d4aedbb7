/* bench/bench_meteor.c: METEOR 1.5 (ours, in C) on the golden set ../shared/metrics/magic_mscoco_result.json
 * (4,982 images, 5 references each): WordNet loading, then corpus scoring with and without synonym
 * matching (best of 3 runs each). The peer, coco-caption's `java -jar meteor-1.5.jar -stdio`, is not
 * available here (no Java, no METEOR jar); coco-caption's own run of it takes tens of seconds. */
#include <cjson/cJSON.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "attncap/meteor.h"
#include "attncap/tokenize.h"

static char *tok(const char *text) {
    ac_tokens t;
    ac_err err;
    if (ac_tokenize(text, &t, &err)) return strdup("");
    char *s = ac_tokens_join(&t);
    ac_tokens_free(&t);
    return s ? s : strdup("");
}

int main(void) {
    const char *dir = getenv("ATTNCAP_DATA");
    char path[4096];
    snprintf(path, sizeof path, "%s/metrics/magic_mscoco_result.json", dir ? dir : "../shared");
    char *data;
    size_t len;
    ac_err err;
    if (ac_read_file(path, (size_t)1 << 30, &data, &len, &err)) {
        printf("skip: %s\n", err.msg);
        return 0;
    }
    cJSON *root = cJSON_Parse(data);
    free(data);
    int n = cJSON_GetArraySize(root);
    char **cands = calloc((size_t)n, sizeof *cands);
    char ***refs = calloc((size_t)n, sizeof *refs);
    int *nr = calloc((size_t)n, sizeof *nr);
    int i = 0;
    for (cJSON *e = root ? root->child : NULL; e && i < n; e = e->next, i++) {
        cJSON *caps = cJSON_GetObjectItem(e, "captions"), *pred = cJSON_GetObjectItem(e, "prediction");
        cands[i] = tok(cJSON_IsString(pred) ? pred->valuestring : "");
        nr[i] = cJSON_GetArraySize(caps);
        refs[i] = calloc((size_t)nr[i] + 1, sizeof(char *));
        int r = 0;
        for (cJSON *c = caps ? caps->child : NULL; c && r < nr[i]; c = c->next, r++)
            refs[i][r] = tok(cJSON_IsString(c) ? c->valuestring : "");
    }
    cJSON_Delete(root);
    double t0 = ac_now();
    ac_meteor *m;
    if (ac_meteor_open(NULL, &m, &err)) {
        printf("error: %s\n", err.msg);
        return 1;
    }
    double t_load = ac_now() - t0;
    for (int syn = 1; syn >= 0; syn--) {
        if (syn && !ac_meteor_has_synonyms(m)) continue;
        ac_meteor_set_synonyms(m, syn);
        double best = 1e9, s = 0;
        for (int rep = 0; rep < 3; rep++) {
            double a = ac_now();
            s = ac_meteor_corpus(m, n, (const char *const *)cands, (const char *const *const *)refs, nr, NULL);
            double b = ac_now() - a;
            if (b < best) best = b;
        }
        printf("meteor %s synonyms: %d images in %.3f s (%.1f us/image), METEOR %.4f (coco-caption 0.174)\n",
               syn ? "with" : "without", n, best, 1e6 * best / n, s);
    }
    printf("meteor WordNet + stemmer load: %.3f s\n", t_load);
    ac_meteor_close(m);
    for (i = 0; i < n; i++) {
        for (int r = 0; r < nr[i]; r++) free(refs[i][r]);
        free(refs[i]);
        free(cands[i]);
    }
    free(refs);
    free(cands);
    free(nr);
    return 0;
}
