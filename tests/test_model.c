/* test_model.c: the model file (model.c): save/load round trips in F32 and F16, and refusal of
 * hostile or mismatched files with a clear one-line message, never a crash. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "attncap/decoder.h"
#include "attncap/model.h"
#include "attncap/safetensors.h"
#include "attncap/vocab.h"
#include "decoder_internal.h" /* the config as JSON */
#include "test.h"

static ac_model make_scored_model(int score, int heads) {
    ac_model m;
    memset(&m, 0, sizeof m);
    const char *w[] = {"a", "dog", "runs", "on", "grass", "a", "dog"};
    ac_tokens t = {7, (char **)w};
    ac_err err;
    if (ac_vocab_build(&t, 1, 1, &m.vocab, &err)) abort();
    ac_decoder_config c = {.vocab = ac_vocab_size(m.vocab), .embed = 6, .hidden = 5, .att = 4, .dim = 3, .n_ann = 4,
                           .grid_h = 2, .grid_w = 2, .dropout = 0.5f, .lambda = 1.0f, .attention = score,
                           .heads = heads};
    if (heads > 1) c.dim = 4; /* the heads split the channels */
    if (ac_decoder_init(&m.dec, &c, 5, &err)) abort();
    m.encoder_json = strdup("{\"file\":\"x.tflite\",\"sha256\":\"ab\",\"layer\":\"L\",\"size\":64,\"grid_h\":2,\"grid_w\":2,\"dim\":3}");
    return m;
}
static ac_model make_model(void) { return make_scored_model(AC_ATTENTION_ADDITIVE, 0); }

static char *tmp(const char *name) {
    static char buf[8][4096];
    static int k;
    char *b = buf[k++ % 8];
    snprintf(b, 4096, "%s/%s", test_tmpdir(), name);
    return b;
}

static void test_roundtrip_f32_and_f16(void) {
    ac_model m = make_model(), r;
    ac_err err;
    const char *extra[] = {"training", "{\"epochs\":3}", NULL};
    CHECKF(ac_model_save(&m, tmp("m32.safetensors"), 0, extra, &err) == 0, "%s", err.msg);
    CHECKF(ac_model_load(tmp("m32.safetensors"), &r, &err) == 0, "%s", err.msg);
    CHECK(r.dec.n_params == m.dec.n_params);
    CHECK(memcmp(r.dec.params, m.dec.params, sizeof(float) * m.dec.n_params) == 0);
    CHECK(memcmp(&r.dec.cfg, &m.dec.cfg, sizeof m.dec.cfg) == 0);
    CHECK(ac_vocab_size(r.vocab) == ac_vocab_size(m.vocab) && !strcmp(ac_vocab_word(r.vocab, 4), ac_vocab_word(m.vocab, 4)));
    CHECK(!strcmp(r.encoder_json, m.encoder_json));
    ac_model_free(&r);
    CHECKF(ac_model_save(&m, tmp("m16.safetensors"), 1, NULL, &err) == 0, "%s", err.msg);
    CHECKF(ac_model_load(tmp("m16.safetensors"), &r, &err) == 0, "%s", err.msg);
    for (size_t i = 0; i < m.dec.n_params; i++) CHECK_NEAR(r.dec.params[i], m.dec.params[i], 1e-3 * fabs(m.dec.params[i]) + 1e-7);
    ac_model_free(&r);
    ac_model_free(&m);
}

/* Every score function: saved and loaded back the same (config and weights), the file holding exactly
 * the score's tensors (decoder.h's table) and naming the score in its config unless additive (and
 * its heads: scaled-dot's model has 2). */
static void test_roundtrip_scores(void) {
    static const char *const want[AC_ATTENTION_COUNT] = {
        [AC_ATTENTION_ADDITIVE] = "att_ba att_wh att_we", [AC_ATTENTION_DOT] = "att_wh", [AC_ATTENTION_SCALED_DOT] = "att_wh",
        [AC_ATTENTION_GENERAL] = "", [AC_ATTENTION_COSINE] = "att_ba att_wh att_logtau"};
    for (int s = 0; s < AC_ATTENTION_COUNT; s++) {
        ac_model m = make_scored_model(s, s == AC_ATTENTION_SCALED_DOT ? 2 : 0), r; /* scaled-dot: 2 heads */
        ac_err err;
        CHECK(ac_decoder_attention_parse(ac_decoder_attention_name(s)) == s);
        CHECKF(ac_model_save(&m, tmp("score.st"), 0, NULL, &err) == 0, "%s", err.msg);
        CHECKF(ac_model_load(tmp("score.st"), &r, &err) == 0, "%s: %s", ac_decoder_attention_name(s), err.msg);
        CHECK(r.dec.cfg.attention == s && memcmp(&r.dec.cfg, &m.dec.cfg, sizeof m.dec.cfg) == 0);
        CHECK(r.dec.n_params == m.dec.n_params && !memcmp(r.dec.params, m.dec.params, sizeof(float) * m.dec.n_params));
        CHECK(!r.dec.att_logtau == (s != AC_ATTENTION_COSINE) && !r.dec.att_we == (s != AC_ATTENTION_ADDITIVE));
        ac_model_free(&r);
        ac_st_file f;
        CHECKF(ac_st_read(tmp("score.st"), &f, &err) == 0, "%s", err.msg);
        const char *opt[] = {"att_ba", "att_wh", "att_we", "att_logtau"};
        char have[64] = "";
        for (int i = 0; i < 4; i++)
            if (ac_st_find(&f, opt[i])) snprintf(have + strlen(have), sizeof have - strlen(have), "%s%s", *have ? " " : "", opt[i]);
        CHECKF(!strcmp(have, want[s]), "%s: optional tensors '%s', want '%s'", ac_decoder_attention_name(s), have, want[s]);
        const ac_st_tensor *wa = ac_st_find(&f, "att_wa"); /* general's keys meet h: [D, H] */
        CHECK(wa && wa->shape[1] == (s == AC_ATTENTION_GENERAL ? m.dec.cfg.hidden : m.dec.cfg.att));
        CHECK((strstr(ac_st_meta(&f, "config"), "\"attention\"") != NULL) == (s != AC_ATTENTION_ADDITIVE));
        CHECK((strstr(ac_st_meta(&f, "config"), "\"heads\":2") != NULL) == (s == AC_ATTENTION_SCALED_DOT));
        ac_st_free(&f);
        ac_model_free(&m);
    }
    CHECK(ac_decoder_attention_parse("Dot") == -1 && ac_decoder_attention_parse(NULL) == -1 && ac_decoder_attention_name(AC_ATTENTION_COUNT) == NULL);
}

