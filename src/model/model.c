/* model.c: the model file (format in model.h): the only code that knows how a decoder, its
 * vocabulary and its settings are stored. Loading trusts nothing: every shape is checked against the
 * config, the vocabulary size against V, every value must be finite, and unknown tensors are refused
 * (a checkpoint or a feature shard passed by mistake gives a clear message instead of a silently
 * wrong model). */
#include <cjson/cJSON.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "attncap/model.h"
#include "attncap/imagenet_words.h"
#include "attncap/naming_opts.h"
#include "attncap/objects.h"
#include "attncap/safetensors.h"
#include "decoder_internal.h"
#include "alloc_internal.h"
#include "model_internal.h"

#define MODEL_FORMAT "attncap-decoder-1"

/* A float as the shortest decimal that reads back as the same float (0.01, not 0.00999999977648258). */
static double short_float(float x) {
    char b[32];
    for (int digits = 6; digits <= 9; digits++) {
        snprintf(b, sizeof b, "%.*g", digits, x);
        if ((float)strtod(b, NULL) == x) break;
    }
    return strtod(b, NULL);
}

char *ac_decoder_config_to_json(const ac_decoder_config *c) {
    cJSON *o = cJSON_CreateObject();
    if (!o) return NULL;
    int ok = 1; /* every member added (cJSON leaves out one it has no memory for) */
    ok &= !!cJSON_AddNumberToObject(o, "vocab", c->vocab);
    ok &= !!cJSON_AddNumberToObject(o, "embed", c->embed);
    ok &= !!cJSON_AddNumberToObject(o, "hidden", c->hidden);
    ok &= !!cJSON_AddNumberToObject(o, "att", c->att);
    ok &= !!cJSON_AddNumberToObject(o, "dim", c->dim);
    ok &= !!cJSON_AddNumberToObject(o, "n_ann", c->n_ann);
    ok &= !!cJSON_AddNumberToObject(o, "grid_h", c->grid_h);
    ok &= !!cJSON_AddNumberToObject(o, "grid_w", c->grid_w);
    ok &= !!cJSON_AddNumberToObject(o, "dropout", c->dropout);
    ok &= !!cJSON_AddNumberToObject(o, "lambda", c->lambda);
    /* Only when not additive: the additive models (all files before score functions) keep their bytes. */
    if (c->attention != AC_ATTENTION_ADDITIVE) ok &= !!cJSON_AddStringToObject(o, "attention", ac_decoder_attention_name(c->attention));
    if (c->heads > 1) ok &= !!cJSON_AddNumberToObject(o, "heads", c->heads);
    /* Only for a transformer: the LSTMs keep their bytes. */
    if (c->decoder != AC_DECODER_LSTM) {
        ok &= !!cJSON_AddStringToObject(o, "decoder", ac_decoder_kind_name(c->decoder));
        ok &= !!cJSON_AddNumberToObject(o, "layers", c->layers);
    }
    if (c->attention_mode != AC_ATTENTION_SOFT) { /* likewise: soft files keep their bytes */
        ok &= !!cJSON_AddStringToObject(o, "attention_mode", ac_decoder_attention_mode_name(c->attention_mode));
        ok &= !!cJSON_AddNumberToObject(o, "reinforce", short_float(c->reinforce));
        ok &= !!cJSON_AddNumberToObject(o, "entropy", short_float(c->entropy));
        ok &= !!cJSON_AddNumberToObject(o, "expected_context", short_float(c->expected));
    }
    if (c->regions > 0) { /* likewise: models without regions keep their bytes */
        ok &= !!cJSON_AddNumberToObject(o, "regions", c->regions);
        ok &= !!cJSON_AddNumberToObject(o, "region_scale", short_float(c->region_scale));
        ok &= !!cJSON_AddNumberToObject(o, "region_min_score", short_float(c->region_min_score));
    }
    if (c->copy) ok &= !!cJSON_AddNumberToObject(o, "copy", c->copy);
    if (c->absent) ok &= !!cJSON_AddNumberToObject(o, "absent", c->absent);
    if (c->object_init) ok &= !!cJSON_AddNumberToObject(o, "object_init", c->object_init);
    if (c->imagenet_words) ok &= !!cJSON_AddNumberToObject(o, "imagenet_words", c->imagenet_words);
    char *s = ok ? cJSON_PrintUnformatted(o) : NULL;
    cJSON_Delete(o);
    return s;
}

