/* caption_json.c: one photo's caption as the JSON object `attncap caption --json` prints (captioner.h). */
#include "attncap/captioner.h"
#include "attncap/imagenet_words.h"
#include "attncap/model.h"
#include "attncap/objects.h"
#include "attncap/regions.h"
#include "alloc_internal.h"

#include <cjson/cJSON.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* cJSON's Add functions fail quietly when out of memory, and an item added to NULL, or whose key
 * could not be copied, stays its maker's: every item goes through put, which attaches it or frees it
 * and clears *ok, so a JSON line is whole or not made at all. Returns the item attached, or NULL. */
static cJSON *put(cJSON *parent, const char *key, cJSON *item, int *ok) {
    if (parent && item && (key ? cJSON_AddItemToObject(parent, key, item) : cJSON_AddItemToArray(parent, item))) return item;
    cJSON_Delete(item);
    *ok = 0;
    return NULL;
}

/* Tags, confidence and whether the caption was replaced by a description (naming.h). */
static void add_naming(cJSON *o, const ac_caption *c, int *ok) {
    cJSON *unk = NULL; /* a given caption's words outside the vocabulary */
    for (int k = 0; c->labels && k < c->n; k++)
        if (c->words[k] == AC_UNK && c->labels[k] && strcmp(c->labels[k], "<unk>")) {
            if (!unk) unk = put(o, "unknown_words", cJSON_CreateArray(), ok);
            put(unk, NULL, cJSON_CreateString(c->labels[k]), ok);
        }
    if (isfinite(c->confidence) && c->confidence > 0) put(o, "confidence", cJSON_CreateNumber(c->confidence), ok);
    if (c->described) put(o, "described", cJSON_CreateTrue(), ok);
    if (!c->n_tags) return;
    cJSON *tags = put(o, "tags", cJSON_CreateArray(), ok);
    for (int i = 0; i < c->n_tags; i++) {
        const ac_caption_tag *t = &c->tags[i];
        cJSON *x = cJSON_CreateObject();
        put(x, "word", cJSON_CreateString(t->word), ok);
        if (t->cls[0]) put(x, "class", cJSON_CreateString(t->cls), ok);
        put(x, "prob", cJSON_CreateNumber(round(t->prob * 1e4) / 1e4), ok);
        put(x, "named", cJSON_CreateBool(t->named), ok);
        put(x, "forced", cJSON_CreateBool(t->forced), ok);
        if (isfinite(t->precision)) put(x, "precision", cJSON_CreateNumber(round(t->precision * 1e4) / 1e4), ok);
        if (!t->in_vocab) put(x, "in_vocab", cJSON_CreateFalse(), ok);
        put(tags, NULL, x, ok);
    }
}

static void add_alternatives(cJSON *o, const ac_caption *c, const ac_vocab *v, int *ok) {
    cJSON *alts = put(o, "alternatives", cJSON_CreateArray(), ok);
    for (int a = 0; a < c->n_alt; a++) {
        const ac_caption *ca = &c->alt[a];
        char *t = ac_caption_text(ca, v);
        if (!t) *ok = 0;
        cJSON *x = cJSON_CreateObject();
        put(x, "caption", cJSON_CreateString(t ? t : ""), ok);
        cJSON *tt = put(x, "tokens", cJSON_CreateArray(), ok);
        for (int i = 0; i < ca->n; i++) put(tt, NULL, cJSON_CreateString(ac_caption_word(ca, v, i)), ok);
        put(x, "logprob", cJSON_CreateNumber(ca->logprob), ok);
        put(x, "score", cJSON_CreateNumber(ca->score), ok);
        put(alts, NULL, x, ok);
        free(t);
    }
}

/* [[a, b, ...], ...] with 4 significant digits, written by hand: cJSON would print 17. Each word's
 * weights over the grid's L cells (a region's weight spread over its box: ac_caption_cell_attention),
 * or with regions_only its weights over the regions. */
static char *attention_text(const ac_caption *c, int L, int regions_only) {
    const int stride = ac_caption_alpha_stride(c), cols = regions_only ? c->n_regions : L;
    size_t cap = (size_t)c->n * (cols + 1) * 12 + 16, n = 0;
    char *raw = ac_malloc(cap);
    float *cells = ac_malloc(sizeof(float) * ((size_t)L + 1));
    if (!raw || !cells) return free(raw), free(cells), NULL;
    raw[n++] = '[';
    for (int t = 0; t < c->n; t++) {
        const float *row = c->alpha + (size_t)t * stride + (regions_only ? L : 0);
        if (!regions_only && c->n_regions && c->regions && L == c->grid_h * c->grid_w) ac_caption_cell_attention(c, t, cells), row = cells;
        n += (size_t)snprintf(raw + n, cap - n, "%s[", t ? "," : "");
        for (int i = 0; i < cols; i++) n += (size_t)snprintf(raw + n, cap - n, "%s%.4g", i ? "," : "", row[i]);
        raw[n++] = ']';
    }
    raw[n++] = ']';
    raw[n] = 0;
    free(cells);
    return raw;
}