/* Hard attention: recorded in the config (mode and its three training weights, as short decimals),
 * loaded back the same; a soft model's config does not name a mode (test_old_file_is_additive: the
 * same bytes as before). */
static void test_roundtrip_hard(void) {
    ac_model m = make_model(), r;
    ac_err err;
    m.dec.cfg.attention_mode = AC_ATTENTION_HARD, m.dec.cfg.reinforce = 1, m.dec.cfg.entropy = 0.01f,
    m.dec.cfg.expected = 0.5f;
    CHECKF(ac_model_save(&m, tmp("hard.st"), 0, NULL, &err) == 0, "%s", err.msg);
    CHECKF(ac_model_load(tmp("hard.st"), &r, &err) == 0, "%s", err.msg);
    CHECK(memcmp(&r.dec.cfg, &m.dec.cfg, sizeof m.dec.cfg) == 0);
    ac_model_free(&r);
    ac_st_file f;
    CHECKF(ac_st_read(tmp("hard.st"), &f, &err) == 0, "%s", err.msg);
    CHECKF(strstr(ac_st_meta(&f, "config"), "\"attention_mode\":\"hard\",\"reinforce\":1,\"entropy\":0.01,\"expected_context\":0.5"),
           "%s", ac_st_meta(&f, "config"));
    ac_st_free(&f);
    CHECK(ac_decoder_attention_mode_parse("hard") == AC_ATTENTION_HARD && ac_decoder_attention_mode_parse("Hard") == -1);
    m.dec.cfg.attention_mode = AC_ATTENTION_SOFT;
    char *j = ac_decoder_config_to_json(&m.dec.cfg);
    CHECK(j && !strstr(j, "attention_mode") && !strstr(j, "reinforce"));
    free(j);
    ac_model_free(&m);
}

/* A model file from before score functions (fuzz/corpus/model/f32.safetensors, written by
 * ac_model_save then: no "attention" in its config) loads as additive, and saving it again gives
 * the same bytes. */
static void test_old_file_is_additive(void) {
    char path[4096];
    const char *root = getenv("ATTNCAP_ROOT");
    snprintf(path, sizeof path, "%s/fuzz/corpus/model/f32.safetensors", root ? root : ".");
    ac_model r;
    ac_err err;
    CHECKF(ac_model_load(path, &r, &err) == 0, "%s", err.msg);
    CHECK(r.dec.cfg.attention == AC_ATTENTION_ADDITIVE && r.dec.att_we && r.dec.att_ba && !r.dec.att_logtau);
    const char *extra[] = {"training", r.training_json, NULL};
    CHECKF(ac_model_save(&r, tmp("resaved.st"), 0, extra, &err) == 0, "%s", err.msg);
    char *a, *b;
    size_t na, nb;
    CHECK(ac_read_file(path, 1 << 20, &a, &na, &err) == 0 && ac_read_file(tmp("resaved.st"), 1 << 20, &b, &nb, &err) == 0);
    CHECKF(na == nb && !memcmp(a, b, na), "%s saved again: %zu bytes differ from its %zu", path, nb, na);
    free(a), free(b);
    ac_model_free(&r);
}

/* Saves a file through the writer with chosen tensors/metadata, then expects a load error that
 * contains `want`. */
typedef void (*mutator)(ac_st_writer *w, ac_model *m, float *scratch);

static void expect_load_error(const char *name, mutator mut, const char *want) {
    ac_model m = make_model(), r;
    ac_err err;
    ac_st_writer w;
    ac_st_writer_init(&w);
    ac_dec_tensor t[AC_DEC_MAX_TENSORS];
    ac_decoder_tensors(&m.dec.cfg, t, NULL);
    float *scratch = calloc(m.dec.n_params + 64, sizeof(float));
    mut(&w, &m, scratch);
    const char *path = tmp(name);
    int ok = ac_st_write(&w, path, &err) == 0;
    ac_st_writer_free(&w);
    if (ok) {
        int rc = ac_model_load(path, &r, &err);
        if (rc == 0) ac_model_free(&r);
        if (rc == 0) printf("FAIL %s: %s loaded\n", t_cur_name, name), t_cur_failed = 1;
        else if (!strstr(err.msg, want) || !strstr(err.msg, path) || strchr(err.msg, '\n'))
            printf("FAIL %s: %s: message '%s' lacks '%s' or the path\n", t_cur_name, name, err.msg, want), t_cur_failed = 1;
    } else {
        printf("FAIL %s: could not write %s: %s\n", t_cur_name, name, err.msg), t_cur_failed = 1;
    }
    free(scratch);
    ac_model_free(&m);
}

