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

int ac_caption_copy_account(ac_caption *c, const ac_decoder *dec, const ac_dec_image *img, ac_err *err) {
    if (!dec->cfg.copy || c->copied) return 0; /* none, or already given (its attention already shown) */
    const int nr = ac_dec_image_regions(img), stride = ac_caption_alpha_stride(c), G = stride - c->n_regions;
    float *from = ac_malloc(((size_t)c->n + 1) * (size_t)(nr ? nr : 1) * sizeof *from);
    if (!from || !(c->copied = ac_malloc(((size_t)c->n + 1) * sizeof *c->copied))) {
        free(from);
        return ac_errf(err, "out of memory");
    }
    if (ac_decoder_copy_shares(dec, img, c->words, c->n, c->copied, from, err)) return free(from), -1;
    /* the shown attention (beam.h): a word's copied share moves from its context attention to the
     * regions it was copied from; rows with nothing copied keep their bits */
    for (int k = 0; c->alpha && nr == c->n_regions && k <= c->n; k++) {
        if (!(c->copied[k] > 0)) continue;
        float *row = c->alpha + (size_t)k * stride;
        for (int i = 0; i < stride; i++) row[i] *= 1 - c->copied[k];
        for (int r = 0; r < nr; r++) row[G + r] += from[(size_t)k * nr + r];
    }
    free(from);
    for (int i = 0; i < c->n_alt; i++)
        if (ac_caption_copy_account(&c->alt[i], dec, img, err)) return -1;
    return 0;
}
