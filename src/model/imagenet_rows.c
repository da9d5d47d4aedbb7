/* imagenet_rows.c: a feature cache's rows given their ImageNet words' regions (imagenet_words.h
 * ac_imagenet_words_add_to_rows), as the captioner gives a photo them (captioner_regions.c). */
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "attncap/imagenet_words.h"
#include "pool.h"
#include "alloc_internal.h"

#define MAX_THREADS 16

typedef struct rows_job {
    const ac_imagenet_words *w;
    const ac_feature_cache *fc;
    const ac_class_head *head;
    ac_rows_regions *rr;
    ac_grid_window win[AC_NAMING_WINDOWS]; /* at the cache's grid */
    int n_win, max;
    float min_score;
    float *scratch[MAX_THREADS]; /* per thread: a row, then its probabilities */
    atomic_int failed;
    ac_err err;
} rows_job;

static void add_row(void *arg, int row, int thread) {
    rows_job *j = arg;
    if (atomic_load(&j->failed)) return;
    const ac_feature_cache *fc = j->fc;
    const size_t L = (size_t)fc->grid_h * fc->grid_w;
    float *buf = j->scratch[thread], *probs = buf + L * fc->dim;
    int gh, gw;
    ac_features_grid(fc, row, &gh, &gw);
    ac_grid_window win[AC_NAMING_WINDOWS];
    memcpy(win, j->win, sizeof win);
    if (gh != fc->grid_h || gw != fc->grid_w) ac_grid_windows_fit(win, j->n_win, gh, gw); /* as the captioner's */
    const float *ann = ac_features_row(fc, row, buf);
    ac_err e;
    if (ac_class_head_forward(j->head, ann, gh, gw, fc->dim, win, j->n_win, probs, &e)) {
        if (!atomic_exchange(&j->failed, 1)) j->err = e;
        return;
    }
    ac_region words[AC_REGIONS_MAX], found[AC_REGIONS_MAX];
    const int ni = ac_imagenet_words_regions(j->w, probs, 1 + j->n_win, win, gh, gw, j->min_score, words, AC_REGIONS_MAX);
    ac_region *mine = j->rr->regions + (size_t)row * j->rr->stride;
    const int nd = j->rr->n[row] < j->max ? j->rr->n[row] : j->max;
    memcpy(found, mine, sizeof *found * (size_t)nd);
    j->rr->n[row] = (unsigned char)ac_regions_merge(found, nd, words, ni, j->max, mine);
}

int ac_imagenet_words_add_to_rows(const ac_imagenet_words *w, const ac_feature_cache *fc, const char *model_path,
                                  float min_score, int max, int threads, ac_rows_regions *rr, ac_err *err) {
    if (w->n == 0) return 0;
    if (max > rr->stride) max = rr->stride;
    ac_encoder_id id;
    char *path = NULL;
    ac_encoder enc;
    ac_class_head *head = NULL;
    memset(&enc, 0, sizeof enc);
    if (ac_encoder_id_parse(fc->encoder_json, "the feature cache", &id, err) ||
        ac_find_encoder(NULL, model_path, &id, &path, err))
        return ac_err_prefix(err, "ImageNet words' regions need the cache's encoder");
    int rc = -1;
    rows_job *j = ac_calloc(1, sizeof *j);
    if (!j) {
        ac_errf(err, "out of memory");
        goto done;
    }
    if (ac_encoder_open(path, id.layer[0] ? id.layer : NULL, id.size ? id.size : 224, 1, &enc, err) ||
        ac_class_head_open(&enc, &head, err))
        goto done;
    if (ac_class_head_classes(head) != w->n_classes) {
        ac_errf(err, "%s: the ImageNet words mean %d classes, the encoder's classifier has %d", path, w->n_classes,
                ac_class_head_classes(head));
        goto done;
    }
    int T = threads > 0 ? threads : ac_default_threads();
    T = T > MAX_THREADS ? MAX_THREADS : T;
    j->w = w, j->fc = fc, j->head = head, j->rr = rr, j->max = max, j->min_score = min_score;
    j->n_win = ac_grid_naming_windows(fc->grid_h, fc->grid_w, j->win);
    const size_t per = (size_t)fc->grid_h * fc->grid_w * fc->dim + (size_t)(1 + j->n_win) * w->n_classes;
    for (int t = 0; t < T; t++)
        if (!(j->scratch[t] = ac_malloc(sizeof(float) * per))) {
            ac_errf(err, "out of memory");
            goto done;
        }
    ac_parallel_for(fc->n, T, add_row, j);
    if (atomic_load(&j->failed)) {
        *err = j->err;
        goto done;
    }
    rc = 0;
done:
    for (int t = 0; j && t < MAX_THREADS; t++) free(j->scratch[t]);
    free(j);
    ac_class_head_free(head);
    if (enc.model || enc.cnn) ac_encoder_close(&enc);
    free(path);
    return rc;
}
