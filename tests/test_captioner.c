/* The captioner end to end on a tiny random model over the small shared encoder: encoder identity
 * parsing, search path, SHA-256 refusal, and photo -> caption equal to encoder + beam search run by
 * hand. Also `test_captioner --make-model OUT [ENCODER]` writes that tiny model for tests/caption_cli.sh. */
#include <stdlib.h>
#include <unistd.h>

#include "attncap/captioner.h"
#include "attncap/safetensors.h"
#include "test.h"

#define SMALL_ENCODER "encoders/mobilenet_v1_0.25_128_quant.tflite"

/* A random decoder over the encoder's grid, with a real-looking vocabulary, saved with ac_model_save. */
static int make_model(const char *out, const char *enc_path, const char *const *meta, ac_err *err) {
    ac_encoder enc;
    if (ac_encoder_open(enc_path, NULL, 128, 1, &enc, err)) return -1;
    const char *b = strrchr(enc_path, '/');
    char json[1024];
    snprintf(json, sizeof json,
             "{\"file\":\"%s\",\"sha256\":\"%s\",\"layer\":\"%s\",\"size\":128,\"grid_h\":%d,\"grid_w\":%d,\"dim\":%d,"
             "\"norm_mean\":%.9g,\"norm_scale\":%.9g,\"resize\":\"area\"}",
             b ? b + 1 : enc_path, enc.sha256, enc.layer, enc.grid_h, enc.grid_w, enc.dim, enc.norm.mean, enc.norm.scale);
    ac_model m = {0};
    ac_decoder_config cfg = {.vocab = 14, .embed = 16, .hidden = 24, .att = 16, .dim = enc.dim,
                             .n_ann = enc.grid_h * enc.grid_w, .grid_h = enc.grid_h, .grid_w = enc.grid_w};
    ac_encoder_close(&enc);
    if (ac_decoder_init(&m.dec, &cfg, 42, err)) return -1;
    for (int i = 0; i < cfg.embed * cfg.vocab; i++) m.dec.out_lo[i] *= 6;
    int rc = ac_vocab_from_json("[\"<pad>\",\"<start>\",\"<end>\",\"<unk>\",\"a\",\"dog\",\"runs\",\"on\",\"the\","
                                "\"grass\",\"man\",\"rides\",\"horse\",\"kite\"]", &m.vocab, err);
    m.encoder_json = json;
    if (!rc) rc = ac_model_save(&m, out, 0, meta, err);
    m.encoder_json = NULL;
    ac_model_free(&m);
    return rc;
}

static char tmp[4096];
static const char *tpath(const char *name) {
    const char *t = getenv("ATTNCAP_TEST_TMP");
    snprintf(tmp, sizeof tmp, "%s/%s", t && *t ? t : "/tmp", name);
    return tmp;
}

static void encoder_id_parse(void) {
    ac_encoder_id id;
    ac_err err;
    CHECK(ac_encoder_id_parse("{\"file\":\"m.tflite\",\"sha256\":\"ab\",\"size\":448,\"grid_h\":14,\"grid_w\":14,"
                              "\"dim\":1280,\"norm_mean\":127.5,\"norm_scale\":0.0078125,\"resize\":\"bilinear\"}",
                              "x", &id, &err) == 0);
    CHECK(!strcmp(id.file, "m.tflite") && id.size == 448 && id.grid_h == 14 && id.dim == 1280 && id.has_norm);
    CHECK(!strcmp(id.resize, "bilinear") && id.norm_scale == 0.0078125f);
    CHECK(ac_encoder_id_parse("[1,2]", "model.st", &id, &err) == -1 && strstr(err.msg, "model.st"));
    CHECK(ac_encoder_id_parse("{\"file\":\"../../etc/passwd\"}", "m", &id, &err) == -1 && strstr(err.msg, "bare"));
    CHECK(ac_encoder_id_parse(NULL, "m", &id, &err) == -1);
}

static void model_search(void) {
    char *p;
    ac_err err;
    CHECK(ac_find_model("/nonexistent/model.safetensors", &p, &err) == -1 && strstr(err.msg, "not found"));
    setenv("ATTNCAP_MODEL", "/nonexistent/env.safetensors", 1);
    CHECK(ac_find_model(NULL, &p, &err) == -1 && strstr(err.msg, "ATTNCAP_MODEL"));
    unsetenv("ATTNCAP_MODEL");
}