static void add_all(ac_st_writer *w, ac_model *m, const char *skip, const char *reshape) {
    ac_dec_tensor t[AC_DEC_MAX_TENSORS];
    const int nt = ac_decoder_tensors(&m->dec.cfg, t, NULL);
    for (int i = 0; i < nt; i++) {
        if (skip && !strcmp(skip, t[i].name)) continue;
        int64_t sh[2] = {t[i].rows, t[i].cols};
        if (reshape && !strcmp(reshape, t[i].name)) sh[0] = t[i].cols, sh[1] = t[i].rows; /* transposed */
        int nd = t[i].rows == 1 ? 1 : 2;
        ac_st_writer_add(w, t[i].name, AC_ST_F32, nd, nd == 1 ? sh + 1 : sh, m->dec.params + t[i].offset, NULL);
    }
}
static void meta_ok(ac_st_writer *w, ac_model *m, const char *cfg) {
    char *voc = ac_vocab_to_json(m->vocab);
    ac_st_writer_meta(w, "format", "attncap-decoder-1", NULL);
    ac_st_writer_meta(w, "config", cfg, NULL);
    ac_st_writer_meta(w, "vocab", voc, NULL);
    ac_st_writer_meta(w, "encoder", m->encoder_json, NULL);
    free(voc);
}
#define CFG_OK "{\"vocab\":9,\"embed\":6,\"hidden\":5,\"att\":4,\"dim\":3,\"n_ann\":4,\"grid_h\":2,\"grid_w\":2,\"dropout\":0.5,\"lambda\":1}"

static void m_no_format(ac_st_writer *w, ac_model *m, float *s) { (void)s; add_all(w, m, NULL, NULL); }
static void m_missing_tensor(ac_st_writer *w, ac_model *m, float *s) { (void)s; add_all(w, m, "lstm_w", NULL); meta_ok(w, m, CFG_OK); }
static void m_wrong_shape(ac_st_writer *w, ac_model *m, float *s) { (void)s; add_all(w, m, NULL, "out_lz"); meta_ok(w, m, CFG_OK); }
static void m_vocab_mismatch(ac_st_writer *w, ac_model *m, float *s) {
    (void)s;
    add_all(w, m, NULL, NULL);
    meta_ok(w, m, "{\"vocab\":10,\"embed\":6,\"hidden\":5,\"att\":4,\"dim\":3,\"n_ann\":4,\"grid_h\":2,\"grid_w\":2,\"dropout\":0.5,\"lambda\":1}");
}
static void m_absurd_config(ac_st_writer *w, ac_model *m, float *s) {
    (void)s;
    add_all(w, m, NULL, NULL);
    meta_ok(w, m, "{\"vocab\":9,\"embed\":6,\"hidden\":5000000,\"att\":4,\"dim\":3,\"n_ann\":4,\"grid_h\":2,\"grid_w\":2,\"dropout\":0.5,\"lambda\":1}");
}
static void m_bad_config_json(ac_st_writer *w, ac_model *m, float *s) { (void)s; add_all(w, m, NULL, NULL); meta_ok(w, m, "{\"vocab\":8,"); }
static void m_nan(ac_st_writer *w, ac_model *m, float *s) {
    (void)s;
    m->dec.out_lo[3] = NAN;
    add_all(w, m, NULL, NULL);
    meta_ok(w, m, CFG_OK);
}
static void m_extra(ac_st_writer *w, ac_model *m, float *s) {
    add_all(w, m, NULL, NULL);
    int64_t n = 3;
    ac_st_writer_add(w, "adam_m", AC_ST_F32, 1, &n, s, NULL);
    meta_ok(w, m, CFG_OK);
}
static void m_int_dtype(ac_st_writer *w, ac_model *m, float *s) {
    add_all(w, m, "att_we", NULL);
    int64_t n = 4;
    ac_st_writer_add(w, "att_we", AC_ST_I32, 1, &n, s, NULL);
    meta_ok(w, m, CFG_OK);
}

/* A config of the cases below with the make_model tensors (the score functions' and heads' cases). */
static const char *case_config;
static void m_config(ac_st_writer *w, ac_model *m, float *s) {
    (void)s;
    add_all(w, m, NULL, NULL);
    meta_ok(w, m, case_config);
}
#define CFG_WITH(extra) \
    "{\"vocab\":9,\"embed\":6,\"hidden\":5,\"att\":4,\"dim\":3,\"n_ann\":4,\"grid_h\":2,\"grid_w\":2,\"dropout\":0.5,\"lambda\":1," extra "}"

