/* test_aspect.c: photos that keep their aspect ratio (encoder.h, AC_RESIZE_ASPECT) through the small
 * shared encoder (MobileNetV1 0.25 at 128: a 4 x 4 grid, stride 32). The encoder's grid of a photo is
 * the CNN run by hand at the photo's own shape (cells first, zeros after), for more shapes than it keeps
 * plans of, and in a lane; a model recording the policy captions photos on their own grids, exactly as
 * a model of that grid captions the unpadded cells (padding invariance), photo by photo and in batches. */
#include <math.h>
#include <stdlib.h>
#include <unistd.h>

#include "attncap/captioner.h"
#include "attncap/png.h"
#include "cnn_internal.h"     /* ac_cnn_find_layer */
#include "decoder_internal.h" /* ac_decoder_alloc: the same weights on another grid */
#include "test.h"

#define SMALL_ENCODER "encoders/mobilenet_v1_0.25_128_quant.tflite"

static char tmp[4096];
static const char *tpath(const char *name) {
    const char *t = getenv("ATTNCAP_TEST_TMP");
    snprintf(tmp, sizeof tmp, "%s/%s", t && *t ? t : "/tmp", name);
    return tmp;
}

/* Photos of 7 shapes at 128: 300x100 -> 128x32 (grid 1x4), 100x300, 200x150 -> 128x96, 150x200,
 * 400x200 -> 128x64, 200x400, 90x90 (the square, the encoder's own plan). */
#define NSHAPES 7
static const int shapes[NSHAPES][2] = {{300, 100}, {100, 300}, {200, 150}, {150, 200}, {400, 200}, {200, 400}, {90, 90}};
static const int grids[NSHAPES][2] = {{1, 4}, {4, 1}, {3, 4}, {4, 3}, {2, 4}, {4, 2}, {4, 4}};
static char photo_paths[NSHAPES][4200];

static void make_photos(void) {
    for (int i = 0; i < NSHAPES; i++) {
        const int w = shapes[i][0], h = shapes[i][1];
        ac_image im = {w, h, malloc((size_t)w * h * 3)};
        for (int y = 0; y < h; y++)
            for (int x = 0; x < w; x++) {
                uint8_t *p = im.px + ((size_t)y * w + x) * 3;
                p[0] = (uint8_t)(255 * x / w), p[1] = (uint8_t)(255 * y / h), p[2] = (uint8_t)((x * y + 40 * i) & 255);
            }
        char name[64];
        snprintf(name, sizeof name, "shape%d.png", i);
        snprintf(photo_paths[i], sizeof photo_paths[i], "%s", tpath(name));
        ac_err err;
        CHECKF(ac_png_write(photo_paths[i], &im, &err) == 0, "%s", err.msg);
        free(im.px);
    }
}

/* The CNN by hand: a plan made for the prepared photo's own size, on its normalised pixels. */
static int by_hand(const ac_encoder *enc, const ac_image *photo, float *out, int *gh, int *gw) {
    ac_image r;
    ac_err err;
    int w, h, dim;
    ac_resize_dims(photo->w, photo->h, enc->size, 32, AC_RESIZE_ASPECT, &w, &h);
    if (ac_image_resize(photo, w, h, &r, &err)) return -1;
    ac_cnn *cnn;
    const int t = ac_cnn_find_layer(enc->model, enc->layer); /* the tensor's full name */
    if (t < 0 || ac_cnn_create(enc->model, enc->model->tensors[t].name, h, w, 1, &cnn, &err)) {
        printf("# %s\n", err.msg);
        ac_image_free(&r);
        return -1;
    }
    float *x = malloc(sizeof(float) * (size_t)w * h * 3);
    ac_image_to_float(&r, enc->norm.mean, enc->norm.scale, x);
    ac_cnn_output_shape(cnn, gh, gw, &dim);
    const int rc = ac_cnn_run(cnn, x, out, &err);
    free(x), ac_cnn_free(cnn), ac_image_free(&r);
    return rc;
}