int ac_decoder_config_from_json(const char *json, ac_decoder_config *c, ac_err *err) {
    memset(c, 0, sizeof *c);
    cJSON *o = cJSON_Parse(json);
    if (!o || !cJSON_IsObject(o)) {
        cJSON_Delete(o);
        return ac_errf(err, "config is not a JSON object");
    }
    static const char *const known[] = {"vocab", "embed", "hidden", "att", "dim", "n_ann", "grid_h", "grid_w",
                                        "dropout", "lambda", "attention", "heads", "decoder", "layers",
                                        "attention_mode", "reinforce", "entropy", "expected_context", "regions",
                                        "region_scale", "region_min_score", "copy", "absent", "object_init",
                                        "imagenet_words"};
    const cJSON *item;
    cJSON_ArrayForEach(item, o) {
        size_t i = 0;
        while (i < sizeof known / sizeof *known && strcmp(known[i], item->string)) i++;
        if (i == sizeof known / sizeof *known) {
            const int rc = ac_errf(err, "config: unknown key '%.80s'", item->string);
            cJSON_Delete(o);
            return rc;
        }
    }
    struct { const char *k; int *v; } ints[] = {
        {"vocab", &c->vocab}, {"embed", &c->embed},   {"hidden", &c->hidden}, {"att", &c->att},
        {"dim", &c->dim},     {"n_ann", &c->n_ann},   {"grid_h", &c->grid_h}, {"grid_w", &c->grid_w},
    };
    for (size_t i = 0; i < sizeof ints / sizeof *ints; i++) {
        cJSON *x = cJSON_GetObjectItemCaseSensitive(o, ints[i].k);
        if (!cJSON_IsNumber(x) || x->valuedouble != floor(x->valuedouble) || fabs(x->valuedouble) > 1e9) {
            cJSON_Delete(o);
            return ac_errf(err, "config: '%s' missing or not an integer", ints[i].k);
        }
        *ints[i].v = (int)x->valuedouble;
    }
    struct { const char *k; float *v; } fl[] = {{"dropout", &c->dropout}, {"lambda", &c->lambda}};
    for (size_t i = 0; i < sizeof fl / sizeof *fl; i++) {
        cJSON *x = cJSON_GetObjectItemCaseSensitive(o, fl[i].k);
        if (!cJSON_IsNumber(x)) {
            cJSON_Delete(o);
            return ac_errf(err, "config: '%s' missing or not a number", fl[i].k);
        }
        *fl[i].v = (float)x->valuedouble;
    }
    const cJSON *nh = cJSON_GetObjectItemCaseSensitive(o, "heads"); /* absent: one */
    if (nh && (!cJSON_IsNumber(nh) || nh->valuedouble != floor(nh->valuedouble) || fabs(nh->valuedouble) > 1e9)) {
        cJSON_Delete(o);
        return ac_errf(err, "config: 'heads' is not an integer");
    }
    c->heads = nh && nh->valuedouble != 1 ? (int)nh->valuedouble : 0; /* 1 is the default 0: one head */
    const cJSON *at = cJSON_GetObjectItemCaseSensitive(o, "attention"); /* absent: additive */
    c->attention = at ? ac_decoder_attention_parse(cJSON_GetStringValue(at)) : AC_ATTENTION_ADDITIVE;
    if (c->attention < 0) {
        cJSON_Delete(o);
        return ac_errf(err, "config: 'attention' is not one of additive, dot, scaled-dot, general, cosine");
    }
    const cJSON *dk = cJSON_GetObjectItemCaseSensitive(o, "decoder"), *ly = cJSON_GetObjectItemCaseSensitive(o, "layers");
    c->decoder = dk ? ac_decoder_kind_parse(cJSON_GetStringValue(dk)) : AC_DECODER_LSTM; /* absent: the LSTM */
    if (c->decoder < 0) {
        cJSON_Delete(o);
        return ac_errf(err, "config: 'decoder' is not one of lstm, transformer");
    }
    if (ly && (!cJSON_IsNumber(ly) || ly->valuedouble != floor(ly->valuedouble) || fabs(ly->valuedouble) > 1e9)) {
        cJSON_Delete(o);
        return ac_errf(err, "config: 'layers' is not an integer");
    }
    c->layers = ly ? (int)ly->valuedouble : 0;
    const cJSON *md = cJSON_GetObjectItemCaseSensitive(o, "attention_mode"); /* absent: soft */
    c->attention_mode = md ? ac_decoder_attention_mode_parse(cJSON_GetStringValue(md)) : AC_ATTENTION_SOFT;
    if (c->attention_mode < 0) {
        cJSON_Delete(o);
        return ac_errf(err, "config: 'attention_mode' is not soft or hard");
    }
    struct { const char *k; float *v; } hp[] = {{"reinforce", &c->reinforce}, {"entropy", &c->entropy},
                                              {"expected_context", &c->expected}};
    for (size_t i = 0; c->attention_mode == AC_ATTENTION_HARD && i < sizeof hp / sizeof *hp; i++) {
        cJSON *x = cJSON_GetObjectItemCaseSensitive(o, hp[i].k);
        if (!cJSON_IsNumber(x)) {
            cJSON_Delete(o);
            return ac_errf(err, "config: hard attention's '%s' missing or not a number", hp[i].k);
        }
        *hp[i].v = (float)x->valuedouble;
    }
    const cJSON *rg = cJSON_GetObjectItemCaseSensitive(o, "regions"); /* absent: none */
    if (rg) {
        const cJSON *sc = cJSON_GetObjectItemCaseSensitive(o, "region_scale"),
                    *ms = cJSON_GetObjectItemCaseSensitive(o, "region_min_score");
        if (!cJSON_IsNumber(rg) || rg->valuedouble != floor(rg->valuedouble) || fabs(rg->valuedouble) > 1e9 ||
            !cJSON_IsNumber(sc) || !cJSON_IsNumber(ms)) {
            cJSON_Delete(o);
            return ac_errf(err, "config: 'regions' needs integer regions and numbers region_scale, region_min_score");
        }
        c->regions = (int)rg->valuedouble, c->region_scale = (float)sc->valuedouble, c->region_min_score = (float)ms->valuedouble;
    }
    const cJSON *cp = cJSON_GetObjectItemCaseSensitive(o, "copy"); /* absent: none */
    if (cp && (!cJSON_IsNumber(cp) || (cp->valuedouble != 0 && cp->valuedouble != 1 && cp->valuedouble != 2))) {
        cJSON_Delete(o);
        return ac_errf(err, "config: 'copy' is 0, 1 or 2");
    }
    c->copy = cp ? (int)cp->valuedouble : 0;
    const cJSON *ab = cJSON_GetObjectItemCaseSensitive(o, "absent"); /* absent: none */
    if (ab && (!cJSON_IsNumber(ab) || (ab->valuedouble != 0 && ab->valuedouble != 1))) {
        cJSON_Delete(o);
        return ac_errf(err, "config: 'absent' is 0 or 1");
    }
    c->absent = ab ? (int)ab->valuedouble : 0;
    const cJSON *oi = cJSON_GetObjectItemCaseSensitive(o, "object_init"); /* absent: none */
    if (oi && (!cJSON_IsNumber(oi) || (oi->valuedouble != 0 && oi->valuedouble != 1))) {
        cJSON_Delete(o);
        return ac_errf(err, "config: 'object_init' is 0 or 1");
    }
    c->object_init = oi ? (int)oi->valuedouble : 0;
    const cJSON *iw = cJSON_GetObjectItemCaseSensitive(o, "imagenet_words"); /* absent: none */
    if (iw && (!cJSON_IsNumber(iw) || iw->valuedouble != floor(iw->valuedouble) || fabs(iw->valuedouble) > 1e9)) {
        cJSON_Delete(o);
        return ac_errf(err, "config: 'imagenet_words' is not an integer");
    }
    c->imagenet_words = iw ? (int)iw->valuedouble : 0;
    cJSON_Delete(o);
    return ac_decoder_check_config(c, err) ? ac_err_prefix(err, "config") : 0;
}