static void m_decode_not_object(ac_st_writer *w, ac_model *m, float *s) {
    (void)s;
    add_all(w, m, NULL, NULL);
    meta_ok(w, m, CFG_OK);
    ac_st_writer_meta(w, "decode", "[3]", NULL);
}
static void m_decode_beam_zero(ac_st_writer *w, ac_model *m, float *s) {
    (void)s;
    add_all(w, m, NULL, NULL);
    meta_ok(w, m, CFG_OK);
    ac_st_writer_meta(w, "decode", "{\"beam\":0,\"len_alpha\":1}", NULL);
}
static void m_decode_alpha_string(ac_st_writer *w, ac_model *m, float *s) {
    (void)s;
    add_all(w, m, NULL, NULL);
    meta_ok(w, m, CFG_OK);
    ac_st_writer_meta(w, "decode", "{\"beam\":2,\"len_alpha\":\"1\"}", NULL);
}
static void m_decode_fractional_len(ac_st_writer *w, ac_model *m, float *s) {
    (void)s;
    add_all(w, m, NULL, NULL);
    meta_ok(w, m, CFG_OK);
    ac_st_writer_meta(w, "decode", "{\"max_len\":12.5}", NULL);
}

static const char *case_key, *case_value; /* one metadata record of m_meta */
static void m_meta(ac_st_writer *w, ac_model *m, float *s) {
    (void)s;
    add_all(w, m, NULL, NULL);
    meta_ok(w, m, CFG_OK);
    ac_st_writer_meta(w, case_key, case_value, NULL);
}

static void test_refuses_bad_models(void) {
    expect_load_error("noformat.st", m_no_format, "not an attncap decoder model");
    expect_load_error("missing.st", m_missing_tensor, "'lstm_w' missing");
    expect_load_error("shape.st", m_wrong_shape, "'out_lz' has shape [6, 3]");
    expect_load_error("vocab.st", m_vocab_mismatch, "vocabulary has 9 words but the config says 10");
    expect_load_error("absurd.st", m_absurd_config, "hidden = 5000000 out of range");
    expect_load_error("badjson.st", m_bad_config_json, "config");
    expect_load_error("nan.st", m_nan, "non-finite");
    expect_load_error("extra.st", m_extra, "unexpected tensor 'adam_m'");
    expect_load_error("dtype.st", m_int_dtype, "must be F32 or F16");
    case_config = CFG_WITH("\"attention\":\"fancy\"");
    expect_load_error("score.st", m_config, "'attention' is not one of additive, dot");
    case_config = CFG_WITH("\"attention\":\"dot\""); /* an additive model's tensors: w_e and b_a are not dot's */
    expect_load_error("scoretensors.st", m_config, "unexpected tensor 'att_ba'");
    case_config = CFG_WITH("\"heads\":3"); /* 3 heads cannot split A = 4 key columns and D = 3 channels */
    expect_load_error("heads.st", m_config, "3 heads do not divide the attention width 4 and the annotation size 3");
    case_config = CFG_WITH("\"heads\":\"2\"");
    expect_load_error("heads2.st", m_config, "'heads' is not an integer");
    case_config = CFG_WITH("\"attention_mode\":\"stochastic\"");
    expect_load_error("mode.st", m_config, "'attention_mode' is not soft or hard");
    case_config = CFG_WITH("\"attention_mode\":\"hard\",\"reinforce\":1,\"entropy\":0");
    expect_load_error("mode2.st", m_config, "hard attention's 'expected_context' missing");
    case_config = CFG_WITH("\"attention_mode\":\"hard\",\"reinforce\":1,\"entropy\":0,\"expected_context\":1.5");
    expect_load_error("mode3.st", m_config, "expected 1.5 out of range");
    case_config = CFG_WITH("\"absent\":2");
    expect_load_error("absent1.st", m_config, "config: 'absent' is 0 or 1");
    case_config = CFG_WITH("\"absent\":1"); /* the priors are a copy model's: no regions, no copy */
    expect_load_error("absent2.st", m_config, "absent is 0 or 1, and needs copy");
    case_config = CFG_WITH("\"object_init\":2");
    expect_load_error("objinit1.st", m_config, "config: 'object_init' is 0 or 1");
    case_config = CFG_WITH("\"object_init\":1"); /* the objects are a copy model's regions' */
    expect_load_error("objinit2.st", m_config, "object_init is 0 or 1, and needs copy");
    case_config = CFG_WITH("\"imagenet_words\":3"); /* ImageNet words are a copy model's categories */
    expect_load_error("inet1.st", m_config, "imagenet_words = 3: 0 to 175, and needs copy");
    case_config = CFG_WITH("\"imagenet_words\":1.5");
    expect_load_error("inet2.st", m_config, "config: 'imagenet_words' is not an integer");
    case_key = "imagenet_words", case_value = "{\"classes\":1001,\"words\":[]}"; /* words the config lacks */
    expect_load_error("inet3.st", m_meta, "config 'imagenet_words' is 0 but metadata 'imagenet_words' is there");
    expect_load_error("dec1.st", m_decode_not_object, "metadata 'decode' is not a JSON object");
    expect_load_error("dec2.st", m_decode_beam_zero, "'decode': beam must be an integer in 1..100");
    expect_load_error("dec3.st", m_decode_alpha_string, "'decode': len_alpha must be a number in 0..10");
    expect_load_error("dec4.st", m_decode_fractional_len, "'decode': max_len must be an integer in 1..200");
    case_key = "decode", case_value = "{\"repeatable\":\"a\"}";
    expect_load_error("dec5.st", m_meta, "'decode': repeatable must be an array of words");
    case_value = "{\"beam\":2,\"repeatable\":[\"a\",3]}";
    expect_load_error("dec6.st", m_meta, "'decode': repeatable[1] is not a word");
    case_key = "vocab_counts", case_value = "{\"paired\":[1,2,3],\"text\":[]}"; /* 9 words */
    expect_load_error("counts1.st", m_meta, "'vocab_counts': \"paired\" must be an array of 9 counts");
    case_value = "[1,2]";
    expect_load_error("counts2.st", m_meta, "\"paired\" must be an array of 9 counts");
    case_value = "{\"paired\":[0,0,0,4,5,6,7,-8,9]}";
    expect_load_error("counts3.st", m_meta, "'vocab_counts': count 7 is not an integer >= 0");
    case_value = "{\"paired\":[0,0,0,4,5,6,7,\"8\",9]}";
    expect_load_error("counts4.st", m_meta, "count 7 is not an integer >= 0");
}

