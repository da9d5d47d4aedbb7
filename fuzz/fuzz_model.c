/* fuzz/fuzz_model.c: libFuzzer target for the decoder model file (ac_model_load: safetensors
 * container, config and vocabulary metadata JSON, tensor names and shapes against the config, F16/F32
 * weights, finite values). The input is written to a temp file; a model that loads is run for one
 * decoding step over zero annotations, so a config that passed validation but disagrees with the
 * buffers would show up. Seeds: fuzz/corpus/model (tiny F32 and F16 models written by
 * fuzz/make_corpus.sh with ac_model_save). Replayed by tests/test_fuzz_regress.c. */
#include "fuzz_main.h"
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "attncap/decoder.h"
#include "attncap/model.h"
#include "attncap/vocab.h"

static char fuzz_model_dir[4096];

static int fuzz_model(const uint8_t *data, size_t size) {
    if (!fuzz_model_dir[0]) {
        snprintf(fuzz_model_dir, sizeof fuzz_model_dir, "%s/fuzz-model-XXXXXX", getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp");
        if (!mkdtemp(fuzz_model_dir)) abort();
    }
    char path[4200];
    snprintf(path, sizeof path, "%s/model.safetensors", fuzz_model_dir);
    FILE *f = fopen(path, "wb");
    if (!f) abort();
    fwrite(data, 1, size, f);
    fclose(f);
    ac_model m;
    ac_err err;
    if (ac_model_load(path, &m, &err) != 0) {
        if (strchr(err.msg, '\n')) abort();
        return 0;
    }
    const ac_decoder_config *c = &m.dec.cfg;
    if (ac_vocab_size(m.vocab) != c->vocab || c->n_ann != c->grid_h * c->grid_w) abort();
    if ((size_t)c->vocab * c->embed + (size_t)c->n_ann * c->dim + (size_t)c->hidden * 8 < (1u << 22)) {
        float *ann = calloc((size_t)c->n_ann * c->dim + 1, sizeof(float));
        const size_t S = ac_decoder_state_size(c), P = ac_decoder_hist_size(c);
        float *h = calloc(2 * S + 2 * P + 1, sizeof(float)); /* state, state out, two positions' history */
        float *logp = calloc((size_t)c->vocab + 1, sizeof(float)), *alpha = calloc((size_t)c->n_ann + 1, sizeof(float));
        float *scratch = malloc(sizeof(float) * ac_decoder_advance_scratch(c, 1, 1));
        ac_dec_image *img = ann && h && logp && alpha && scratch ? ac_decoder_prepare(&m.dec, ann) : NULL;
        if (img) { /* two steps: <start>, then a word with the first step's history */
            int prev = AC_START;
            float beta;
            const int one = 1;
            const ac_dec_image *im = img;
            const float *hist = h + 2 * S;
            ac_decoder_start(&m.dec, img, h);
            ac_decoder_advance(&m.dec, 1, &im, &one, 0, &prev, h, &hist, h + S, h + 2 * S, logp, alpha, &beta, scratch);
            prev = 4 < c->vocab ? 4 : AC_UNK;
            ac_decoder_advance(&m.dec, 1, &im, &one, 1, &prev, h + S, &hist, h, h + 2 * S + P, logp, alpha, &beta, scratch);
            ac_dec_image_free(img);
        }
        free(ann), free(h), free(logp), free(alpha), free(scratch);
    }
    ac_model_free(&m);
    return 0;
}

AC_FUZZ_MAIN(fuzz_model, "ATTNCAP_MAX_TENSOR_ELEMS", "4000000")
