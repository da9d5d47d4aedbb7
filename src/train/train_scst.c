/* train_scst.c: self-critical sequence training (train.h's scst; Rennie et al. 2017, "Self-critical
 * Sequence Training for Image Captioning"), with the baseline of Luo 2020 ("A Better Variant of
 * Self-Critical Sequence Training"): the mean reward of the photo's other samples, so no greedy
 * decode is needed and the baseline does not see the sample it judges.
 *
 * For each photo of a step, K captions are sampled from the model as it stands (no dropout; the copy
 * mixture included, as the search sees it; <unk> never drawn: sample.h). Caption k's reward r_k is its
 * CIDEr-D against the photo's training captions, the document frequencies over every training photo's
 * captions (metrics.h ac_cider_corpus), less o->scst_penalty for each COCO object it names that none of
 * those captions name (objects.h: what CHAIR counts as a hallucination; plain CIDEr-D pays for a likely
 * object more than it charges for a wrong one, docs/experiments/scst.md). The step's loss is
 *     - sum_k (r_k - mean_{j != k} r_j) log p(c_k | photo)  / tokens
 * i.e. each sample's cross-entropy weighted by its advantage (decoder.h ac_dec_batch.weight): the
 * likelihood-ratio estimate of the gradient of the expected reward. What a caption earns is what the
 * scores count: the references' objects named (a kite the references mention and the photo's region
 * shows), their words in their order, and no more length than theirs.
 *
 * Determinism: the draws are a hash of (seed, step, row, position), so a resumed run samples what the
 * uninterrupted one did. */
#include <stdlib.h>
#include <string.h>

#include "attncap/metrics.h"
#include "attncap/objects.h"
#include "attncap/sample.h"
#include "attncap/vocab.h"
#include "decoder_internal.h"
#include "train_internal.h"
#include "common_internal.h"
#include "alloc_internal.h"

struct ac_scst {
    int K;                    /* samples per photo */
    int max_photos, max_len;  /* a step's photos at most; words a sample at most */
    ac_cider_corpus *corpus;  /* the training photos' captions */
    int *photo_ref;           /* [n_img] each photo's image in the corpus (photos listed twice share one) */
    uint8_t *named;           /* [corpus images, AC_N_OBJECTS] the objects (objects.h) its captions name */
    float penalty;            /* what naming an object none of them names costs (o->scst_penalty) */
    /* the sampled batch, sorted by length (ac_dec_batch's order) */
    int *len, *words, *order, *nval, *nreg;
    const float **ann;
    const unsigned char **rcat;
    const float **rscore;
    float *weight, *batch_weight; /* each sample's advantage, in draw order and in the batch's */
    /* the sampler (sample.h) and its captions: draw [rows, max_len], draw_len [rows] */
    ac_sampler *sampler;
    int *draw, *draw_len, *cats;
    double *reward;
    char *text; /* one sample as words */
    size_t text_cap;
};

/* A photo's captions as text (the vocabulary's words: a rare word is <unk>, which no sample says). */
static char *caption_text(const ac_vocab *v, const int *w, int n, char **buf, size_t *cap) {
    size_t need = 1;
    for (int k = 0; k < n; k++) need += strlen(ac_vocab_word(v, w[k])) + 1;
    if (need > *cap) {
        char *b = ac_realloc(*buf, need);
        if (!b) return NULL;
        *buf = b, *cap = need;
    }
    char *p = *buf;
    for (int k = 0; k < n; k++) {
        const char *s = ac_vocab_word(v, w[k]);
        const size_t l = strlen(s);
        if (k) *p++ = ' ';
        memcpy(p, s, l), p += l;
    }
    *p = 0;
    return *buf;
}