/* The "training_photos" record is checked at load by the rules eval reads it with (issue #30 item 4):
 * each malformed record is one error line naming the file and the key. HASH_AB: the low 32 bits of
 * ac_hash_bytes (FNV-1a 64's prime 0x100000001b3 from the offset basis 1469598103934665603, the
 * decimal FNV's 14695981039346656037 lacking its last digit, as strmap.c and every record written so
 * far have it) of "a.jpg" and of "b.jpg", sorted, computed in Python (fuzz/make_model_meta_seeds.py's
 * fnv_low32). */
#define HASH_AB "34ebac86c5ac730f"
static void test_training_photos_checked_at_load(void) {
    static const struct {
        const char *name, *value, *want;
    } bad[] = {
        {"tp1.st", "[1]", "'training_photos' is not a record of hashed file names"},
        {"tp2.st", "{\"hash\":\"md5\",\"n\":1,\"hashes\":\"0000000a\"}", "'training_photos' is not a record"},
        {"tp3.st", "{\"hash\":\"fnv1a64-low32 of the file name\",\"n\":1,\"hashes\":\"0000000\"}", "is not a record"},
        {"tp4.st", "{\"hash\":\"fnv1a64-low32 of the file name\",\"n\":2,\"hashes\":\"0000000a0000000g\"}",
         "'training_photos': hash 1 is not hex, or out of order"},
        {"tp5.st", "{\"hash\":\"fnv1a64-low32 of the file name\",\"n\":2,\"hashes\":\"0000000b0000000a\"}",
         "'training_photos': hash 1 is not hex, or out of order"},
        {"tp6.st", "{\"hash\":\"fnv1a64-low32 of the file name\",\"n\":2,\"hashes\":\"0000000a0000000a\"}",
         "hash 1 is not hex, or out of order"},
        {"tp7.st", "{\"hash\":\"fnv1a64-low32 of the file name\",\"n\":2,\"hashes\":\" 000000a0000000b\"}",
         "hash 0 is not hex"}, /* strtoul would skip the space */
        {"tp8.st", "{\"hash\":\"fnv1a64-low32 of the file name\",\"n\":2,\"hashes\":\"+000000a0000000b\"}",
         "hash 0 is not hex"},
        {"tp9.st", "{\"hash\":\"fnv1a64-low32 of the file name\",\"n\":3,\"hashes\":\"0000000a0000000b\"}",
         "'training_photos': n is not the 2 hashes it holds"},
        {"tp10.st", "{\"hash\":\"fnv1a64-low32 of the file name\",\"n\":\"2\",\"hashes\":\"0000000a0000000b\"}",
         "n is not the 2 hashes"},
        {"tp11.st", "{\"hash\":\"fnv1a64-low32 of the file name\",\"hashes\":\"0000000a\",\"names\":[\"a.jpg\"]}",
         "'training_photos': unknown key 'names'"},
        {"tp12.st", "not json", "'training_photos' is not a record"},
    };
    case_key = "training_photos";
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        case_value = bad[i].value;
        expect_load_error(bad[i].name, m_meta, bad[i].want);
    }
    ac_model m = make_model(), r;
    ac_err err;
    const char *names[] = {"dir/b.jpg", "a.jpg", "a.jpg"};
    char *rec = ac_training_photos_json(names, 3);
    CHECKF(rec && !strcmp(rec, "{\"hash\":\"fnv1a64-low32 of the file name\",\"n\":2,\"hashes\":\"" HASH_AB "\"}"), "%s",
           rec ? rec : "NULL");
    const char *meta[] = {"training_photos", rec, NULL};
    CHECKF(ac_model_save(&m, tmp("tp_ok.st"), 0, meta, &err) == 0, "%s", err.msg);
    CHECKF(ac_model_load(tmp("tp_ok.st"), &r, &err) == 0, "%s", err.msg);
    ac_model_free(&r);
    const char *ask[] = {"a.jpg", "x/b.jpg", "c.jpg"};
    int hits, n_trained;
    CHECKF(ac_model_training_photos_hits(tmp("tp_ok.st"), ask, 3, &hits, &n_trained, &err) == 0, "%s", err.msg);
    CHECK(hits == 2 && n_trained == 2);
    free(rec);
    /* a record without "n" (the hashes alone say how many) loads */
    const char *meta2[] = {"training_photos", "{\"hash\":\"fnv1a64-low32 of the file name\",\"hashes\":\"" HASH_AB "\"}", NULL};
    CHECKF(ac_model_save(&m, tmp("tp_ok2.st"), 0, meta2, &err) == 0, "%s", err.msg);
    CHECKF(ac_model_load(tmp("tp_ok2.st"), &r, &err) == 0, "%s", err.msg);
    ac_model_free(&r);
    CHECKF(ac_model_training_photos_hits(tmp("tp_ok2.st"), ask, 3, &hits, &n_trained, &err) == 0, "%s", err.msg);
    CHECK(hits == 2 && n_trained == 2);
    ac_model_free(&m);
}