int ac_model_copy_words(ac_model *m, ac_err *err) {
    const int V = m->dec.cfg.vocab;
    signed char *word_object = ac_malloc((size_t)V);
    short *word_category = ac_malloc(sizeof *word_category * (size_t)V);
    if (!word_object || !word_category) {
        free(word_object), free(word_category);
        return ac_errf(err, "out of memory");
    }
    ac_objects_of_vocab(m->vocab, word_object);
    for (int w = 0; w < V; w++) word_category[w] = word_object[w];
    ac_imagenet_words_categories(&m->imagenet, word_category);
    const int rc = ac_decoder_set_copy_words(&m->dec, word_category, err);
    free(word_object), free(word_category);
    return rc;
}

/* The index of the first infinity or NaN (exponent bits all ones) among n values of type T stored
 * at x, or n. Whole blocks of 1,024 are tested without an early exit, so that the compiler
 * vectorizes the test (11 M weights: the one-value loop was 3 % of a one-photo caption); from the
 * first block that holds one, and for the tail, one value at a time. float32 through its bits
 * (memcpy: no aliasing), float16 as stored, without widening. */
#define FIRST_NON_FINITE(name, T, EXPONENT)                                          \
    static size_t name(const void *x, size_t n) {                                    \
        enum { BLOCK = 1024 };                                                       \
        const unsigned char *b = x;                                                  \
        size_t i0 = 0;                                                               \
        for (; i0 + BLOCK <= n; i0 += BLOCK) {                                       \
            T bad = 0;                                                               \
            for (size_t i = 0; i < BLOCK; i++) {                                     \
                T u;                                                                 \
                memcpy(&u, b + (i0 + i) * sizeof u, sizeof u);                       \
                bad |= (u & EXPONENT) == EXPONENT;                                   \
            }                                                                        \
            if (bad) break;                                                          \
        }                                                                            \
        for (size_t i = i0; i < n; i++) {                                            \
            T u;                                                                     \
            memcpy(&u, b + i * sizeof u, sizeof u);                                  \
            if ((u & EXPONENT) == EXPONENT) return i;                                \
        }                                                                            \
        return n;                                                                    \
    }
