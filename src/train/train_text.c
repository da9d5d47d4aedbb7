/* train_text.c: what the trainer learns beyond one set of captioned photos (train.h).
 *
 * Captions without photos (the DCC / NOC idea: Hendricks et al. 2016, Venugopalan et al. 2017): every
 * step, next to its batch of photos, runs a batch of text-only captions through the same decoder. In
 * place of a photo they get a learned "no photo" context x [D]: the photo is taken to be L copies of
 * x, so the attention context is beta * x, and h_0, c_0 come from the initial MLPs of x. The decoder's
 * code is unchanged; the gradient of x is ac_dec_batch.dctx_sum. So every word of the text gets an
 * input embedding and an output row learned from language, in the same network that captions photos.
 *
 * Starting from an earlier model (warm start): its weights are copied; words the new vocabulary adds
 * keep their fresh initialisation, the others keep their rows of the embedding and of the output layer. */
#include <cjson/cJSON.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "attncap/dataset.h"
#include "attncap/decoder.h"
#include "attncap/model.h"
#include "attncap/tokenize.h"
#include "attncap/vocab.h"
#include "decoder_internal.h"
#include "train_internal.h"
#include "alloc_internal.h"

int ac_train_read_text(ac_trainer *tr, ac_tokens **toks, int *n, int *cap, ac_err *err) {
    const ac_train_opts *o = tr->o;
    if (!o->text || !*o->text) return 0;
    return ac_dataset_read_tokens(o->text, AC_SPLIT_NONE, o->max_words, toks, n, cap, err);
}

static cJSON *count_array(ac_trainer *tr, const ac_train_example *ex, int n, int *cnt) {
    const int V = ac_vocab_size(tr->model.vocab);
    memset(cnt, 0, sizeof(int) * (size_t)V);
    for (int i = 0; i < n; i++)
        for (int k = 0; k < ex[i].n; k++) cnt[ex[i].w[k]]++;
    return cJSON_CreateIntArray(cnt, V);
}

char *ac_train_vocab_counts_json(ac_trainer *tr) {
    const int V = ac_vocab_size(tr->model.vocab);
    if (!tr->cnt_paired) tr->cnt_paired = ac_calloc((size_t)V, sizeof(int));
    if (!tr->cnt_text) tr->cnt_text = ac_calloc((size_t)V, sizeof(int));
    cJSON *j = cJSON_CreateObject();
    if (!j || !tr->cnt_paired || !tr->cnt_text) {
        cJSON_Delete(j);
        return NULL;
    }
    /* an array that could not be made (out of memory) fails the record: cJSON would leave it out */
    cJSON *pa = count_array(tr, tr->ex, tr->n_ex, tr->cnt_paired);
    if (!pa || !cJSON_AddItemToObject(j, "paired", pa)) return cJSON_Delete(pa), cJSON_Delete(j), NULL;
    cJSON *te = count_array(tr, tr->tex, tr->n_tex, tr->cnt_text);
    if (!te || !cJSON_AddItemToObject(j, "text", te)) return cJSON_Delete(te), cJSON_Delete(j), NULL;
    char *s = cJSON_PrintUnformatted(j);
    cJSON_Delete(j);
    return s;
}

int ac_train_text_init(ac_trainer *tr, ac_err *err) {
    const size_t D = (size_t)tr->D, LD = (size_t)tr->L * D, S = (size_t)tr->o->shards;
    tr->null_ann = ac_malloc(sizeof(float) * LD * S);
    tr->null_g = ac_calloc(D, sizeof(float));
    tr->grad_text = ac_malloc(sizeof(float) * tr->model.dec.n_params);
    float *row = ac_malloc(sizeof(float) * LD);
    if (!tr->null_ann || !tr->null_g || !tr->grad_text || !row) {
        free(row);
        return ac_errf(err, "out of memory");
    }
    if (!tr->null_ctx) { /* not resumed: the mean annotation vector of (up to) 256 training photos */
        tr->null_ctx = ac_calloc(D, sizeof(float));
        tr->null_m = ac_calloc(D, sizeof(float)), tr->null_v = ac_calloc(D, sizeof(float));
        if (!tr->null_ctx || !tr->null_m || !tr->null_v) {
            free(row);
            return ac_errf(err, "out of memory");
        }
        const int np = tr->n_img < 256 ? tr->n_img : 256;
        long cells = 0; /* each photo's own cells (the padding of a cache that kept the aspect ratio is not a photo) */
        for (int k = 0; k < np; k++) {
            const int r = tr->ex[tr->img_start[k]].feat;
            int gh, gw;
            ac_features_grid(&tr->fc, r, &gh, &gw);
            const float *a = ac_features_row(&tr->fc, r, row);
            for (size_t l = 0; l < (size_t)gh * gw; l++)
                for (size_t d = 0; d < D; d++) tr->null_ctx[d] += a[l * D + d];
            cells += (long)gh * gw;
        }
        for (size_t d = 0; d < D; d++) tr->null_ctx[d] /= (float)cells;
    }
    free(row);
    if (tr->R && ac_train_text_regions_init(tr, err)) return -1;
    tr->text_batch = (int)lround((double)tr->o->text_ratio * tr->o->batch);
    if (tr->text_batch < 1) tr->text_batch = 1;
    tr->text_perm_round = -1;
    return 0;
}

