/* tune.c: parallel captioning over a feature cache, the decoding-settings grid, and metadata edits
 * of a model file (see tune.h). */
#include "attncap/tune.h"

#include <cblas.h>
#include <math.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "attncap/safetensors.h"

#define MAX_THREADS 16

typedef struct decode_job {
    const ac_model *m;
    const ac_feature_cache *fc;
    const int *rows;
    int n, t, T, rc;
    const ac_beam_opts *o;
    char **texts;
    ac_err err;
} decode_job;

static void *decode_run(void *arg) {
    decode_job *j = arg;
    const size_t row = (size_t)j->fc->grid_h * j->fc->grid_w * j->fc->dim;
    float *scratch = j->fc->data ? NULL : malloc(sizeof(float) * row);
    if (!j->fc->data && !scratch) j->rc = ac_errf(&j->err, "out of memory");
    for (int i = j->t; i < j->n && !j->rc; i += j->T) {
        ac_caption c;
        if (ac_beam_search(&j->m->dec, ac_features_row(j->fc, j->rows[i], scratch), j->o, &c, &j->err)) {
            j->rc = -1;
            break;
        }
        j->texts[i] = ac_caption_text(&c, j->m->vocab);
        ac_caption_free(&c);
        if (!j->texts[i]) j->rc = ac_errf(&j->err, "out of memory");
    }
    free(scratch);
    return NULL;
}

int ac_decode_rows(const ac_model *m, const ac_feature_cache *fc, const int *rows, int n, const ac_beam_opts *o,
                   int threads, char **texts, ac_err *err) {
    int T = threads > 0 ? threads : ac_default_threads();
    if (T > MAX_THREADS) T = MAX_THREADS;
    if (T > n) T = n > 0 ? n : 1;
    for (int i = 0; i < n; i++) texts[i] = NULL;
    decode_job jobs[MAX_THREADS];
    pthread_t th[MAX_THREADS];
    int started[MAX_THREADS] = {0};
    for (int t = 0; t < T; t++) jobs[t] = (decode_job){m, fc, rows, n, t, T, 0, o, texts, {{0}, 0}};
    const int blas = openblas_get_num_threads(); /* BLAS must not be driven from several threads */
    if (T > 1 && blas != 1) openblas_set_num_threads(1);
    for (int t = 1; t < T; t++) started[t] = pthread_create(&th[t], NULL, decode_run, &jobs[t]) == 0;
    decode_run(&jobs[0]);
    for (int t = 1; t < T; t++) {
        if (started[t]) pthread_join(th[t], NULL);
        else decode_run(&jobs[t]);
    }
    if (T > 1 && blas != 1) openblas_set_num_threads(blas);
    for (int t = 0; t < T; t++)
        if (jobs[t].rc) {
            if (err) *err = jobs[t].err;
            for (int i = 0; i < n; i++) free(texts[i]), texts[i] = NULL;
            return -1;
        }
    return 0;
}

int ac_tune_grid(const ac_model *m, const ac_feature_cache *fc, const ac_tune_photo *photos, int n,
                 const ac_beam_opts *base, const int *beams, int nb, const float *alphas, int na, int meteor,
                 const char *wordnet, int threads, ac_tune_point *out, ac_err *err) {
    if (n < 1 || nb < 1 || na < 1) return ac_errf(err, "tune: nothing to do (%d photos, %d beams, %d alphas)", n, nb, na);
    int *rows = malloc(sizeof(int) * (size_t)n);
    char **texts = calloc((size_t)n, sizeof(char *));
    int rc = rows && texts ? 0 : ac_errf(err, "out of memory");
    for (int i = 0; !rc && i < n; i++) rows[i] = photos[i].row;
    for (int b = 0; !rc && b < nb; b++)
        for (int a = 0; !rc && a < na; a++) {
            ac_tune_point *p = &out[b * na + a];
            memset(p, 0, sizeof *p);
            p->opts = *base;
            p->opts.beam = beams[b], p->opts.len_alpha = alphas[a];
            if (ac_decode_rows(m, fc, rows, n, &p->opts, threads, texts, err)) {
                rc = -1;
                break;
            }
            ac_eval_set set = {0};
            for (int i = 0; !rc && i < n; i++)
                rc = ac_eval_set_add(&set, photos[i].id, photos[i].refs, photos[i].n_refs, texts[i], 1, err);
            for (int i = 0; i < n; i++) free(texts[i]), texts[i] = NULL;
            if (!rc) rc = ac_metrics_compute(&set, meteor ? AC_METRICS_METEOR : 0, wordnet, &p->scores, err);
            ac_eval_set_free(&set);
            /* keep the corpus scores only */
            free(p->scores.img_bleu4), free(p->scores.img_rouge_l), free(p->scores.img_cider_d), free(p->scores.img_meteor);
            p->scores.img_bleu4 = p->scores.img_rouge_l = p->scores.img_cider_d = p->scores.img_meteor = NULL;
        }
    free(rows);
    free(texts);
    return rc;
}

int ac_model_set_meta(const char *path, const char *key, const char *value, ac_err *err) {
    ac_st_file f;
    if (ac_st_read(path, &f, err)) return -1;
    ac_st_writer w;
    ac_st_writer_init(&w);
    int rc = 0;
    for (int i = 0; !rc && i < f.n_tensors; i++) {
        const ac_st_tensor *t = &f.tensors[i];
        rc = ac_st_writer_add(&w, t->name, t->dtype, t->ndim, t->shape, t->data, err);
    }
    for (int i = 0; !rc && i < f.n_meta; i++)
        if (strcmp(f.meta_keys[i], key)) rc = ac_st_writer_meta(&w, f.meta_keys[i], f.meta_values[i], err);
    if (!rc) rc = ac_st_writer_meta(&w, key, value, err);
    if (!rc) rc = ac_st_write(&w, path, err);
    ac_st_writer_free(&w);
    ac_st_free(&f);
    return rc;
}
