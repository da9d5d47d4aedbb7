/* caption.c: a caption as the search returns it (beam.h, ac_caption): its words as shown, its text,
 * its attention on the photo's cells (regions spread over the cells they cover), freeing it. */
#include "attncap/beam.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "attncap/regions.h"
#include "alloc_internal.h"

double ac_caption_mean_logprob(const ac_caption *c) { return c->logprob / (c->n + 1); }

void ac_caption_free(ac_caption *c) {
    if (!c) return;
    for (int i = 0; i < c->n_alt; i++) ac_caption_free(&c->alt[i]);
    free(c->alt);
    for (int k = 0; c->labels && k < c->n; k++) free(c->labels[k]);
    free(c->labels);
    free(c->words), free(c->alpha), free(c->beta), free(c->word_logp), free(c->tags), free(c->regions), free(c->copied);
    free(c->account);
    memset(c, 0, sizeof *c);
}

static const char *word_as_said(const ac_caption *c, const ac_vocab *v, int k) {
    if (c->labels && c->labels[k]) return c->labels[k];
    const char *w = ac_vocab_word(v, c->words[k]);
    return w ? w : "<unk>";
}

const char *ac_caption_word(const ac_caption *c, const ac_vocab *v, int k) {
    const char *w = word_as_said(c, v, k);
    if (k + 1 < c->n && (!strcmp(w, "a") || !strcmp(w, "an"))) return ac_article_for(word_as_said(c, v, k + 1));
    return w;
}

char *ac_caption_text(const ac_caption *c, const ac_vocab *v) {
    size_t n = 1;
    for (int i = 0; i < c->n; i++) n += strlen(ac_caption_word(c, v, i)) + 1;
    char *s = ac_malloc(n), *q = s;
    if (!s) return NULL;
    for (int i = 0; i < c->n; i++) {
        const char *w = ac_caption_word(c, v, i);
        if (i) *q++ = ' ';
        size_t l = strlen(w);
        memcpy(q, w, l);
        q += l;
    }
    *q = 0;
    return s;
}

void ac_caption_cell_attention(const ac_caption *c, int k, float *out) {
    const int gh = c->grid_h, gw = c->grid_w, G = gh * gw, stride = ac_caption_alpha_stride(c);
    const float *a = c->alpha + (size_t)k * stride;
    memcpy(out, a, sizeof(float) * (size_t)G);
    for (int r = 0; c->regions && r < c->n_regions; r++) {
        const ac_region *b = &c->regions[r];
        int i0 = gh, i1 = -1, j0 = gw, j1 = -1;
        for (int i = 0; i < gh; i++) {
            const float cy = ((float)i + 0.5f) / (float)gh;
            if (cy >= b->y0 && cy <= b->y1) i0 = i < i0 ? i : i0, i1 = i;
        }
        for (int j = 0; j < gw; j++) {
            const float cx = ((float)j + 0.5f) / (float)gw;
            if (cx >= b->x0 && cx <= b->x1) j0 = j < j0 ? j : j0, j1 = j;
        }
        if (i1 < 0 || j1 < 0) { /* smaller than a cell */
            i0 = i1 = (int)fminf((b->y0 + b->y1) / 2 * (float)gh, (float)gh - 1);
            j0 = j1 = (int)fminf((b->x0 + b->x1) / 2 * (float)gw, (float)gw - 1);
        }
        const float share = a[G + r] / (float)((i1 - i0 + 1) * (j1 - j0 + 1));
        for (int i = i0; i <= i1; i++)
            for (int j = j0; j <= j1; j++) out[i * gw + j] += share;
    }
}

int ac_caption_fold_regions(ac_caption *c) {
    if (!c->n_regions) return 0;
    const size_t G = (size_t)c->grid_h * c->grid_w;
    float *a = ac_malloc(sizeof(float) * G * ((size_t)c->n + 1));
    if (!a) return -1;
    for (int k = 0; k <= c->n; k++) ac_caption_cell_attention(c, k, a + (size_t)k * G);
    free(c->alpha);
    c->alpha = a, c->n_regions = 0;
    for (int i = 0; i < c->n_alt; i++)
        if (ac_caption_fold_regions(&c->alt[i])) return -1;
    return 0;
}

