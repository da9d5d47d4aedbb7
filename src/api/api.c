/* api.c: the core API's handles (attncap.h): models and captioners, opened as `attncap caption`
 * opens them, over the unstable modules (model.h, captioner.h). */
#include "attncap/attncap.h"

#include <stdlib.h>
#include <string.h>

#include "attncap/captioner.h"
#include "attncap/captioner_debug.h"
#include "attncap/shard.h"
#include "attncap/cnn.h"
#include "alloc_internal.h"

int ac_model_open(const char *path, ac_model **out, ac_err *err) {
    *out = NULL;
    ac_model *m = ac_calloc(1, sizeof *m);
    if (!m) return ac_errf(err, "out of memory");
    if (ac_model_init(path, m, err)) {
        free(m);
        return -1;
    }
    *out = m;
    return 0;
}

void ac_model_close(ac_model *m) {
    if (!m) return;
    ac_model_free(m);
    free(m);
}

const char *ac_model_path(const ac_model *m) { return m->path; }

int ac_model_words(const ac_model *m) { return ac_vocab_size(m->vocab); }

const char *ac_model_word(const ac_model *m, int id) {
    return id >= 0 && id < ac_vocab_size(m->vocab) ? ac_vocab_word(m->vocab, id) : NULL;
}

void ac_captioner_opts_init(ac_captioner_opts *o) {
    memset(o, 0, sizeof *o);
    o->len_alpha = -1.0f;
}

/* ac_captioner_set_naming, or c's naming as it was when that fails. A table asked for is loaded even
 * when one is (the one loaded is kept until the new one is in place). On failure c keeps its table;
 * the head and presence loaded for the old mode stay loaded, so setting it again does not fail. */
static int set_naming_or_keep(ac_captioner *c, const ac_naming_opts *no, const char *table, ac_err *err) {
    ac_naming_opts old = c->naming;
    char *old_words = old.words ? ac_strdup(old.words) : NULL;
    if (old.words && !old_words) return ac_errf(err, "out of memory");
    ac_tag_table *had = c->tags;
    if (table && no->mode != AC_TAGS_OFF) c->tags = NULL;
    int rc = ac_captioner_set_naming(c, no, table, err);
    if (rc) { /* no table but the one c had, then the old naming (its table and head are loaded) */
        if (c->tags != had) ac_tag_table_free(c->tags);
        c->tags = had;
        ac_err ignored;
        old.words = old_words;
        ac_captioner_set_naming(c, &old, NULL, &ignored);
    } else if (c->tags != had) ac_tag_table_free(had);
    free(old_words);
    return rc;
}

/* The naming `attncap caption --tags T --tag-table F` sets: the captioner's numeric settings (the
 * model's record, with what ac_captioner_set_naming_record laid over it), the mode and words from tags,
 * else the model's. */
int ac_captioner_set_tags(ac_captioner *c, const char *tags, const char *table, ac_err *err) {
    ac_naming_opts no = c->naming;
    no.mode = ac_naming_opts_for_model(&c->model).mode, no.words = NULL;
    if (tags && !strcmp(tags, "auto")) no.mode = AC_TAGS_AUTO;
    else if (tags && !strcmp(tags, "off")) no.mode = AC_TAGS_OFF;
    else if (tags) no.mode = AC_TAGS_GIVEN, no.words = tags;
    return set_naming_or_keep(c, &no, table, err);
}

/* The model's record with json's fields over it; the mode and words as they are (a record sets no
 * mode: naming_opts.h), so the tags table and the classes they need are loaded already. */
int ac_captioner_set_naming_record(ac_captioner *c, const char *json, ac_err *err) {
    ac_naming_opts no = ac_naming_opts_for_model(&c->model);
    if (json && ac_naming_apply_json(&no, json, err)) return -1;
    no.mode = c->naming.mode, no.words = c->naming.words; /* copied before the old words are freed */
    no.presence = c->naming.presence, no.word_object = c->naming.word_object;
    if (no.mode == AC_TAGS_AUTO && !no.presence && (no.presence_absent > 0 || no.presence_ratio > 0))
        return ac_errf(err, "%s: the naming record uses a presence head (presence_absent %g, presence_ratio %g) "
                            "and the model has none beside it", ac_model_path(&c->model), no.presence_absent,
                       no.presence_ratio);
    return set_naming_or_keep(c, &no, NULL, err);
}

int ac_captioner_set_precision(ac_captioner *c, const char *precision, ac_err *err) {
    ac_precision p;
    if (ac_precision_parse(precision ? precision : ac_default_precision(), &p, err)) return -1;
    if (!c) return 0;
    const ac_precision q = ac_encoder_id_precision(&c->id, p);
    if (ac_encoder_set_precision(&c->enc, q, err)) return -1;
    /* int8: the detector's products on integers too (its lanes take its precision when they open) */
    return c->det ? ac_detector_use_precision(c->det, q, err) : 0; /* f32 unless int8 */
}