static void end_to_end(void) {
    const char *enc_path = test_shared(SMALL_ENCODER);
    const char *img_path = test_shared("images/cat.bmp");
    if (!enc_path) SKIP("needs ../shared/" SMALL_ENCODER);
    if (!img_path) img_path = test_shared("images/grace_hopper.bmp");
    if (!img_path) SKIP("needs ../shared/images/cat.bmp");
    ac_err err;
    char model[4200], *data_nan;
    size_t len_nan;
    snprintf(model, sizeof model, "%s", tpath("tiny.safetensors"));
    CHECKF(make_model(model, enc_path, NULL, &err) == 0, "%s", err.msg);
    ac_captioner c;
    CHECKF(ac_captioner_init(&c, model, enc_path, 1, &err) == 0, "%s", err.msg);
    ac_image photo;
    CHECKF(ac_image_load(img_path, &photo, &err) == 0, "%s", err.msg);
    ac_caption cap;
    CHECKF(ac_captioner_run(&c, &photo, &cap, NULL, NULL, &err) == 0, "%s", err.msg);
    /* by hand: squash, encode, beam search */
    ac_image sq;
    CHECK(ac_image_resize(&photo, 128, 128, &sq, &err) == 0);
    float *ann = malloc((size_t)c.L * c.D * sizeof *ann);
    CHECK(ac_encoder_encode(&c.enc, &sq, ann, &err) == 0);
    ac_caption ref;
    CHECK(ac_beam_search(&c.model.dec, ann, &c.beam, &ref, &err) == 0);
    CHECK(cap.n == ref.n && !memcmp(cap.words, ref.words, cap.n * sizeof(int)) && cap.logprob == ref.logprob);
    CHECK(cap.n >= 1);
    ac_caption_free(&cap), ac_caption_free(&ref);
    free(ann);
    ac_image_free(&sq), ac_image_free(&photo);
    CHECK(c.beam.beam == 3 && c.beam.max_len == 20); /* defaults */
    ac_captioner_free(&c);

    /* with 2 threads the model loads while the encoder opens: the same caption, bit for bit */
    ac_caption one, two;
    CHECKF(ac_image_load(img_path, &photo, &err) == 0, "%s", err.msg);
    for (int threads = 1; threads <= 2; threads++) {
        CHECKF(ac_captioner_init(&c, model, enc_path, threads, &err) == 0, "%s", err.msg);
        CHECKF(ac_captioner_run(&c, &photo, threads == 1 ? &one : &two, NULL, NULL, &err) == 0, "%s", err.msg);
        ac_captioner_free(&c);
    }
    CHECK(one.n == two.n && !memcmp(one.words, two.words, one.n * sizeof(int)) && one.logprob == two.logprob);
    ac_caption_free(&one), ac_caption_free(&two), ac_image_free(&photo);
    /* a damaged model and a missing encoder: the model's error, on one thread or two */
    char bad[4200];
    snprintf(bad, sizeof bad, "%s", tpath("nan.safetensors"));
    ac_st_file h;
    CHECKF(ac_st_read_header(model, &h, &err) == 0, "%s", err.msg);
    const ac_st_tensor *lw = ac_st_find(&h, "lstm_w");
    CHECK(lw && lw->dtype == AC_ST_F32 && lw->nbytes >= 8);
    CHECK(ac_read_file(model, 1 << 26, &data_nan, &len_nan, &err) == 0);
    if (lw) memset(data_nan + lw->offset + 4, 0xff, 4); /* lstm_w[1] = NaN */
    CHECK(ac_write_file_atomic(bad, data_nan, len_nan, &err) == 0);
    ac_st_free(&h), free(data_nan);
    for (int threads = 1; threads <= 2; threads++)
        CHECKF(ac_captioner_init(&c, bad, "/nonexistent/encoder.tflite", threads, &err) == -1 &&
                   strstr(err.msg, "'lstm_w' has a non-finite value at 1"),
               "%d thread(s): %s", threads, err.msg);

    /* decoding settings recorded in the model are its defaults */
    const char *meta[] = {"decode", "{\"beam\":1,\"max_len\":4,\"len_alpha\":0.5}", NULL};
    char model2[4200];
    snprintf(model2, sizeof model2, "%s", tpath("tiny2.safetensors"));
    CHECKF(make_model(model2, enc_path, meta, &err) == 0, "%s", err.msg);
    CHECKF(ac_captioner_init(&c, model2, enc_path, 1, &err) == 0, "%s", err.msg);
    CHECK(c.beam.beam == 1 && c.beam.max_len == 4 && c.beam.len_alpha == 0.5f);
    ac_captioner_free(&c);

    /* the encoder found by name beside the model */
    char beside[4200];
    snprintf(beside, sizeof beside, "%s", tpath("mobilenet_v1_0.25_128_quant.tflite"));
    char *data;
    size_t len;
    CHECK(ac_read_file(enc_path, 1 << 26, &data, &len, &err) == 0);
    CHECK(ac_write_file_atomic(beside, data, len, &err) == 0);
    char *found;
    ac_encoder_id id;
    CHECK(ac_captioner_init(&c, model, NULL, 1, &err) == 0);
    id = c.id;
    ac_captioner_free(&c);
    CHECKF(ac_find_encoder(NULL, model, &id, &found, &err) == 0, "%s", err.msg);
    CHECKF(!strcmp(found, beside), "found %s", found);
    free(found);
    /* a different file under the same name is refused, never used */
    data[len / 2] ^= 1;
    CHECK(ac_write_file_atomic(beside, data, len, &err) == 0);
    CHECK(ac_find_encoder(NULL, model, &id, &found, &err) == -1);
    CHECKF(strstr(err.msg, "SHA-256") && strstr(err.msg, "refusing"), "%s", err.msg);
    CHECK(ac_captioner_init(&c, model, beside, 1, &err) == -1 && strstr(err.msg, "SHA-256"));
    free(data);
}