/* The captions to account for: each of c[0..n) not yet given its account, and its runners-up. */
static int account_list(int n, ac_caption *const *c, const ac_dec_image *const *img, ac_caption **cap,
                        const ac_dec_image **on) {
    int m = 0;
    for (int i = 0; i < n; i++) {
        for (int j = -1; j < c[i]->n_alt; j++) {
            ac_caption *k = j < 0 ? c[i] : &c[i]->alt[j];
            if (k->copied) continue;
            if (cap) cap[m] = k, on[m] = img[i];
            m++;
        }
    }
    return m;
}

/* Caption k's account as its search kept it (ac_caption.account), when it has one for nr regions. */
static int take_search_account(const ac_caption *k, int nr, float *share, float *from) {
    if (!k->account || k->n_regions != nr) return 0;
    const size_t AW = 1 + (size_t)nr;
    for (int t = 0; t <= k->n; t++) {
        share[t] = k->account[(size_t)t * AW];
        memcpy(from + (size_t)t * nr, k->account + (size_t)t * AW + 1, (size_t)nr * sizeof *from);
    }
    return 1;
}

int ac_captions_copy_account(const ac_decoder *dec, int n, ac_caption *const *c, const ac_dec_image *const *img,
                             ac_err *err) {
    if (!dec->cfg.copy) return 0; /* none to take */
    const int m = account_list(n, c, img, NULL, NULL);
    if (!m) return 0; /* already given (their attention already shown) */
    ac_caption **cap = ac_calloc((size_t)m, sizeof *cap);
    const ac_dec_image **on = ac_calloc((size_t)m, sizeof *on), **f_on = ac_calloc((size_t)m, sizeof *f_on);
    const int **words = ac_calloc((size_t)m, sizeof *words);
    int *n_words = ac_calloc((size_t)m, sizeof *n_words);
    float **from = ac_calloc((size_t)m, sizeof *from), **f_share = ac_calloc((size_t)m, sizeof *f_share),
          **f_from = ac_calloc((size_t)m, sizeof *f_from);
    int rc = !cap || !on || !f_on || !words || !n_words || !from || !f_share || !f_from, forced = 0;
    if (!rc) account_list(n, c, img, cap, on);
    for (int i = 0; !rc && i < m; i++) {
        const int nr = ac_dec_image_regions(on[i]);
        cap[i]->copied = ac_malloc(((size_t)cap[i]->n + 1) * sizeof *cap[i]->copied);
        from[i] = ac_malloc(((size_t)cap[i]->n + 1) * (size_t)(nr ? nr : 1) * sizeof *from[i]);
        rc = !cap[i]->copied || !from[i];
        if (rc || take_search_account(cap[i], nr, cap[i]->copied, from[i])) continue;
        /* none kept: teacher forcing, all such captions together */
        f_on[forced] = on[i], words[forced] = cap[i]->words, n_words[forced] = cap[i]->n;
        f_share[forced] = cap[i]->copied, f_from[forced] = from[i];
        forced++;
    }
    if (rc) rc = ac_errf(err, "out of memory");
    else if (forced) rc = ac_decoder_copy_shares_many(dec, forced, f_on, words, n_words, f_share, f_from, err);
    for (int i = 0; !rc && i < m; i++) {
        /* the shown attention (beam.h): a word's copied share moves from its context attention to the
         * regions it was copied from; rows with nothing copied keep their bits */
        ac_caption *k = cap[i];
        const int nr = ac_dec_image_regions(on[i]), stride = ac_caption_alpha_stride(k), G = stride - k->n_regions;
        for (int t = 0; k->alpha && nr == k->n_regions && t <= k->n; t++) {
            if (!(k->copied[t] > 0)) continue;
            float *row = k->alpha + (size_t)t * stride;
            for (int j = 0; j < stride; j++) row[j] *= 1 - k->copied[t];
            for (int r = 0; r < nr; r++) row[G + r] += from[i][(size_t)t * nr + r];
        }
    }
    for (int i = 0; cap && i < m; i++) {
        if (!cap[i]) continue;
        if (rc) free(cap[i]->copied), cap[i]->copied = NULL;
        free(cap[i]->account), cap[i]->account = NULL; /* taken */
        if (from) free(from[i]);
    }
    free(cap), free(on), free(f_on), free(words), free(n_words), free(from), free(f_share), free(f_from);
    return rc ? -1 : 0;
}

int ac_caption_copy_account(ac_caption *c, const ac_decoder *dec, const ac_dec_image *img, ac_err *err) {
    return ac_captions_copy_account(dec, 1, &c, &img, err);
}