static int corpus_build(ac_trainer *tr, ac_scst *s, ac_err *err) {
    ac_eval_item *items = ac_calloc((size_t)tr->n_img + 1, sizeof *items);
    int *first = ac_malloc(sizeof(int) * ((size_t)tr->fc.n + 1)); /* feature row -> corpus image */
    s->photo_ref = ac_malloc(sizeof(int) * ((size_t)tr->n_img + 1));
    s->named = ac_calloc(((size_t)tr->n_img + 1) * AC_N_OBJECTS, 1);
    int n = 0, rc = items && first && s->photo_ref && s->named ? 0 : -1;
    for (int r = 0; !rc && r < tr->fc.n; r++) first[r] = -1;
    for (int im = 0; !rc && im < tr->n_img; im++) {
        const ac_train_example *e0 = &tr->ex[tr->img_start[im]];
        if (e0->feat >= 0 && first[e0->feat] >= 0) { /* a photo listed twice (extra data given twice) */
            s->photo_ref[im] = first[e0->feat];
            continue;
        }
        ac_eval_item *it = &items[n];
        it->refs = ac_calloc((size_t)tr->img_n[im], sizeof(char *));
        if (!it->refs) { rc = -1; break; }
        for (int k = 0; k < tr->img_n[im]; k++) {
            const ac_train_example *e = &tr->ex[tr->img_start[im] + k];
            if (!caption_text(tr->model.vocab, e->w, e->n, &s->text, &s->text_cap) || !(it->refs[k] = ac_strdup(s->text))) {
                rc = -1;
                break;
            }
            it->n_refs++;
            uint8_t present[AC_N_OBJECTS], *named = s->named + (size_t)n * AC_N_OBJECTS;
            ac_objects_in_tokens(s->text, present);
            for (int c = 0; c < AC_N_OBJECTS; c++) named[c] |= present[c];
        }
        if (e0->feat >= 0) first[e0->feat] = n;
        s->photo_ref[im] = n++;
    }
    if (!rc && !(s->corpus = ac_cider_corpus_new(items, n))) rc = -1;
    for (int i = 0; items && i < n + (rc ? 1 : 0); i++) {
        for (int k = 0; k < items[i].n_refs; k++) free(items[i].refs[k]);
        free(items[i].refs);
    }
    free(items), free(first);
    return rc ? ac_errf(err, "train: out of memory (self-critical training's references)") : 0;
}

int ac_train_scst_init(ac_trainer *tr, int max_photos, ac_err *err) {
    const ac_train_opts *o = tr->o;
    const ac_decoder_config *c = &tr->model.dec.cfg;
    if (c->decoder != AC_DECODER_LSTM || c->attention_mode != AC_ATTENTION_SOFT)
        return ac_errf(err, "train: self-critical training (scst) is the soft-attention LSTM's");
    if (!o->group) return ac_errf(err, "train: self-critical training (scst) samples whole photos: it needs grouped batches");
    ac_scst *s = ac_calloc(1, sizeof *s);
    if (!s) return ac_errf(err, "out of memory");
    tr->scst = s;
    s->K = o->scst, s->max_photos = max_photos, s->max_len = o->max_words, s->penalty = o->scst_penalty;
    const size_t B = (size_t)max_photos * s->K;
    s->len = ac_malloc(sizeof(int) * B), s->words = ac_calloc(B * (size_t)s->max_len, sizeof(int));
    s->order = ac_malloc(sizeof(int) * B), s->nval = ac_malloc(sizeof(int) * B), s->nreg = ac_malloc(sizeof(int) * B);
    s->ann = ac_malloc(sizeof *s->ann * B), s->rcat = ac_malloc(sizeof *s->rcat * B);
    s->rscore = ac_malloc(sizeof *s->rscore * B), s->weight = ac_malloc(sizeof(float) * B);
    s->batch_weight = ac_malloc(sizeof(float) * B);
    s->draw = ac_malloc(sizeof(int) * B * (size_t)s->max_len), s->draw_len = ac_malloc(sizeof(int) * B);
    s->cats = ac_malloc(sizeof(int) * (size_t)max_photos * (AC_REGIONS_MAX + 1));
    s->sampler = ac_sampler_new(c, (int)B, s->max_len);
    s->reward = ac_malloc(sizeof(double) * B);
    if (!s->len || !s->words || !s->order || !s->nval || !s->nreg || !s->ann || !s->rcat || !s->rscore || !s->weight || !s->batch_weight ||
        !s->draw || !s->draw_len || !s->cats || !s->sampler || !s->reward)
        return ac_errf(err, "out of memory");
    return corpus_build(tr, s, err);
}

void ac_train_scst_free(ac_trainer *tr) {
    ac_scst *s = tr->scst;
    if (!s) return;
    ac_cider_corpus_free(s->corpus);
    free(s->photo_ref), free(s->named), free(s->len), free(s->words), free(s->order), free(s->nval), free(s->nreg), free(s->ann);
    free(s->rcat), free(s->rscore), free(s->weight), free(s->batch_weight), free(s->draw), free(s->draw_len);
    ac_sampler_free(s->sampler);
    free(s->cats), free(s->reward), free(s->text), free(s);
    tr->scst = NULL;
}