/* Batch captioning against ac_captioner_run photo by photo: results in input order, the same
 * captions for 1, 2 and 3 threads (one lane with a decoding thread, then lanes), a missing file a
 * failed result at its place. */
typedef struct {
    int n, order_ok, photos_kept;
    int ok[8], nw[8], words[8][24];
    double logprob[8];
    char err[8][256];
} batch_seen;

static void on_result(void *user, const ac_batch_result *r) {
    batch_seen *s = user;
    if (r->index != s->n) s->order_ok = 0;
    const int i = s->n++;
    if (i >= 8) return;
    s->ok[i] = r->ok;
    if (r->ok) {
        s->nw[i] = r->caption->n < 24 ? r->caption->n : 24;
        memcpy(s->words[i], r->caption->words, sizeof(int) * (size_t)s->nw[i]);
        s->logprob[i] = r->caption->logprob;
        s->photos_kept += r->photo != NULL;
    } else {
        snprintf(s->err[i], sizeof s->err[i], "%.200s", r->err.msg);
    }
}

static void batch_in_order(void) {
    const char *enc_path = test_shared(SMALL_ENCODER);
    if (!enc_path || !test_shared("images/parrot.jpg")) SKIP("needs ../shared/" SMALL_ENCODER " and ../shared/images");
    char enc[4200], names[6][4200];
    snprintf(enc, sizeof enc, "%s", enc_path);
    const char *files[6] = {"images/cat.bmp", NULL, "images/grace_hopper.bmp", "images/parrot.jpg",
                            "images/cat_720p.jpg", "images/cat.bmp"};
    const char *paths[6];
    for (int i = 0; i < 6; i++) {
        const char *p = files[i] ? test_shared(files[i]) : NULL;
        snprintf(names[i], sizeof names[i], "%s", p ? p : "/nonexistent/missing.jpg");
        paths[i] = names[i];
    }
    ac_err err;
    char model[4200];
    snprintf(model, sizeof model, "%s", tpath("tiny_batch.safetensors"));
    CHECKF(make_model(model, enc, NULL, &err) == 0, "%s", err.msg);
    ac_captioner c;
    CHECKF(ac_captioner_init(&c, model, enc, 1, &err) == 0, "%s", err.msg);
    batch_seen ref = {.order_ok = 1};
    int mw, mh; /* the batch reads each photo as large as the encoder needs, whatever it keeps (captioner.h) */
    ac_encoder_min_photo(&c.enc, &mw, &mh);
    for (int i = 0; i < 6; i++) { /* one by one, no lanes, no threads */
        ac_image photo;
        ac_caption cap;
        ac_batch_result r = {.index = i, .path = paths[i]};
        r.ok = ac_image_load_min(paths[i], mw, mh, &photo, &r.err) == 0 &&
               ac_captioner_run(&c, &photo, &cap, NULL, NULL, &r.err) == 0;
        r.caption = &cap, r.photo = r.ok ? &photo : NULL;
        on_result(&ref, &r);
        if (r.ok) ac_caption_free(&cap);
        ac_image_free(&photo);
    }
    CHECK(ref.ok[0] && !ref.ok[1] && ref.ok[5]);
    for (int threads = 1; threads <= 3; threads++) {
        batch_seen got = {.order_ok = 1};
        ac_batch_stats st;
        CHECKF(ac_captioner_batch(&c, paths, 6, threads, 1, on_result, &got, &st, &err) == 0, "%s", err.msg);
        CHECKF(got.n == 6 && got.order_ok, "threads %d: %d results, in order %d", threads, got.n, got.order_ok);
        CHECK(st.lanes == (threads > 1 ? threads : 1));
        CHECK(got.photos_kept == 5);
        for (int i = 0; i < 6; i++) {
            CHECKF(got.ok[i] == ref.ok[i], "threads %d photo %d: ok %d vs %d", threads, i, got.ok[i], ref.ok[i]);
            if (!ref.ok[i]) {
                CHECKF(strstr(got.err[i], "missing.jpg"), "threads %d: %s", threads, got.err[i]);
                continue;
            }
            CHECKF(got.nw[i] == ref.nw[i] && !memcmp(got.words[i], ref.words[i], sizeof(int) * (size_t)ref.nw[i]) &&
                       got.logprob[i] == ref.logprob[i],
                   "threads %d photo %d: a different caption", threads, i);
        }
    }
    ac_captioner_free(&c);
}

int main(int argc, char **argv) {
    if (argc >= 3 && !strcmp(argv[1], "--make-model")) {
        ac_err err;
        const char *enc = argc > 3 ? argv[3] : test_shared(SMALL_ENCODER);
        if (!enc) {
            fprintf(stderr, "needs ../shared/" SMALL_ENCODER "\n");
            return 3;
        }
        if (make_model(argv[2], enc, NULL, &err)) {
            fprintf(stderr, "%s\n", err.msg);
            return 1;
        }
        return 0;
    }
    RUN(encoder_id_parse);
    RUN(model_search);
    RUN(end_to_end);
    RUN(batch_in_order);
    return TEST_EXIT();
}