FIRST_NON_FINITE(first_non_finite, uint32_t, 0x7f800000u)
FIRST_NON_FINITE(first_non_finite_f16, uint16_t, 0x7c00u)
#undef FIRST_NON_FINITE

/* Reads the decoder tensors of an open safetensors file into dec (allocated for cfg). for_captions:
 * the weights the inference step streams, stored as F16, go straight into its float16 copies
 * (ac_decoder_take_f16) without float32 ones. */
static int read_tensors(const ac_st_file *f, const char *path, const ac_decoder_config *cfg, ac_decoder *dec,
                        int for_captions, ac_err *err) {
    ac_dec_tensor t[AC_DEC_MAX_TENSORS];
    const int nt = ac_decoder_tensors(cfg, t, NULL);
    for (int i = 0; i < nt; i++) {
        const char *name = t[i].name;
        const ac_st_tensor *st = ac_st_find(f, name);
        if (!st) return ac_errf(err, "%s: tensor '%s' missing", path, name);
        if (st->dtype != AC_ST_F32 && st->dtype != AC_ST_F16)
            return ac_errf(err, "%s: tensor '%s' must be F32 or F16", path, name);
        int ok = t[i].rows == 1 ? (st->ndim == 1 && st->shape[0] == t[i].cols)
                                : (st->ndim == 2 && st->shape[0] == t[i].rows && st->shape[1] == t[i].cols);
        if (!ok) {
            char got[96] = "";
            int n = 0;
            for (int d = 0; d < st->ndim && n < 80; d++)
                n += snprintf(got + n, sizeof got - (size_t)n, "%s%lld", d ? ", " : "", (long long)st->shape[d]);
            if (t[i].rows == 1)
                return ac_errf(err, "%s: tensor '%s' has shape [%s], the config needs [%d]", path, name, got, t[i].cols);
            return ac_errf(err, "%s: tensor '%s' has shape [%s], the config needs [%d, %d]", path, name, got, t[i].rows,
                           t[i].cols);
        }
        size_t n = (size_t)t[i].rows * t[i].cols;
        if (for_captions && st->dtype == AC_ST_F16 && ((uintptr_t)st->data & 1) == 0) {
            const uint16_t *h = st->data;
            const int taken = ac_decoder_take_f16(dec, name, h);
            if (taken < 0) return ac_errf(err, "%s: out of memory", path);
            const size_t j = taken ? first_non_finite_f16(h, n) : n;
            if (j < n) return ac_errf(err, "%s: tensor '%s' has a non-finite value at %zu", path, name, j);
            if (taken) continue;
        }
        float *dst = dec->params + t[i].offset;
        if (ac_st_to_f32(st, dst, n, path, err)) return -1;
        const size_t j = first_non_finite(dst, n);
        if (j < n) return ac_errf(err, "%s: tensor '%s' has a non-finite value at %zu", path, name, j);
    }
    return 0;
}

/* decode's "repeatable": the words people say twice in one caption often enough (`attncap tune
 * --repeats`); every other real word gets no_repeat[id] = 1. Words the vocabulary lacks are skipped
 * (a list made from other captions may name them). "and", when it may repeat, is marked a conjunction
 * (beam.h AC_REPEAT_CONJUNCTION: no "white and white"), "a", "an" and "the" articles
 * (AC_REPEAT_ARTICLE: no "a sink and a sink"). */