/* K samples for each photo, drawn by the model as it stands (sample.h). */
static int sample(const ac_trainer *tr, const ac_decoder *dec, const ac_scst_photo *ph, int n, long step, ac_err *err) {
    ac_scst *s = tr->scst;
    ac_dec_image *img[4096] = {0};
    int rc = 0, made = 0;
    for (; made < n; made++) {
        const ac_scst_photo *p = &ph[made];
        if (!(img[made] = ac_decoder_prepare_regions(dec, p->ann, p->gh, p->gw, p->n_regions))) break;
        int *cat = s->cats + (size_t)made * (AC_REGIONS_MAX + 1);
        for (int r = 0; p->cat && r < p->n_regions; r++) cat[r] = p->cat[r];
        if (p->n_regions && p->cat) ac_dec_image_set_categories(img[made], cat, p->score);
    }
    const uint64_t seed = ac_mix64(tr->o->seed * 0xBF58476D1CE4E5B9ull + (uint64_t)step + 0x5C57);
    if (made < n) rc = ac_errf(err, "train: out of memory (sampling)");
    else if (ac_sample_captions(s->sampler, dec, (const ac_dec_image *const *)img, n, s->K, seed, s->draw, s->draw_len, NULL))
        rc = ac_errf(err, "train: sampling %d captions failed", n * s->K);
    for (int p = 0; p < made; p++) ac_dec_image_free(img[p]);
    return rc;
}

/* A caption's reward on photo `img`: its CIDEr-D against the photo's training captions, less the
 * penalty for each object it names that none of them name. */
static int reward_of(ac_trainer *tr, const int *words, int n, int img, double *r, ac_err *err) {
    ac_scst *s = tr->scst;
    if (!caption_text(tr->model.vocab, words, n, &s->text, &s->text_cap) ||
        (*r = ac_cider_corpus_score(s->corpus, s->photo_ref[img], s->text)) < 0)
        return ac_errf(err, "train: out of memory (rewards)");
    if (s->penalty > 0) { /* the objects it names that none of the photo's captions name (CHAIR's hallucinations) */
        uint8_t present[AC_N_OBJECTS];
        const uint8_t *named = s->named + (size_t)s->photo_ref[img] * AC_N_OBJECTS;
        ac_objects_in_tokens(s->text, present);
        for (int c = 0; c < AC_N_OBJECTS; c++) *r -= present[c] && !named[c] ? s->penalty : 0;
    }
    return 0;
}

int ac_train_scst_batch(ac_trainer *tr, const ac_decoder *dec, const ac_scst_photo *ph, int n, long step,
                        ac_dec_batch *out, double *mean_reward, ac_err *err) {
    ac_scst *s = tr->scst;
    const int K = s->K, R = n * K;
    if (n > s->max_photos || n > 4096) return ac_errf(err, "train: %d photos in a step (at most %d)", n, s->max_photos);
    if (sample(tr, dec, ph, n, step, err)) return -1;
    double total = 0;
    for (int p = 0; p < n; p++) {
        double sum = 0;
        for (int k = 0; k < K; k++) {
            const int i = p * K + k;
            if (reward_of(tr, s->draw + (size_t)i * s->max_len, s->draw_len[i], ph[p].img, &s->reward[i], err)) return -1;
            sum += s->reward[i];
        }
        for (int k = 0; k < K; k++) /* the advantage over the mean of the photo's other samples */
            s->weight[p * K + k] = K > 1 ? (float)(s->reward[p * K + k] - (sum - s->reward[p * K + k]) / (K - 1)) : 0;
        total += sum;
    }
    *mean_reward = total / R;
    /* the batch: sorted by length descending (stable), each sample on its photo's rows */
    for (int i = 0; i < R; i++) s->order[i] = i;
    for (int i = 1; i < R; i++) {
        const int k = s->order[i];
        int j = i - 1;
        while (j >= 0 && s->draw_len[s->order[j]] < s->draw_len[k]) s->order[j + 1] = s->order[j], j--;
        s->order[j + 1] = k;
    }
    for (int b = 0; b < R; b++) {
        const int i = s->order[b], p = i / K;
        s->len[b] = s->draw_len[i] + 1;
        memcpy(s->words + (size_t)b * s->max_len, s->draw + (size_t)i * s->max_len, sizeof(int) * (size_t)s->draw_len[i]);
        s->ann[b] = ph[p].ann;
        s->nval[b] = ph[p].gh * ph[p].gw + ph[p].n_regions;
        s->nreg[b] = ph[p].n_regions, s->rcat[b] = ph[p].cat, s->rscore[b] = ph[p].score;
        s->batch_weight[b] = s->weight[i];
    }
    *out = (ac_dec_batch){.B = R, .len = s->len, .words = s->words, .stride = s->max_len, .ann = s->ann,
                          .n_valid = s->nval, .n_regions = dec->cfg.copy ? s->nreg : NULL,
                          .region_cat = dec->cfg.copy ? s->rcat : NULL, .region_score = dec->cfg.copy ? s->rscore : NULL,
                          .weight = s->batch_weight};
    return 0;
}