/* decode "repeatable" names the only words a caption may say twice: every other real word is marked
 * no_repeat (words the vocabulary lacks are skipped), a repeatable article AC_REPEAT_ARTICLE;
 * ac_model_merge_meta adds fields to the record
 * and keeps the others (tune's grid choice keeps the list). */
static void test_repeatable_and_merge(void) {
    ac_model m = make_model(), r; /* words: 4 a, 5 dog, 6 grass, 7 on, 8 runs */
    ac_err err;
    const char *meta[] = {"decode", "{\"beam\":2,\"repeatable\":[\"a\",\"on\",\"zebra\"]}", NULL};
    CHECKF(ac_model_save(&m, tmp("rep.st"), 0, meta, &err) == 0, "%s", err.msg);
    CHECKF(ac_model_load(tmp("rep.st"), &r, &err) == 0, "%s", err.msg);
    const unsigned char want[9] = {0, 0, 0, 0, AC_REPEAT_ARTICLE, 1, 1, 0, 1}; /* "a": an article (beam.h) */
    CHECK(r.no_repeat && r.decode.no_repeat == r.no_repeat && !memcmp(r.no_repeat, want, 9) && r.decode.beam == 2);
    ac_model_free(&r);
    CHECKF(ac_model_merge_meta(tmp("rep.st"), "decode", "{\"beam\":4,\"len_alpha\":0.5}", &err) == 0, "%s", err.msg);
    CHECKF(ac_model_load(tmp("rep.st"), &r, &err) == 0, "%s", err.msg);
    CHECK(r.decode.beam == 4 && r.decode.len_alpha == 0.5f && r.no_repeat && !memcmp(r.no_repeat, want, 9));
    ac_model_free(&r);
    err.msg[0] = 0;
    CHECK(ac_model_merge_meta(tmp("rep.st"), "decode", "[1]", &err) == -1 && strstr(err.msg, "not a JSON object"));
    CHECKF(ac_model_merge_meta(tmp("rep.st"), "naming", "{\"threshold\":0.3}", &err) == 0, "%s", err.msg); /* created */
    err.msg[0] = 0; /* a key no model file holds is refused, as ac_model_load would refuse the file */
    CHECK(ac_model_merge_meta(tmp("rep.st"), "fresh", "{\"x\":1}", &err) == -1 && strstr(err.msg, "unknown metadata 'fresh'"));
    CHECKF(ac_model_load(tmp("rep.st"), &r, &err) == 0, "%s", err.msg);
    CHECK(r.decode.beam == 4 && r.no_repeat);
    ac_model_free(&r);
    ac_model_free(&m);

    /* the rates, counted by hand: "a" is said twice in 2 of its 3 captions, "dog" in 1 of 3, "on"
     * never twice; "grass" is in 1 caption only, as is "zebra", said twice there: below min_captions */
    ac_vocab *v;
    const char *w1[] = {"a", "dog", "on", "a", "dog"}, *w2[] = {"a", "dog", "on", "a"}, *w3[] = {"a", "dog", "on", "grass"};
    const char *w4[] = {"zebra", "zebra"};
    const ac_tokens caps[] = {{5, (char **)w1}, {4, (char **)w2}, {4, (char **)w3}, {2, (char **)w4}};
    if (ac_vocab_build(caps, 4, 1, &v, &err)) abort();
    const int V = ac_vocab_size(v);
    unsigned char rep[16];
    CHECK(ac_vocab_repeatable(v, caps, 4, 0.3, 2, rep, &err) == 0);
    int ok = 1;
    for (int id = 0; id < V; id++) {
        const char *word = ac_vocab_word(v, id);
        const int expect = id > AC_UNK && (!strcmp(word, "a") || !strcmp(word, "dog")); /* 2/3 and 1/3 >= 0.3 */
        ok &= rep[id] == expect;
    }
    CHECK(ok);
    CHECK(ac_vocab_repeatable(v, caps, 4, 0.5, 2, rep, &err) == 0 && rep[ac_vocab_id(v, "a")] && !rep[ac_vocab_id(v, "dog")]);
    CHECK(ac_vocab_repeatable(v, caps, 4, 0.0, 2, rep, &err) == 0 && rep[ac_vocab_id(v, "on")] && !rep[ac_vocab_id(v, "grass")]);
    CHECK(ac_vocab_repeatable(v, caps, 4, 0.5, 1, rep, &err) == 0 && rep[ac_vocab_id(v, "zebra")] && !rep[ac_vocab_id(v, "grass")]);
    ac_vocab_free(v);
}

/* The words' counts in the training photos' captions are read at load (naming.h's trust uses them);
 * a model without them has none. */
static void test_paired_counts(void) {
    ac_model m = make_model(), r;
    ac_err err;
    const char *meta[] = {"vocab_counts", "{\"paired\":[0,0,0,4,5,6,7,8,9],\"text\":[1,1,1,1,1,1,1,1,1]}", NULL};
    CHECKF(ac_model_save(&m, tmp("counts.st"), 0, meta, &err) == 0, "%s", err.msg);
    CHECKF(ac_model_load(tmp("counts.st"), &r, &err) == 0, "%s", err.msg);
    CHECK(r.paired_counts && r.paired_counts[3] == 4 && r.paired_counts[8] == 9 && r.paired_counts[0] == 0);
    ac_model_free(&r);
    CHECKF(ac_model_save(&m, tmp("nocounts.st"), 0, NULL, &err) == 0, "%s", err.msg);
    CHECKF(ac_model_load(tmp("nocounts.st"), &r, &err) == 0, "%s", err.msg);
    CHECK(r.paired_counts == NULL);
    ac_model_free(&r);
    ac_model_free(&m);
}