static int parse_repeatable(const cJSON *r, const ac_vocab *v, const char *path, unsigned char **out, ac_err *err) {
    const int V = ac_vocab_size(v);
    if (!cJSON_IsArray(r)) return ac_errf(err, "%s: metadata 'decode': repeatable must be an array of words", path);
    if (!(*out = ac_malloc((size_t)V))) return ac_errf(err, "%s: out of memory", path);
    for (int w = 0; w < V; w++) (*out)[w] = w > AC_UNK;
    int i = 0;
    for (const cJSON *x = r->child; x; x = x->next, i++) {
        if (!cJSON_IsString(x)) {
            free(*out), *out = NULL;
            return ac_errf(err, "%s: metadata 'decode': repeatable[%d] is not a word", path, i);
        }
        const int id = ac_vocab_id(v, x->valuestring);
        if (id > AC_UNK) (*out)[id] = 0;
    }
    const int and_id = ac_vocab_id(v, "and");
    if (and_id > AC_UNK && (*out)[and_id] == 0) (*out)[and_id] = AC_REPEAT_CONJUNCTION;
    const char *articles[] = {"a", "an", "the"};
    for (int k = 0; k < 3; k++) {
        const int id = ac_vocab_id(v, articles[k]);
        if (id > AC_UNK && (*out)[id] == 0) (*out)[id] = AC_REPEAT_ARTICLE;
    }
    return 0;
}

/* The decoding settings recorded by `attncap tune` over the defaults. Ranges as tune's own. */
static int parse_decode(const char *json, const char *path, const ac_vocab *v, ac_beam_opts *o,
                        unsigned char **no_repeat, ac_err *err) {
    *o = ac_beam_defaults();
    if (!json) return 0;
    cJSON *d = cJSON_Parse(json);
    int rc = cJSON_IsObject(d) ? 0 : ac_errf(err, "%s: metadata 'decode' is not a JSON object", path);
    const struct { const char *key; double lo, hi; int integer; } f[] = {
        {"beam", 1, 100, 1}, {"max_len", 1, 200, 1}, {"len_alpha", 0, 10, 0}};
    double val[3] = {o->beam, o->max_len, o->len_alpha};
    for (int i = 0; !rc && i < 3; i++) {
        const cJSON *x = cJSON_GetObjectItemCaseSensitive(d, f[i].key);
        if (!x) continue;
        if (!cJSON_IsNumber(x) || !(x->valuedouble >= f[i].lo && x->valuedouble <= f[i].hi) ||
            (f[i].integer && x->valuedouble != floor(x->valuedouble)))
            rc = ac_errf(err, "%s: metadata 'decode': %s must be %s in %g..%g", path, f[i].key,
                         f[i].integer ? "an integer" : "a number", f[i].lo, f[i].hi);
        else val[i] = x->valuedouble;
    }
    const cJSON *r = rc ? NULL : cJSON_GetObjectItemCaseSensitive(d, "repeatable");
    if (r && !(rc = parse_repeatable(r, v, path, no_repeat, err))) o->no_repeat = *no_repeat;
    cJSON_Delete(d);
    o->beam = (int)val[0], o->max_len = (int)val[1], o->len_alpha = (float)val[2];
    return rc;
}

/* The words' counts in the captions of the photos the model trained on (metadata "vocab_counts",
 * written by the trainer): *out = NULL when absent, else V counts. */
static int parse_paired_counts(const char *json, const char *path, int V, int **out, ac_err *err) {
    *out = NULL;
    if (!json) return 0;
    cJSON *j = cJSON_Parse(json);
    const cJSON *p = cJSON_GetObjectItemCaseSensitive(j, "paired");
    int rc = cJSON_IsArray(p) && cJSON_GetArraySize(p) == V
                 ? 0
                 : ac_errf(err, "%s: metadata 'vocab_counts': \"paired\" must be an array of %d counts", path, V);
    if (!rc && !(*out = ac_malloc(sizeof **out * (size_t)(V > 0 ? V : 1)))) rc = ac_errf(err, "%s: out of memory", path);
    int i = 0;
    for (const cJSON *x = rc ? NULL : p->child; x; x = x->next, i++) {
        if (!cJSON_IsNumber(x) || !(x->valuedouble >= 0 && x->valuedouble <= 2e9) || x->valuedouble != floor(x->valuedouble)) {
            rc = ac_errf(err, "%s: metadata 'vocab_counts': count %d is not an integer >= 0", path, i);
            break;
        }
        (*out)[i] = (int)x->valuedouble;
    }
    cJSON_Delete(j);
    if (rc) free(*out), *out = NULL;
    return rc;
}

/* The metadata keys a model file may hold (models/README.md): any other is refused, not ignored. */
static int known_meta(const char *key) {
    static const char *const keys[] = {"format", "config", "vocab", "encoder", "training", "vocab_counts", "decode",
                                       "tag_precision", "naming", "confidence", "training_photos", "imagenet_words"};
    for (size_t i = 0; i < sizeof keys / sizeof *keys; i++)
        if (!strcmp(keys[i], key)) return 1;
    return 0;
}

