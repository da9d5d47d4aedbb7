/* featurizer.c: the core API's feature caches (attncap.h) over features.h's extraction and merge: the
 * encoder opened as the options say (the data directory's MobileNetV2 by default), this task's share of
 * the photos (shard.h), the per-photo failures and the progress handed to one callback. */
#include "attncap/attncap.h"

#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "attncap/cnn.h"
#include "attncap/encoder.h"
#include "attncap/features.h"
#include "attncap/locate.h"
#include "attncap/shard.h"
#include "alloc_internal.h"
#include "options_internal.h"

struct ac_featurizer {
    const char *encoder, *layer, *resize, *shard, *precision;
    int size, shard_size, threads, fp16, flip;
    char *text[16];  /* the text options' copies (owned) */
    char *layer_run; /* the layer the last run stopped at (owned) */
    char shown[64];  /* ac_featurizer_get's number */
};

#define TXT(k) {#k, OPTION_TEXT, offsetof(struct ac_featurizer, k), 0, 0}
static const option OPTIONS[] = {
    TXT(encoder), TXT(layer), {"size", OPTION_INT, offsetof(struct ac_featurizer, size), 16, 4096}, TXT(resize),
    {"shard_size", OPTION_INT, offsetof(struct ac_featurizer, shard_size), 1, 1e6}, TXT(shard),
    {"threads", OPTION_INT, offsetof(struct ac_featurizer, threads), 1, 256}, TXT(precision),
    {"fp16", OPTION_SWITCH, offsetof(struct ac_featurizer, fp16), 0, 1},
    {"flip", OPTION_SWITCH, offsetof(struct ac_featurizer, flip), 0, 1},
};
#undef TXT
#define N_OPTIONS (int)(sizeof OPTIONS / sizeof OPTIONS[0])

int ac_featurizer_open(ac_featurizer **out, ac_err *err) {
    *out = ac_calloc(1, sizeof **out);
    if (!*out) return ac_errf(err, "out of memory");
    (*out)->size = 448, (*out)->shard_size = 256;
    return 0;
}

void ac_featurizer_close(ac_featurizer *f) {
    if (!f) return;
    for (int i = 0; i < N_OPTIONS; i++) free(f->text[i]);
    free(f->layer_run);
    free(f);
}

const char *ac_featurizer_option(int i, int *is_switch) { return ac_option_key(OPTIONS, N_OPTIONS, i, is_switch); }

int ac_featurizer_set(ac_featurizer *f, const char *key, const char *value, ac_err *err) {
    const int i = ac_option_find(OPTIONS, N_OPTIONS, key);
    if (i < 0) return ac_errc(err, AC_ERR_OPTIONS, "unknown feature cache option '%.80s'", key ? key : "");
    if (!strcmp(OPTIONS[i].key, "resize") && value && strcmp(value, "squash") && strcmp(value, "aspect"))
        return ac_errc(err, AC_ERR_OPTIONS, "option 'resize' is squash or aspect, got '%.80s'", value);
    if (!strcmp(OPTIONS[i].key, "shard") && value) { /* refused now, not after the encoder is loaded */
        ac_shard sh;
        ac_err why;
        const int number = *value && strspn(value, "0123456789") == strlen(value); /* the old photos-per-file flag */
        if (ac_shard_parse(value, &sh, &why))
            return ac_errc(err, AC_ERR_OPTIONS, "option 'shard' %s%s", why.msg,
                           number ? " (photos per file is the option shard_size)" : "");
    }
    if (!strcmp(OPTIONS[i].key, "precision") && value) {
        ac_precision p;
        ac_err why;
        if (ac_precision_parse(value, &p, &why)) return ac_errc(err, AC_ERR_OPTIONS, "option 'precision' %s", why.msg);
    }
    return ac_option_set(&OPTIONS[i], f, &f->text[i], value, err);
}

const char *ac_featurizer_get(ac_featurizer *f, const char *key) {
    const int i = ac_option_find(OPTIONS, N_OPTIONS, key);
    if (i >= 0 && !strcmp(OPTIONS[i].key, "layer") && !f->layer && f->layer_run) return f->layer_run;
    return i < 0 ? NULL : ac_option_get(&OPTIONS[i], f, f->shown, sizeof f->shown);
}

typedef struct relay {
    ac_featurizer_fn fn;
    void *user;
    int done, total;
} relay;