static void encoder_runs_each_shape(void) {
    const char *enc_path = test_shared(SMALL_ENCODER);
    if (!enc_path) SKIP("needs ../shared/" SMALL_ENCODER);
    make_photos();
    ac_encoder enc, lane;
    ac_err err;
    CHECKF(ac_encoder_open(enc_path, NULL, 128, 1, &enc, &err) == 0, "%s", err.msg);
    CHECK(enc.grid_h == 4 && enc.grid_w == 4);
    CHECKF(ac_encoder_set_resize(&enc, AC_RESIZE_ASPECT, &err) == 0, "%s", err.msg);
    CHECKF(ac_encoder_lane(&enc, 1, &lane, &err) == 0, "%s", err.msg);
    const size_t LD = (size_t)16 * enc.dim;
    float *got = malloc(sizeof(float) * LD), *want = malloc(sizeof(float) * LD), *again = malloc(sizeof(float) * LD);
    for (int pass = 0; pass < 2; pass++) /* twice round 7 shapes: the kept plans are replaced and made again */
        for (int i = 0; i < NSHAPES; i++) {
            ac_image photo;
            CHECKF(ac_image_load(photo_paths[i], &photo, &err) == 0, "%s", err.msg);
            for (size_t k = 0; k < LD; k++) got[k] = NAN;
            int gh = 0, gw = 0, hh = 0, hw = 0, lh = 0, lw = 0;
            CHECKF(ac_encoder_encode_grid(&enc, &photo, got, &gh, &gw, &err) == 0, "%s", err.msg);
            CHECK(by_hand(&enc, &photo, want, &hh, &hw) == 0);
            CHECK(ac_encoder_encode_grid(&lane, &photo, again, &lh, &lw, &err) == 0);
            const size_t own = (size_t)gh * gw * enc.dim;
            int zeros = 1;
            for (size_t k = own; k < LD; k++) zeros &= got[k] == 0.0f;
            CHECKF(gh == grids[i][0] && gw == grids[i][1] && hh == gh && hw == gw && lh == gh && lw == gw,
                   "%dx%d: grid %dx%d, by hand %dx%d", shapes[i][0], shapes[i][1], gh, gw, hh, hw);
            CHECKF(!memcmp(got, want, own * sizeof *got) && zeros, "%dx%d: not the CNN's own grid", shapes[i][0],
                   shapes[i][1]);
            CHECK(!memcmp(got, again, LD * sizeof *got));
            ac_image_free(&photo);
        }
    free(got), free(want), free(again);
    ac_encoder_lane_close(&lane);
    ac_encoder_close(&enc);
}

/* A random model over the encoder's grid whose identity records the aspect policy. */
static int make_model(const char *out, const char *enc_path, ac_err *err) {
    ac_encoder enc;
    if (ac_encoder_open(enc_path, NULL, 128, 1, &enc, err)) return -1;
    if (ac_encoder_set_resize(&enc, AC_RESIZE_ASPECT, err)) return -1;
    ac_model m = {0};
    ac_decoder_config cfg = {.vocab = 14, .embed = 16, .hidden = 24, .att = 16, .dim = enc.dim,
                             .n_ann = enc.grid_h * enc.grid_w, .grid_h = enc.grid_h, .grid_w = enc.grid_w};
    m.encoder_json = ac_encoder_id_json(&enc);
    ac_encoder_close(&enc);
    int rc = ac_decoder_init(&m.dec, &cfg, 42, err);
    for (int i = 0; !rc && i < cfg.embed * cfg.vocab; i++) m.dec.out_lo[i] *= 6;
    if (!rc)
        rc = ac_vocab_from_json("[\"<pad>\",\"<start>\",\"<end>\",\"<unk>\",\"a\",\"dog\",\"runs\",\"on\",\"the\","
                                "\"grass\",\"man\",\"rides\",\"horse\",\"kite\"]", &m.vocab, err);
    if (!rc) rc = ac_model_save(&m, out, 0, NULL, err);
    ac_model_free(&m);
    return rc;
}

typedef struct {
    int n, ok[NSHAPES], nw[NSHAPES], words[NSHAPES][24], gh[NSHAPES], gw[NSHAPES];
    double logprob[NSHAPES];
    float alpha0[NSHAPES][16];
} seen;

static void on_result(void *user, const ac_batch_result *r) {
    seen *s = user;
    const int i = s->n++;
    if (i >= NSHAPES || !(s->ok[i] = r->ok)) return;
    const ac_caption *c = r->caption;
    s->nw[i] = c->n < 24 ? c->n : 24, s->gh[i] = c->grid_h, s->gw[i] = c->grid_w, s->logprob[i] = c->logprob;
    memcpy(s->words[i], c->words, sizeof(int) * (size_t)s->nw[i]);
    memcpy(s->alpha0[i], c->alpha, sizeof(float) * (size_t)(c->grid_h * c->grid_w));
}