/* Caption j of the endless text stream: the stream is the text captions in a fresh shuffle per round. */
int ac_train_text_select(ac_trainer *tr, long step, int *idx, ac_err *err) {
    const long n = tr->n_tex, k0 = step * tr->text_batch;
    if (!tr->text_perm && !(tr->text_perm = ac_malloc(sizeof(int) * (size_t)n))) return ac_errf(err, "out of memory");
    for (int i = 0; i < tr->text_batch; i++) {
        const long j = k0 + i;
        const int round = (int)(j / n);
        if (round != tr->text_perm_round) {
            int *p = tr->text_perm;
            for (long a = 0; a < n; a++) p[a] = (int)a;
            uint64_t s = ac_mix64(tr->o->seed * 0xC2B2AE3D27D4EB4Full + (uint64_t)round + 7);
            for (long a = n - 1; a > 0; a--) {
                s += 0x9E3779B97F4A7C15ull;
                const long b = (long)(ac_mix64(s) % (uint64_t)(a + 1));
                const int t = p[a];
                p[a] = p[b], p[b] = t;
            }
            tr->text_perm_round = round;
        }
        idx[i] = tr->text_perm[j % n];
    }
    return 0;
}

int ac_train_warm_start(ac_trainer *tr, const char *path, ac_err *err) {
    ac_model old;
    if (ac_model_load(path, &old, err)) return -1;
    ac_decoder *d = &tr->model.dec;
    const ac_decoder_config *a = &old.dec.cfg, *b = &d->cfg;
    int rc = 0;
    if (a->decoder != b->decoder || a->layers != b->layers)
        rc = ac_errf(err, "%s: a %s decoder (%d layers), this run's is a %s (%d layers)", path,
                     ac_decoder_kind_name(a->decoder), a->layers, ac_decoder_kind_name(b->decoder), b->layers);
    else if (a->embed != b->embed || a->hidden != b->hidden || a->att != b->att || a->dim != b->dim ||
             a->n_ann - a->regions != b->n_ann - b->regions)
        rc = ac_errf(err, "%s: its sizes (E %d, H %d, A %d, grid %dx%d) differ from this run's (E %d, H %d, A %d, grid %dx%d)",
                     path, a->embed, a->hidden, a->att, a->grid_h, a->grid_w, b->embed, b->hidden, b->att, b->grid_h, b->grid_w);
    else if (a->attention != b->attention || a->heads != b->heads)
        rc = ac_errf(err, "%s: its attention (%s, heads %d) differs from this run's (%s, heads %d)", path,
                     ac_decoder_attention_name(a->attention), a->heads > 1 ? a->heads : 1,
                     ac_decoder_attention_name(b->attention), b->heads > 1 ? b->heads : 1);
    else if (old.encoder_json && tr->model.encoder_json) {
        /* the same encoder; its precision may differ: a warm start on int8's features (or back) is how
         * a model comes to fit them */
        ac_encoder_id ia, ib;
        if (ac_encoder_id_parse(old.encoder_json, path, &ia, err) || ac_encoder_id_parse(tr->model.encoder_json, "the feature cache", &ib, err))
            rc = -1;
        else if (ib.int8 = ia.int8, !ac_encoder_id_same(&ia, &ib))
            rc = ac_errf(err, "%s: made from another encoder than the feature cache's", path);
    }
    if (rc) {
        ac_model_free(&old);
        return rc;
    }
    ac_dec_tensor ta[AC_DEC_MAX_TENSORS], tb[AC_DEC_MAX_TENSORS];
    const int nt = ac_decoder_tensors(a, ta, NULL);
    const int E = b->embed, Va = a->vocab, Vb = b->vocab;
    int *map = ac_malloc(sizeof(int) * (size_t)Vb); /* new id -> old id, -1 if new */
    if (!map) {
        ac_model_free(&old);
        return ac_errf(err, "out of memory");
    }
    for (int v = 0; v < Vb; v++) {
        const char *w = ac_vocab_word(tr->model.vocab, v);
        const int u = v < 4 ? v : ac_vocab_id(old.vocab, w);
        map[v] = v < 4 || u != AC_UNK ? u : -1;
    }
    const int ntb = ac_decoder_tensors(b, tb, NULL);
    for (int k = 0; k < nt; k++) {
        int kb = 0; /* by name: a tensor one model has and the other not (copy's) is left as it is */
        while (kb < ntb && strcmp(tb[kb].name, ta[k].name)) kb++;
        if (kb == ntb) continue;
        float *dst = d->params + tb[kb].offset;
        const float *src = old.dec.params + ta[k].offset;
        if (!strcmp(ta[k].name, "emb")) { /* [V, E] */
            for (int v = 0; v < Vb; v++)
                if (map[v] >= 0) memcpy(dst + (size_t)v * E, src + (size_t)map[v] * E, sizeof(float) * E);
        } else if (!strcmp(ta[k].name, "out_lo")) { /* [E, V] */
            for (int e = 0; e < E; e++)
                for (int v = 0; v < Vb; v++)
                    if (map[v] >= 0) dst[(size_t)e * Vb + v] = src[(size_t)e * Va + map[v]];
        } else if (!strcmp(ta[k].name, "out_bo")) { /* [V] */
            for (int v = 0; v < Vb; v++)
                if (map[v] >= 0) dst[v] = src[map[v]];
        } else if (ta[k].rows == tb[kb].rows && ta[k].cols == tb[kb].cols) { /* (sizes checked above) */
            memcpy(dst, src, sizeof(float) * (size_t)ta[k].rows * ta[k].cols);
        }
    }
    free(map);
    ac_model_free(&old);
    return 0;
}