static int load(const char *path, ac_model *m, int for_captions, ac_err *err) {
    memset(m, 0, sizeof *m);
    ac_st_file f;
    if (ac_st_read(path, &f, err)) return -1;
    const char *fmt = ac_st_meta(&f, "format");
    const char *cfg_json = ac_st_meta(&f, "config");
    const char *voc = ac_st_meta(&f, "vocab");
    const char *enc = ac_st_meta(&f, "encoder");
    const char *training = ac_st_meta(&f, "training");
    ac_decoder_config cfg;
    int rc = -1;
    if (!fmt || strcmp(fmt, MODEL_FORMAT)) {
        ac_errf(err, "%s: not an attncap decoder model (metadata format is %s%s%s, expected \"%s\")", path,
                fmt ? "\"" : "", fmt ? fmt : "missing", fmt ? "\"" : "", MODEL_FORMAT);
        goto done;
    }
    if (!cfg_json || !voc || !enc) {
        ac_errf(err, "%s: metadata '%s' missing", path, !cfg_json ? "config" : !voc ? "vocab" : "encoder");
        goto done;
    }
    if (ac_decoder_config_from_json(cfg_json, &cfg, err)) {
        ac_err_prefix(err, "%s", path);
        goto done;
    }
    cJSON *ej = cJSON_Parse(enc);
    int enc_ok = ej && cJSON_IsObject(ej);
    cJSON_Delete(ej);
    if (!enc_ok) {
        ac_errf(err, "%s: metadata 'encoder' is not a JSON object", path);
        goto done;
    }
    const char *conf = ac_st_meta(&f, "confidence"), *naming = ac_st_meta(&f, "naming");
    if (conf && ac_confidence_from_json(conf, &m->confidence, err)) {
        ac_err_prefix(err, "%s: metadata 'confidence'", path);
        goto done;
    }
    const char *tag_prec = ac_st_meta(&f, "tag_precision");
    if (tag_prec && ac_tag_precision_from_json(tag_prec, &m->tag_precision, err)) {
        ac_err_prefix(err, "%s: metadata 'tag_precision'", path);
        goto done;
    }
    if (naming && ac_naming_check_json(naming, err)) {
        ac_err_prefix(err, "%s: metadata 'naming'", path);
        goto done;
    }
    const char *photos = ac_st_meta(&f, "training_photos");
    int n_photos;
    if (photos && ac_training_photos_parse(photos, path, NULL, &n_photos, err)) goto done;
    for (int i = 0; i < f.n_meta; i++)
        if (!known_meta(f.meta_keys[i])) {
            ac_errf(err, "%s: unknown metadata '%.80s' (a newer attncap's model, or a damaged file)", path, f.meta_keys[i]);
            goto done;
        }
    if (naming && !(m->naming_json = ac_strdup(naming))) {
        ac_errf(err, "%s: out of memory", path);
        goto done;
    }
    if (ac_vocab_from_json(voc, &m->vocab, err)) {
        ac_err_prefix(err, "%s: vocab", path);
        goto done;
    }
    if (ac_vocab_size(m->vocab) != cfg.vocab) {
        ac_errf(err, "%s: vocabulary has %d words but the config says %d", path, ac_vocab_size(m->vocab), cfg.vocab);
        goto done;
    }
    if (parse_decode(ac_st_meta(&f, "decode"), path, m->vocab, &m->decode, &m->no_repeat, err)) goto done;
    if (parse_paired_counts(ac_st_meta(&f, "vocab_counts"), path, cfg.vocab, &m->paired_counts, err)) goto done;
    ac_dec_tensor t[AC_DEC_MAX_TENSORS];
    const int nt = ac_decoder_tensors(&cfg, t, NULL);
    if (f.n_tensors != nt) {
        for (int i = 0; i < f.n_tensors; i++) {
            int known = 0;
            for (int j = 0; j < nt; j++) known |= !strcmp(f.tensors[i].name, t[j].name);
            if (!known) {
                ac_errf(err, "%s: unexpected tensor '%s' (not a decoder model?)", path, f.tensors[i].name);
                goto done;
            }
        }
    }
    if (ac_decoder_alloc(&m->dec, &cfg, err)) {
        ac_err_prefix(err, "%s", path);
        goto done;
    }
    if (read_tensors(&f, path, &cfg, &m->dec, for_captions, err)) goto done;
    const char *imagenet = ac_st_meta(&f, "imagenet_words");
    if (!imagenet != !cfg.imagenet_words) {
        ac_errf(err, "%s: config 'imagenet_words' is %d but metadata 'imagenet_words' is %s", path, cfg.imagenet_words,
                imagenet ? "there" : "missing");
        goto done;
    }
    if (imagenet && ac_imagenet_words_parse(imagenet, m->vocab, cfg.imagenet_words, &m->imagenet, err)) {
        ac_err_prefix(err, "%s: metadata", path);
        goto done;
    }
    if (cfg.copy && ac_model_copy_words(m, err)) {
        ac_err_prefix(err, "%s", path);
        goto done;
    }
    m->encoder_json = ac_strdup(enc);
    m->path = ac_strdup(path);
    m->training_json = training ? ac_strdup(training) : NULL;
    if (!m->encoder_json || !m->path || (training && !m->training_json)) {
        ac_errf(err, "%s: out of memory", path);
        goto done;
    }
    rc = 0;
done:
    ac_st_free(&f);
    if (rc) ac_model_free(m);
    return rc;
}