/* The decoding settings and the trainer's notes are read once, at load: recorded fields replace the
 * defaults, the others stay; a model without "decode" gets exactly ac_beam_defaults(). */
static void test_decode_settings_and_notes(void) {
    ac_model m = make_model(), r;
    ac_err err;
    const char *meta[] = {"decode", "{\"beam\":5,\"len_alpha\":0.75,\"chosen_by\":\"bleu4\"}", "training",
                          "{\"step\":7}", NULL};
    CHECKF(ac_model_save(&m, tmp("dec.st"), 0, meta, &err) == 0, "%s", err.msg);
    CHECKF(ac_model_load(tmp("dec.st"), &r, &err) == 0, "%s", err.msg);
    ac_beam_opts d = ac_beam_defaults();
    CHECK(r.decode.beam == 5 && r.decode.len_alpha == 0.75f && r.decode.max_len == d.max_len);
    CHECK(r.decode.allow_unk == d.allow_unk && r.decode.nbest == d.nbest);
    CHECK(r.training_json && !strcmp(r.training_json, "{\"step\":7}"));
    CHECK(r.path && !strcmp(r.path, tmp("dec.st")));
    ac_model_free(&r);
    /* ac_model_set_meta replaces the record; a reload sees the new one */
    CHECKF(ac_model_set_meta(tmp("dec.st"), "decode", "{\"beam\":1,\"max_len\":7,\"len_alpha\":0}", &err) == 0, "%s",
           err.msg);
    CHECKF(ac_model_load(tmp("dec.st"), &r, &err) == 0, "%s", err.msg);
    CHECK(r.decode.beam == 1 && r.decode.max_len == 7 && r.decode.len_alpha == 0.0f);
    CHECK(memcmp(r.dec.params, m.dec.params, sizeof(float) * m.dec.n_params) == 0);
    ac_model_free(&r);
    CHECKF(ac_model_save(&m, tmp("nodec.st"), 0, NULL, &err) == 0, "%s", err.msg);
    CHECKF(ac_model_load(tmp("nodec.st"), &r, &err) == 0, "%s", err.msg);
    CHECK(memcmp(&r.decode, &d, sizeof d) == 0 && r.training_json == NULL);
    ac_model_free(&r);
    ac_model_free(&m);
}

static void write_bytes(const char *path, const void *p, size_t n) {
    FILE *f = fopen(path, "wb");
    fwrite(p, 1, n, f);
    fclose(f);
}

static void test_refuses_truncated_and_absurd_header(void) {
    ac_model m = make_model(), r;
    ac_err err;
    CHECK(ac_model_save(&m, tmp("good.st"), 0, NULL, &err) == 0);
    char *buf;
    size_t len;
    CHECK(ac_read_file(tmp("good.st"), 1 << 30, &buf, &len, &err) == 0);
    /* every truncation point: an error, never a crash */
    for (size_t cut = 0; cut < len; cut += (cut < 64 ? 1 : 97)) {
        write_bytes(tmp("cut.st"), buf, cut);
        CHECKF(ac_model_load(tmp("cut.st"), &r, &err) != 0, "truncated at %zu loaded", cut);
        CHECK(strstr(err.msg, "cut.st") && !strchr(err.msg, '\n'));
    }
    /* absurd header length */
    uint64_t huge = 0x7fffffffffffffffull;
    memcpy(buf, &huge, 8);
    write_bytes(tmp("huge.st"), buf, len);
    CHECK(ac_model_load(tmp("huge.st"), &r, &err) != 0 && strstr(err.msg, "huge.st"));
    /* not a file */
    CHECK(ac_model_load(test_tmpdir(), &r, &err) != 0);
    CHECK(ac_model_load(tmp("does-not-exist.st"), &r, &err) != 0 && strstr(err.msg, "does-not-exist"));
    free(buf);
    ac_model_free(&m);
}

/* A non-finite weight is refused with its index: in a whole block of 1,024 (the vectorized test), at
 * a block's edges, in the tail, and the first of two. lstm_w here: (6 + 3 + 40) x 160 = 7,840 values. */
