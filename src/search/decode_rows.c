/* decode_rows.c: captioning many photos of a feature cache in parallel (decode_rows.h), each by
 * ac_beam_search_regions on its own grid and, for a regions model, its regions. */
#include "attncap/decode_rows.h"

#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "pool.h"
#include "alloc_internal.h"

#define MAX_THREADS 16

typedef struct decode_job {
    const ac_decoder *dec;
    const ac_vocab *vocab;
    const ac_feature_cache *fc;
    const int *rows;
    const ac_rows_regions *reg; /* NULL: the grids alone */
    const ac_beam_opts *o;
    char **texts;
    float *scratch[MAX_THREADS]; /* per thread: a feature row read from a compact or mapped cache, then
                                    its regions' vectors (with regions) */
    atomic_int failed;           /* set at the first error: the remaining rows are skipped */
    int first_bad[MAX_THREADS];  /* per thread: the lowest row that failed (or -1), and why */
    ac_err err[MAX_THREADS];
} decode_job;

/* Row `row` of fc laid out as the captioner lays a photo out: its grid (*gh x *gw), then, with reg, the
 * vectors of its regions (*nr of them, categories cat [AC_REGIONS_MAX]). buf [(grid cells + dec's
 * regions) x D] may be NULL when fc is in memory and reg is NULL (the cache's own row is returned); NULL
 * when there is neither. */
static const float *row_photo(const ac_decoder *dec, const ac_feature_cache *fc, const ac_rows_regions *reg, int row,
                              float *buf, int *gh, int *gw, int *nr, const ac_region **regions) {
    ac_features_grid(fc, row, gh, gw);
    *nr = 0;
    const float *ann = buf || fc->data ? ac_features_row(fc, row, buf) : NULL;
    if (ann && reg) { /* the grid, then its regions' vectors (as the captioner lays them out) */
        const int D = fc->dim, G = *gh * *gw;
        if (ann != buf) memcpy(buf, ann, sizeof(float) * (size_t)G * D);
        const ac_region *r;
        const int n = ac_rows_regions_of(reg, row, dec->cfg.regions, &r);
        for (int k = 0; k < n; k++)
            ac_region_vector(buf, *gh, *gw, D, &r[k], dec->cfg.region_scale, buf + (size_t)(G + k) * D);
        *nr = n, *regions = r;
        ann = buf;
    }
    return ann;
}

static void decode_row(void *arg, int i, int thread) {
    decode_job *j = arg;
    if (atomic_load(&j->failed)) return;
    ac_caption c;
    ac_err e;
    static const ac_region none[1];
    const ac_region *regions = none; /* detected: even none */
    int gh, gw, nr;
    const float *ann = row_photo(j->dec, j->fc, j->reg, j->rows[i], j->scratch[thread], &gh, &gw, &nr, &regions);
    if (!ann) ac_errf(&e, "out of memory");
    else if (!ac_beam_search_regions(j->dec, ann, gh, gw, nr, j->reg ? (regions ? regions : none) : NULL, j->o, &c, &e)) {
        j->texts[i] = ac_caption_text(&c, j->vocab);
        ac_caption_free(&c);
        if (j->texts[i]) return;
        ac_errf(&e, "out of memory");
    }
    atomic_store(&j->failed, 1);
    if (j->first_bad[thread] < 0 || i < j->first_bad[thread]) j->first_bad[thread] = i, j->err[thread] = e;
}

int ac_decode_rows(const ac_decoder *dec, const ac_vocab *vocab, const ac_feature_cache *fc, const int *rows, int n,
                   const ac_rows_regions *regions, const ac_beam_opts *o, int threads, char **texts, ac_err *err) {
    int T = threads > 0 ? threads : ac_default_threads();
    if (T > MAX_THREADS) T = MAX_THREADS;
    if (T > n) T = n > 0 ? n : 1;
    for (int i = 0; i < n; i++) texts[i] = NULL;
    decode_job *j = ac_calloc(1, sizeof *j);
    if (!j) return ac_errf(err, "out of memory");
    if (regions && (dec->cfg.regions <= 0 || regions->stride > AC_REGIONS_MAX)) regions = NULL;
    j->dec = dec, j->vocab = vocab, j->fc = fc, j->rows = rows, j->reg = regions, j->o = o, j->texts = texts;
    atomic_init(&j->failed, 0);
    const size_t row = (size_t)(fc->grid_h * fc->grid_w + (regions ? dec->cfg.regions : 0)) * fc->dim;
    for (int t = 0; t < T; t++) {
        j->first_bad[t] = -1;
        if (!fc->data || regions) j->scratch[t] = ac_malloc(sizeof(float) * row); /* NULL: that thread reports it */
    }
    ac_parallel_for(n, T, decode_row, j);
    int bad = -1;
    for (int t = 0; t < T; t++) {
        free(j->scratch[t]);
        if (j->first_bad[t] >= 0 && (bad < 0 || j->first_bad[t] < j->first_bad[bad])) bad = t;
    }
    if (bad >= 0) {
        if (err) *err = j->err[bad];
        for (int i = 0; i < n; i++) free(texts[i]), texts[i] = NULL;
    }
    free(j);
    return bad >= 0 ? -1 : 0;
}