/* allow_unk and no_repeat are the only search settings ac_captioner_opts does not hold; the repeat
 * rule comes back from the model's record when the flag is cleared. */
int ac_captioner_set_search(ac_captioner *c, unsigned flags, ac_err *err) {
    if (flags & ~(AC_SEARCH_ALLOW_UNK | AC_SEARCH_ALLOW_REPEATS))
        return ac_errf(err, "search flags: unknown flags 0x%x", flags & ~(AC_SEARCH_ALLOW_UNK | AC_SEARCH_ALLOW_REPEATS));
    c->beam.allow_unk = (flags & AC_SEARCH_ALLOW_UNK) != 0;
    c->beam.no_repeat = (flags & AC_SEARCH_ALLOW_REPEATS) ? NULL : c->model.decode.no_repeat;
    return 0;
}

int ac_captioner_open(const char *model, const ac_captioner_opts *opts, ac_captioner **out, ac_err *err) {
    *out = NULL;
    ac_captioner_opts o;
    if (opts) o = *opts;
    else ac_captioner_opts_init(&o);
    if (o.threads < 0 || o.beam < 0 || o.max_len < 0 || o.nbest < 0)
        return ac_errf(err, "captioner options: negative threads, beam, max_len or nbest");
    if (o.beam > 100 || o.max_len > 200 || o.nbest > 100 || o.len_alpha > 10)
        return ac_errf(err, "captioner options: beam (1..100), max_len (1..200), nbest (1..100) or len_alpha "
                            "(0..10) out of range");
    ac_captioner *c = ac_calloc(1, sizeof *c);
    if (!c) return ac_errf(err, "out of memory");
    if (o.threads) ac_set_threads(o.threads);
    if (ac_captioner_init(c, model, o.encoder, o.threads, err)) {
        free(c);
        return -1;
    }
    if (ac_captioner_set_precision(c, NULL, err) || ac_captioner_set_tags(c, o.tags, o.tag_table, err)) {
        ac_captioner_close(c);
        return -1;
    }
    if (o.beam > 0) c->beam.beam = o.beam;
    if (o.max_len > 0) c->beam.max_len = o.max_len;
    if (o.len_alpha >= 0) c->beam.len_alpha = o.len_alpha;
    c->beam.allow_unk = 0;
    c->beam.nbest = o.nbest;
    *out = c;
    return 0;
}

void ac_captioner_close(ac_captioner *c) {
    if (!c) return;
    ac_captioner_free(c);
    free(c);
}

const ac_model *ac_captioner_model(const ac_captioner *c) { return &c->model; }

const char *ac_captioner_given_unknown(const ac_captioner *c, int k) {
    for (int i = 0; c->given && k >= 0 && i < c->n_given; i++) /* "<unk>" written as such is the model's */
        if (c->given[i] == AC_UNK && strcmp(c->given_words[i], "<unk>") && k-- == 0) return c->given_words[i];
    return NULL;
}

int ac_captioner_set_attention(ac_captioner *c, const char *key, const char *value, ac_err *err) {
    if (!c || !key || !value) return ac_errc(err, AC_ERR_OPTIONS, "attention: a captioner, a key and a value are needed");
    if (!strcmp(key, "head")) {
        char *end;
        const long head = strtol(value, &end, 10);
        if (!*value || *end || head < 1 || head > 64)
            return ac_errc(err, AC_ERR_OPTIONS, "attention: head wants a number in 1..64, got '%.40s'", value);
        return ac_captioner_debug_attention(c, (int)head, NULL, NULL, err);
    }
    if (!strcmp(key, "hard_context")) return ac_captioner_debug_attention(c, 0, value, NULL, err);
    if (!strcmp(key, "fix_attention")) return ac_captioner_debug_attention(c, 0, NULL, value, err);
    return ac_errc(err, AC_ERR_OPTIONS, "attention: unknown key '%.40s' (head, hard_context or fix_attention)", key);
}

int ac_shard_select(const char *spec, const char *const *paths, int n, unsigned char *keep, int *index, int *count,
                    ac_err *err) {
    ac_shard s = {0, 0};
    ac_err why;
    if (!spec || ac_shard_parse(spec, &s, &why)) return ac_errc(err, AC_ERR_OPTIONS, "%s", spec ? why.msg : "no share given");
    if (n > 0 && (!paths || !keep)) return ac_errc(err, AC_ERR_OPTIONS, "shard: paths and keep are needed");
    for (int i = 0; i < n; i++) keep[i] = (unsigned char)ac_shard_owns(&s, paths[i]);
    if (index) *index = s.index;
    if (count) *count = s.count;
    return 0;
}