/* "regions": the detected objects the decoder attended to, boxes as fractions of the photo. */
static void add_regions(cJSON *o, const ac_caption *c, const ac_imagenet_words *words, int *ok) {
    if (!c->n_regions || !c->regions) return;
    cJSON *rs = put(o, "regions", cJSON_CreateArray(), ok);
    for (int r = 0; r < c->n_regions; r++) {
        const ac_region *g = &c->regions[r];
        cJSON *x = cJSON_CreateObject();
        const char *label = ac_region_label(words, g->category);
        put(x, "label", cJSON_CreateString(label ? label : ""), ok);
        put(x, "score", cJSON_CreateNumber(round(g->score * 1e4) / 1e4), ok);
        const double b[4] = {g->x0, g->y0, g->x1, g->y1};
        cJSON *bx = put(x, "box", cJSON_CreateArray(), ok);
        for (int k = 0; k < 4; k++) put(bx, NULL, cJSON_CreateNumber(round(b[k] * 1e4) / 1e4), ok);
        put(rs, NULL, x, ok);
    }
}

char *ac_caption_json(const char *image, const ac_caption *c, const ac_model *m, const char *const *overlays,
                      int n_overlays, int attention, int grid_h, int grid_w) {
    const ac_vocab *v = m->vocab;
    int okv = 1, *ok = &okv;
    char *text = ac_caption_text(c, v);
    cJSON *o = cJSON_CreateObject();
    if (!text || !o) okv = 0;
    put(o, "image", cJSON_CreateString(image), ok);
    put(o, "caption", cJSON_CreateString(text ? text : ""), ok);
    free(text);
    cJSON *tok = put(o, "tokens", cJSON_CreateArray(), ok);
    for (int i = 0; i < c->n; i++) put(tok, NULL, cJSON_CreateString(ac_caption_word(c, v, i)), ok);
    put(o, "logprob", cJSON_CreateNumber(c->logprob), ok);
    if (c->word_logp) { /* each token's log p given the ones before, and <end>'s last */
        cJSON *wl = put(o, "token_logprobs", cJSON_CreateArray(), ok);
        for (int i = 0; i <= c->n; i++) put(wl, NULL, cJSON_CreateNumber(round(c->word_logp[i] * 1e4) / 1e4), ok);
    }
    if (c->copied) { /* a copy model: how much of each token (and <end>) came from a region's category */
        cJSON *cp = put(o, "copied", cJSON_CreateArray(), ok);
        for (int i = 0; i <= c->n; i++) put(cp, NULL, cJSON_CreateNumber(round(c->copied[i] * 1e3) / 1e3), ok);
    }
    put(o, "score", cJSON_CreateNumber(c->score), ok); /* the ranking score, as --nbest prints it */
    add_naming(o, c, ok);
    if (c->n_alt) add_alternatives(o, c, v, ok);
    add_regions(o, c, &m->imagenet, ok);
    cJSON *ovs = put(o, "overlays", cJSON_CreateArray(), ok);
    for (int i = 0; i < n_overlays; i++) put(ovs, NULL, cJSON_CreateString(overlays[i]), ok);
    char *raw = NULL;
    if (c->grid_h > 0 && c->grid_w > 0) grid_h = c->grid_h, grid_w = c->grid_w; /* the photo's own grid */
    if (attention) {
        if (!(raw = attention_text(c, grid_h * grid_w, 0))) okv = 0;
        else put(o, "attention", cJSON_CreateRaw(raw), ok);
        int g[2] = {grid_h, grid_w};
        put(o, "grid", cJSON_CreateIntArray(g, 2), ok);
        char *rr = c->n_regions && c->regions ? attention_text(c, grid_h * grid_w, 1) : NULL;
        if (c->n_regions && c->regions && !rr) okv = 0;
        else if (rr) put(o, "region_attention", cJSON_CreateRaw(rr), ok);
        free(rr);
    }
    char *s = okv ? cJSON_PrintUnformatted(o) : NULL;
    free(raw);
    cJSON_Delete(o);
    return s;
}
