/* caption_json.c: one photo's caption as the JSON object `attncap caption --json` prints (captioner.h). */
#include "attncap/captioner.h"
#include "attncap/objects.h"
#include "attncap/regions.h"
#include "alloc_internal.h"

#include <cjson/cJSON.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Tags, confidence and whether the caption was replaced by a description (naming.h). */
static void add_naming(cJSON *o, const ac_caption *c) {
    cJSON *unk = NULL; /* a given caption's words outside the vocabulary */
    for (int k = 0; c->labels && k < c->n; k++)
        if (c->words[k] == AC_UNK && c->labels[k] && strcmp(c->labels[k], "<unk>")) {
            if (!unk) unk = cJSON_AddArrayToObject(o, "unknown_words");
            cJSON_AddItemToArray(unk, cJSON_CreateString(c->labels[k]));
        }
    if (isfinite(c->confidence) && c->confidence > 0) cJSON_AddNumberToObject(o, "confidence", c->confidence);
    if (c->described) cJSON_AddTrueToObject(o, "described");
    if (!c->n_tags) return;
    cJSON *tags = cJSON_AddArrayToObject(o, "tags");
    for (int i = 0; i < c->n_tags; i++) {
        const ac_caption_tag *t = &c->tags[i];
        cJSON *x = cJSON_CreateObject();
        cJSON_AddStringToObject(x, "word", t->word);
        if (t->cls[0]) cJSON_AddStringToObject(x, "class", t->cls);
        cJSON_AddNumberToObject(x, "prob", round(t->prob * 1e4) / 1e4);
        cJSON_AddBoolToObject(x, "named", t->named);
        cJSON_AddBoolToObject(x, "forced", t->forced);
        if (isfinite(t->precision)) cJSON_AddNumberToObject(x, "precision", round(t->precision * 1e4) / 1e4);
        if (!t->in_vocab) cJSON_AddFalseToObject(x, "in_vocab");
        cJSON_AddItemToArray(tags, x);
    }
}

static void add_alternatives(cJSON *o, const ac_caption *c, const ac_vocab *v) {
    cJSON *alts = cJSON_AddArrayToObject(o, "alternatives");
    for (int a = 0; a < c->n_alt; a++) {
        const ac_caption *ca = &c->alt[a];
        char *t = ac_caption_text(ca, v);
        cJSON *x = cJSON_CreateObject();
        cJSON_AddStringToObject(x, "caption", t ? t : "");
        cJSON *tt = cJSON_AddArrayToObject(x, "tokens");
        for (int i = 0; i < ca->n; i++) cJSON_AddItemToArray(tt, cJSON_CreateString(ac_caption_word(ca, v, i)));
        cJSON_AddNumberToObject(x, "logprob", ca->logprob);
        cJSON_AddNumberToObject(x, "score", ca->score);
        cJSON_AddItemToArray(alts, x);
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
static void add_regions(cJSON *o, const ac_caption *c) {
    if (!c->n_regions || !c->regions) return;
    cJSON *rs = cJSON_AddArrayToObject(o, "regions");
    for (int r = 0; r < c->n_regions; r++) {
        const ac_region *g = &c->regions[r];
        cJSON *x = cJSON_CreateObject();
        cJSON_AddStringToObject(x, "label", ac_object_name(g->category));
        cJSON_AddNumberToObject(x, "score", round(g->score * 1e4) / 1e4);
        const double b[4] = {g->x0, g->y0, g->x1, g->y1};
        cJSON *bx = cJSON_AddArrayToObject(x, "box");
        for (int k = 0; k < 4; k++) cJSON_AddItemToArray(bx, cJSON_CreateNumber(round(b[k] * 1e4) / 1e4));
        cJSON_AddItemToArray(rs, x);
    }
}

char *ac_caption_json(const char *image, const ac_caption *c, const ac_vocab *v, const char *const *overlays,
                      int n_overlays, int attention, int grid_h, int grid_w) {
    char *text = ac_caption_text(c, v);
    cJSON *o = cJSON_CreateObject();
    cJSON_AddStringToObject(o, "image", image);
    cJSON_AddStringToObject(o, "caption", text ? text : "");
    free(text);
    cJSON *tok = cJSON_AddArrayToObject(o, "tokens");
    for (int i = 0; i < c->n; i++) cJSON_AddItemToArray(tok, cJSON_CreateString(ac_caption_word(c, v, i)));
    cJSON_AddNumberToObject(o, "logprob", c->logprob);
    if (c->word_logp) { /* each token's log p given the ones before, and <end>'s last */
        cJSON *wl = cJSON_AddArrayToObject(o, "token_logprobs");
        for (int i = 0; i <= c->n; i++) cJSON_AddItemToArray(wl, cJSON_CreateNumber(round(c->word_logp[i] * 1e4) / 1e4));
    }
    cJSON_AddNumberToObject(o, "score", c->score); /* the ranking score, as --nbest prints it */
    add_naming(o, c);
    if (c->n_alt) add_alternatives(o, c, v);
    add_regions(o, c);
    cJSON *ovs = cJSON_AddArrayToObject(o, "overlays");
    for (int i = 0; i < n_overlays; i++) cJSON_AddItemToArray(ovs, cJSON_CreateString(overlays[i]));
    char *raw = NULL;
    if (c->grid_h > 0 && c->grid_w > 0) grid_h = c->grid_h, grid_w = c->grid_w; /* the photo's own grid */
    if (attention) {
        if ((raw = attention_text(c, grid_h * grid_w, 0))) cJSON_AddItemToObject(o, "attention", cJSON_CreateRaw(raw));
        int g[2] = {grid_h, grid_w};
        cJSON_AddItemToObject(o, "grid", cJSON_CreateIntArray(g, 2));
        char *rr = c->n_regions && c->regions ? attention_text(c, grid_h * grid_w, 1) : NULL;
        if (rr) cJSON_AddItemToObject(o, "region_attention", cJSON_CreateRaw(rr));
        free(rr);
    }
    char *s = cJSON_PrintUnformatted(o);
    free(raw);
    cJSON_Delete(o);
    return s;
}