static void test_non_finite_weight_found(void) {
    ac_model m = make_model(), r;
    ac_err err;
    ac_decoder_config c = m.dec.cfg;
    c.hidden = 40;
    ac_decoder_free(&m.dec);
    CHECK(ac_decoder_init(&m.dec, &c, 5, &err) == 0);
    const size_t n = (size_t)(c.embed + c.dim + c.hidden) * 4 * c.hidden;
    CHECK(n == 7840);
    const struct { size_t at, also; float v; } cases[] = {
        {0, 0, NAN}, {1023, 1023, INFINITY}, {1024, 1024, -INFINITY}, {5000, 5000, NAN},
        {7839, 7839, NAN}, {2000, 3000, NAN}, {7000, 7500, INFINITY}};
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        const float keep = m.dec.lstm_w[cases[i].at], keep2 = m.dec.lstm_w[cases[i].also];
        m.dec.lstm_w[cases[i].also] = INFINITY, m.dec.lstm_w[cases[i].at] = cases[i].v;
        char want[64];
        snprintf(want, sizeof want, "'lstm_w' has a non-finite value at %zu", cases[i].at);
        CHECKF(ac_model_save(&m, tmp("nonfinite.st"), 0, NULL, &err) == 0, "%s", err.msg);
        CHECKF(ac_model_load(tmp("nonfinite.st"), &r, &err) != 0 && strstr(err.msg, want), "want \"%s\", got \"%s\"",
               want, err.msg);
        /* stored as F16 and loaded for captions: tested in float16, without widening */
        CHECKF(ac_model_save(&m, tmp("nonfinite16.st"), 1, NULL, &err) == 0, "%s", err.msg);
        CHECKF(ac_model_load_for_captions(tmp("nonfinite16.st"), &r, &err) != 0 && strstr(err.msg, want),
               "float16: want \"%s\", got \"%s\"", want, err.msg);
        m.dec.lstm_w[cases[i].also] = keep2, m.dec.lstm_w[cases[i].at] = keep;
    }
    CHECKF(ac_model_save(&m, tmp("nonfinite.st"), 0, NULL, &err) == 0, "%s", err.msg);
    CHECKF(ac_model_load(tmp("nonfinite.st"), &r, &err) == 0, "%s", err.msg);
    ac_model_free(&r);
    ac_model_free(&m);
}

/* Loaded for captions, a model stored as F16 has the same float16 copies of the streamed weights as
 * ac_model_load + ac_decoder_use_f16 make from its float32 weights (the path every model took before),
 * its embeddings as stored, the same other weights, and refuses to be saved. Fails if take_f16 packs
 * rows or columns wrongly. */
static void test_load_for_captions(void) {
    ac_model m = make_model(), a, b;
    ac_err err;
    ac_decoder_config c = m.dec.cfg;
    c.hidden = 40, c.embed = 24, c.att = 72; /* more than a 64-column panel: a ragged one too */
    ac_decoder_free(&m.dec);
    CHECK(ac_decoder_init(&m.dec, &c, 7, &err) == 0);
    CHECKF(ac_model_save(&m, tmp("captions16.st"), 1, NULL, &err) == 0, "%s", err.msg);
    CHECKF(ac_model_load(tmp("captions16.st"), &a, &err) == 0, "%s", err.msg);
    CHECKF(ac_model_load_for_captions(tmp("captions16.st"), &b, &err) == 0, "%s", err.msg);
    if (ac_decoder_use_f16(&a.dec) != 1) {
        CHECK(!b.dec.f16_only && !b.dec.lstm_w16); /* no float16 kernel in this build: float32 as before */
        printf("  (no float16 kernel on this CPU: compared the float32 path only)\n");
    } else {
        CHECK(b.dec.f16_only && ac_decoder_use_f16(&b.dec) == 1);
        const int X = c.embed + c.dim + c.hidden;
        const struct { const uint16_t *a, *b; int rows, cols; } p[] = {
            {a.dec.lstm_w16, b.dec.lstm_w16, X, 4 * c.hidden}, {a.dec.out_lo16, b.dec.out_lo16, c.embed, c.vocab},
            {a.dec.att_wh16, b.dec.att_wh16, c.hidden, c.att}, {a.dec.out_lh16, b.dec.out_lh16, c.hidden, c.embed},
            {a.dec.out_lz16, b.dec.out_lz16, c.dim, c.embed}};
        for (int i = 0; i < 5; i++)
            CHECKF(p[i].a && p[i].b && !memcmp(p[i].a, p[i].b, ac_smm_packed_size(p[i].rows, p[i].cols) * 2),
                   "streamed weight %d", i);
        const size_t ne = (size_t)c.vocab * c.embed; /* the embeddings as stored: the float32 ones narrowed back */
        uint16_t *emb = malloc(ne * sizeof *emb);
        ac_f32_to_f16_n(a.dec.emb, emb, ne);
        CHECK(b.dec.emb16 && !memcmp(b.dec.emb16, emb, ne * sizeof *emb));
        free(emb);
        CHECK(ac_model_save(&b, tmp("again.st"), 1, NULL, &err) != 0 && strstr(err.msg, "loaded for captioning"));
    }
    ac_dec_tensor t[AC_DEC_MAX_TENSORS];
    const int nt = ac_decoder_tensors(&c, t, NULL);
    for (int i = 0; i < nt; i++) {
        const int streamed = !strcmp(t[i].name, "lstm_w") || !strcmp(t[i].name, "out_lo") || !strcmp(t[i].name, "emb") ||
                             !strcmp(t[i].name, "att_wh") || !strcmp(t[i].name, "out_lh") || !strcmp(t[i].name, "out_lz");
        if (streamed && b.dec.f16_only) continue;
        CHECKF(!memcmp(a.dec.params + t[i].offset, b.dec.params + t[i].offset,
                       sizeof(float) * (size_t)t[i].rows * t[i].cols), "%s", t[i].name);
    }
    ac_model_free(&a), ac_model_free(&b), ac_model_free(&m);
}

int main(void) {
    RUN(test_roundtrip_f32_and_f16);
    RUN(test_load_for_captions);
    RUN(test_non_finite_weight_found);
    RUN(test_roundtrip_scores);
    RUN(test_roundtrip_hard);
    RUN(test_old_file_is_additive);
    RUN(test_refuses_bad_models);
    RUN(test_training_photos_checked_at_load);
    RUN(test_paired_counts);
    RUN(test_repeatable_and_merge);
    RUN(test_decode_settings_and_notes);
    RUN(test_refuses_truncated_and_absurd_header);
    return TEST_EXIT();
}