int ac_model_load(const char *path, ac_model *m, ac_err *err) { return load(path, m, 0, err); }

int ac_model_load_for_captions(const char *path, ac_model *m, ac_err *err) { return load(path, m, 1, err); }

/* Adds the decoder's tensors to a writer; f16 buffers are allocated into *f16buf (caller frees). */
static int add_tensors(const ac_decoder *dec, ac_st_writer *w, int fp16, uint16_t **f16buf, ac_err *err) {
    ac_dec_tensor t[AC_DEC_MAX_TENSORS];
    const int nt = ac_decoder_tensors(&dec->cfg, t, NULL);
    *f16buf = NULL;
    if (fp16) {
        *f16buf = ac_malloc(sizeof(uint16_t) * dec->n_params);
        if (!*f16buf) return ac_errf(err, "out of memory");
        ac_f32_to_f16_n(dec->params, *f16buf, dec->n_params);
    }
    for (int i = 0; i < nt; i++) {
        const char *name = t[i].name;
        int64_t shape[2] = {t[i].rows, t[i].cols};
        int nd = t[i].rows == 1 ? 1 : 2;
        const void *data = fp16 ? (const void *)(*f16buf + t[i].offset) : (const void *)(dec->params + t[i].offset);
        if (ac_st_writer_add(w, name, fp16 ? AC_ST_F16 : AC_ST_F32, nd, nd == 1 ? shape + 1 : shape, data, err))
            return -1;
    }
    return 0;
}

int ac_model_save(const ac_model *m, const char *path, int fp16, const char *const *extra_meta, ac_err *err) {
    if (!m->vocab || ac_vocab_size(m->vocab) != m->dec.cfg.vocab)
        return ac_errf(err, "%s: model vocabulary does not match the decoder's size", path);
    if (m->dec.f16_only)
        return ac_errf(err, "%s: the model was loaded for captioning (float16 weights only): load it with "
                            "ac_model_load to save it", path);
    ac_st_writer w;
    ac_st_writer_init(&w);
    uint16_t *f16 = NULL;
    char *cfg = ac_decoder_config_to_json(&m->dec.cfg), *voc = ac_vocab_to_json(m->vocab);
    int rc = -1;
    if (!cfg || !voc) {
        ac_errf(err, "%s: out of memory", path);
        goto done;
    }
    if (add_tensors(&m->dec, &w, fp16, &f16, err)) goto done;
    if (ac_st_writer_meta(&w, "format", MODEL_FORMAT, err) || ac_st_writer_meta(&w, "config", cfg, err) ||
        ac_st_writer_meta(&w, "vocab", voc, err) ||
        ac_st_writer_meta(&w, "encoder", m->encoder_json ? m->encoder_json : "{}", err))
        goto done;
    for (int i = 0; extra_meta && extra_meta[i] && extra_meta[i + 1]; i += 2)
        if (ac_st_writer_meta(&w, extra_meta[i], extra_meta[i + 1], err)) goto done;
    if (m->imagenet.n) { /* the model's own record, as its config counts it */
        char *iw = ac_imagenet_words_json(&m->imagenet, m->vocab);
        const int bad = !iw ? ac_errf(err, "out of memory") : ac_st_writer_meta(&w, "imagenet_words", iw, err);
        free(iw);
        if (bad) goto done;
    }
    rc = ac_st_write(&w, path, err);
done:
    ac_st_writer_free(&w);
    free(f16);
    free(cfg);
    free(voc);
    return rc;
}

void ac_model_free(ac_model *m) {
    if (!m) return;
    ac_decoder_free(&m->dec);
    ac_vocab_free(m->vocab);
    free(m->encoder_json);
    free(m->training_json);
    free(m->naming_json);
    ac_tag_precision_free(&m->tag_precision);
    free(m->paired_counts);
    free(m->no_repeat);
    ac_imagenet_words_free(&m->imagenet);
    free(m->path);
    memset(m, 0, sizeof *m);
}