static void relay_error(void *user, const char *msg) {
    relay *r = user;
    const ac_featurizer_event ev = {r->done, r->total, msg};
    if (r->fn) r->fn(&ev, r->user);
}

static void relay_progress(void *user, int done, int total) {
    relay *r = user;
    r->done = done, r->total = total;
    const ac_featurizer_event ev = {done, total, NULL};
    if (r->fn) r->fn(&ev, r->user);
}

static int encode(void *ctx, const ac_image *img, float *out, int *gh, int *gw, ac_err *err) {
    return ac_encoder_encode_grid(ctx, img, out, gh, gw, err);
}

/* The encoder the options name, opened with their precision and resize policy. */
static int open_encoder(ac_featurizer *f, ac_encoder *enc, ac_err *err) {
    char *found = NULL;
    const char *path = f->encoder;
    if (!path && !(path = found = ac_data_file("encoders/mobilenet_v2_1.0_224_quant.tflite", "encoder", err))) return -1;
    ac_precision p;
    if (ac_precision_parse(f->precision ? f->precision : ac_default_precision(), &p, err)) {
        free(found);
        if (!f->precision) ac_err_prefix(err, "ATTNCAP_PRECISION"); /* ("precision" was checked when set) */
        if (err) err->code = AC_ERR_OPTIONS;
        return -1;
    }
    const int rc = ac_encoder_open(path, f->layer, f->size, f->threads, enc, err);
    free(found);
    if (rc) return -1;
    if (ac_encoder_set_precision(enc, p, err) ||
        (f->resize && !strcmp(f->resize, "aspect") && ac_encoder_set_resize(enc, AC_RESIZE_ASPECT, err))) {
        ac_encoder_close(enc);
        return -1;
    }
    return 0;
}

int ac_featurizer_run(ac_featurizer *f, const char *out, const char *const *photos, int n, ac_featurizer_fn on_event,
                      void *user, ac_featurizer_stats *stats, ac_err *err) {
    ac_featurizer_stats st;
    memset(&st, 0, sizeof st);
    if (!out || !*out) return ac_errc(err, AC_ERR_OPTIONS, "no cache directory to write");
    if (n < 0 || (n && !photos)) return ac_errc(err, AC_ERR_OPTIONS, "no photos given");
    ac_shard sh = {0, 0};
    if (f->shard && ac_shard_parse(f->shard, &sh, err)) return -1;
    ac_encoder enc;
    if (open_encoder(f, &enc, err)) return -1;
    free(f->layer_run);
    f->layer_run = ac_strdup(enc.layer);
    char *ident = ac_encoder_id_json(&enc);
    const char **todo = ac_malloc(((size_t)n + 1) * sizeof *todo);
    int rc = -1;
    if (!ident || !todo || !f->layer_run) {
        ac_errf(err, "out of memory");
        goto done;
    }
    memcpy(todo, photos, (size_t)n * sizeof *todo);
    st.photos = sh.count ? ac_shard_filter(&sh, (char **)todo, n, NULL) : n;
    st.shard_index = sh.index, st.shard_count = sh.count;
    st.grid_h = enc.grid_h, st.grid_w = enc.grid_w, st.dim = enc.dim;
    ac_feature_source src = {&enc, encode, enc.size, enc.grid_h, enc.grid_w, enc.dim, ident};
    relay r = {on_event, user, 0, st.photos};
    ac_features_opts o = {out, f->shard_size, f->fp16, f->flip, relay_error, relay_progress, &r};
    ac_features_stats fs;
    if (ac_features_extract(&src, todo, st.photos, &o, &fs, err) == 0) {
        st.encoded = fs.encoded, st.skipped = fs.skipped, st.failed = fs.failed, st.shards = fs.shards;
        rc = 0;
    }
done:
    ac_encoder_close(&enc);
    free(ident);
    free(todo);
    if (stats) *stats = st;
    return rc;
}

int ac_featurizer_merge(ac_featurizer *f, const char *out, const char *const *dirs, int n, ac_featurizer_stats *stats,
                        ac_err *err) {
    ac_featurizer_stats st;
    memset(&st, 0, sizeof st);
    ac_features_merge_stats ms;
    const int rc = ac_features_merge(out, dirs, n, f->shard_size, &ms, err);
    if (rc == 0) st.photos = ms.keys, st.inputs = ms.inputs, st.shards = ms.shards;
    if (stats) *stats = st;
    return rc;
}