static void captions_on_own_grids(void) {
    const char *enc_path = test_shared(SMALL_ENCODER);
    if (!enc_path) SKIP("needs ../shared/" SMALL_ENCODER);
    char enc[4200], model[4200];
    snprintf(enc, sizeof enc, "%s", enc_path);
    snprintf(model, sizeof model, "%s", tpath("aspect.safetensors"));
    ac_err err;
    CHECKF(make_model(model, enc, &err) == 0, "%s", err.msg);
    ac_captioner c;
    CHECKF(ac_captioner_init(&c, model, enc, 1, &err) == 0, "%s", err.msg);
    CHECK(c.enc.resize == AC_RESIZE_ASPECT && c.id.policy == AC_RESIZE_ASPECT);
    /* the classifier head's windows (quadrants of the 4 x 4 grid and its centre), fitted into each photo's grid */
    ac_grid_window win[5];
    const int nw = ac_grid_windows(4, 4, 2, 2, 1, win, 5);
    CHECKF(nw == 5 && ac_captioner_want_classes(&c, win, nw, &err) == 0, "%s", err.msg);
    seen one = {0};
    float *ann = malloc(sizeof(float) * (size_t)c.L * c.D);
    for (int i = 0; i < NSHAPES; i++) {
        ac_image photo;
        ac_caption cap;
        CHECKF(ac_image_load(photo_paths[i], &photo, &err) == 0, "%s", err.msg);
        CHECKF(ac_captioner_run(&c, &photo, &cap, NULL, NULL, &err) == 0, "%s", err.msg);
        ac_batch_result r = {.index = i, .ok = 1, .caption = &cap};
        on_result(&one, &r);
        int probs_ok = 1; /* whole photo and 5 windows, each a distribution */
        for (int k = 0; k < 6; k++) {
            double sum = 0;
            for (int j = 0; j < c.n_classes; j++) sum += c.probs[k * c.n_classes + j];
            probs_ok &= fabs(sum - 1) < 1e-3;
        }
        CHECKF(probs_ok, "photo %d: class probabilities", i);
        /* by hand: the photo's own cells, unpadded, captioned by the same weights on a grid of that shape */
        int gh, gw;
        CHECK(ac_encoder_encode_grid(&c.enc, &photo, ann, &gh, &gw, &err) == 0);
        ac_decoder_config cfg = c.model.dec.cfg;
        cfg.grid_h = gh, cfg.grid_w = gw, cfg.n_ann = gh * gw;
        ac_decoder own;
        CHECKF(ac_decoder_alloc(&own, &cfg, &err) == 0, "%s", err.msg);
        memcpy(own.params, c.model.dec.params, sizeof(float) * own.n_params);
        ac_caption ref;
        CHECK(ac_beam_search(&own, ann, &c.beam, &ref, &err) == 0);
        CHECKF(cap.grid_h == gh && cap.grid_w == gw && gh == grids[i][0] && gw == grids[i][1], "grid %dx%d", cap.grid_h,
               cap.grid_w);
        CHECKF(cap.n == ref.n && !memcmp(cap.words, ref.words, sizeof(int) * (size_t)cap.n) &&
                   cap.logprob == ref.logprob &&
                   !memcmp(cap.alpha, ref.alpha, sizeof(float) * (size_t)(cap.n + 1) * gh * gw),
               "photo %d: padded and unpadded captions differ", i);
        ac_caption_free(&ref), ac_caption_free(&cap);
        ac_decoder_free(&own);
        ac_image_free(&photo);
    }
    free(ann);
    /* the batch (one lane with a decoding thread; then lanes): the same captions and grids */
    const char *paths[NSHAPES];
    for (int i = 0; i < NSHAPES; i++) paths[i] = photo_paths[i];
    for (int threads = 1; threads <= 3; threads += 2) {
        seen got = {0};
        ac_batch_stats st;
        CHECKF(ac_captioner_batch(&c, paths, NSHAPES, threads, 0, on_result, &got, &st, &err) == 0, "%s", err.msg);
        int same = got.n == NSHAPES;
        for (int i = 0; same && i < NSHAPES; i++)
            same = got.ok[i] && got.nw[i] == one.nw[i] && !memcmp(got.words[i], one.words[i], sizeof(int) * (size_t)one.nw[i]) &&
                   got.logprob[i] == one.logprob[i] && got.gh[i] == one.gh[i] && got.gw[i] == one.gw[i] &&
                   !memcmp(got.alpha0[i], one.alpha0[i], sizeof(float) * (size_t)(one.gh[i] * one.gw[i]));
        CHECKF(same, "threads %d: the batch differs", threads);
    }
    ac_captioner_free(&c);
}

int main(void) {
    RUN(encoder_runs_each_shape);
    RUN(captions_on_own_grids);
    return TEST_EXIT();
}