/* f, read from path, written back to path with metadata key = value and, when put is not NULL, the
 * tensor put (added, or in place of its namesake). */
static int rewrite_meta(const ac_st_file *f, const char *path, const char *key, const char *value,
                        const ac_st_tensor *put, ac_err *err) {
    ac_st_writer w;
    ac_st_writer_init(&w);
    int rc = 0;
    for (int i = 0; !rc && i < f->n_tensors; i++) {
        const ac_st_tensor *t = &f->tensors[i];
        if (!put || strcmp(t->name, put->name)) rc = ac_st_writer_add(&w, t->name, t->dtype, t->ndim, t->shape, t->data, err);
    }
    if (!rc && put) rc = ac_st_writer_add(&w, put->name, put->dtype, put->ndim, put->shape, put->data, err);
    for (int i = 0; !rc && i < f->n_meta; i++)
        if (strcmp(f->meta_keys[i], key)) rc = ac_st_writer_meta(&w, f->meta_keys[i], f->meta_values[i], err);
    if (!rc) rc = ac_st_writer_meta(&w, key, value, err);
    if (!rc) rc = ac_st_write(&w, path, err);
    ac_st_writer_free(&w);
    return rc;
}

int ac_model_set_meta(const char *path, const char *key, const char *value, ac_err *err) {
    if (!known_meta(key)) return ac_errf(err, "%s: unknown metadata '%.80s' (a model file holds only the keys models/README.md lists)", path, key);
    ac_st_file f;
    if (ac_st_read(path, &f, err)) return -1;
    const int rc = rewrite_meta(&f, path, key, value, NULL, err);
    ac_st_free(&f);
    return rc;
}

int ac_model_set_absent(const char *path, const float *prior, ac_err *err) {
    ac_st_file f;
    if (ac_st_read(path, &f, err)) return -1;
    ac_decoder_config c;
    const char *cfg_json = ac_st_meta(&f, "config");
    char *cfg = NULL;
    int rc = 0;
    if (!cfg_json || ac_decoder_config_from_json(cfg_json, &c, err)) rc = ac_err_prefix(err, path);
    else if (!c.copy) rc = ac_errf(err, "%s: absent priors are a copy model's (its config has no copy)", path);
    c.absent = 1;
    if (!rc && !(cfg = ac_decoder_config_to_json(&c))) rc = ac_errf(err, "out of memory");
    float p32[AC_COPY_CATEGORIES];
    uint16_t p16[AC_COPY_CATEGORIES];
    for (int k = 0; k < AC_COPY_CATEGORIES; k++) p32[k] = prior[k], p16[k] = ac_f32_to_f16(prior[k]);
    ac_st_tensor t = {.name = "absent_b", .dtype = AC_ST_F32, .ndim = 1, .shape = {AC_COPY_CATEGORIES}, .data = p32};
    for (int i = 0; i < f.n_tensors; i++)
        if (f.tensors[i].dtype == AC_ST_F16) t.dtype = AC_ST_F16, t.data = p16; /* stored as the other weights are */
    if (!rc) rc = rewrite_meta(&f, path, "config", cfg, &t, err);
    ac_st_free(&f);
    free(cfg);
    return rc;
}

int ac_model_merge_meta(const char *path, const char *key, const char *fields, ac_err *err) {
    if (!known_meta(key)) return ac_errf(err, "%s: unknown metadata '%.80s' (a model file holds only the keys models/README.md lists)", path, key);
    ac_st_file f;
    if (ac_st_read(path, &f, err)) return -1;
    const char *old = ac_st_meta(&f, key);
    cJSON *into = old ? cJSON_Parse(old) : cJSON_CreateObject(), *add = cJSON_Parse(fields);
    char *merged = NULL;
    int rc = 0;
    if (!cJSON_IsObject(into)) rc = ac_errf(err, "%s: metadata '%s' is not a JSON object", path, key);
    else if (!cJSON_IsObject(add)) rc = ac_errf(err, "metadata '%s': the fields to record are not a JSON object", key);
    while (!rc && add->child) { /* each member moves, replacing its namesake */
        cJSON *x = cJSON_DetachItemViaPointer(add, add->child);
        cJSON_DeleteItemFromObjectCaseSensitive(into, x->string);
        cJSON_AddItemToObject(into, x->string, x); /* copies the key before freeing x's own */
    }
    if (!rc && !(merged = cJSON_PrintUnformatted(into))) rc = ac_errf(err, "out of memory");
    cJSON_Delete(into), cJSON_Delete(add);
    if (!rc) rc = rewrite_meta(&f, path, key, merged, NULL, err); /* the file read once */
    ac_st_free(&f);
    cJSON_free(merged);
    return rc;
}
