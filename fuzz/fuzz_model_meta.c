/* fuzz/fuzz_model_meta.c: libFuzzer target for the model file's metadata validator (ac_model_load's
 * checks of format, config, vocab, encoder, training, vocab_counts, decode, tag_precision, naming,
 * confidence, training_photos and unknown keys) and for the readers a captioner then runs on what it
 * accepted. The input is a list of records, each one selector byte then a value up to the next NUL:
 * selector % 24 < 12 sets metadata key KEYS[selector % 12] to the value (11: a key no model holds),
 * >= 12 removes that key. The records edit a tiny valid model's metadata; the tensors written are those
 * of the config the file ends up with when it parses and is small (ac_decoder_config_from_json, the
 * loader's own), so a config change reaches the checks after the shapes. Contract checked: an error
 * is one line naming the file; a model that loads has a vocabulary of the config's size, a naming
 * record the check accepts, a calibration and tag precisions that give probabilities, a decode setting
 * in range, and a training-photos record that eval reads (the loader refused the malformed). Seeds:
 * fuzz/make_corpus.sh (fuzz/corpus/model_meta). Replayed by tests/test_fuzz_regress.c. */
#include "fuzz_main.h"
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "attncap/decoder.h"
#include "attncap/model.h"
#include "attncap/naming.h"
#include "attncap/safetensors.h"
#include "attncap/vocab.h"
#include "decoder_internal.h"

enum { MM_KEYS = 12 };
static const char *const mm_keys[MM_KEYS] = {"format", "config", "vocab", "encoder", "training", "vocab_counts",
                                             "decode", "tag_precision", "naming", "confidence", "training_photos",
                                             "x_unknown"};
/* the tiny model's own: 8 words, a 2 x 2 grid of 3 */
static const char *const mm_base[MM_KEYS] = {
    "attncap-decoder-1",
    "{\"vocab\":8,\"embed\":4,\"hidden\":4,\"att\":4,\"dim\":3,\"n_ann\":4,\"grid_h\":2,\"grid_w\":2,\"dropout\":0,\"lambda\":1}",
    "[\"<pad>\",\"<start>\",\"<end>\",\"<unk>\",\"a\",\"dog\",\"on\",\"grass\"]",
    "{}", NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL};
static char fuzz_model_meta_dir[4096];

/* The tensors of cfg into w, filled with small values (params: n_params floats, caller frees). */
static int mm_add_tensors(ac_st_writer *w, const ac_decoder_config *cfg, float **params, ac_err *err) {
    ac_dec_tensor t[AC_DEC_MAX_TENSORS];
    size_t np = 0;
    const int nt = ac_decoder_tensors(cfg, t, &np);
    if (!(*params = malloc((np + 1) * sizeof(float)))) abort();
    for (size_t i = 0; i < np; i++) (*params)[i] = (float)((int)(i * 37 % 17) - 8) / 64.0f;
    for (int i = 0; i < nt; i++) {
        int64_t shape[2] = {t[i].rows, t[i].cols};
        const int nd = t[i].rows == 1 ? 1 : 2;
        if (ac_st_writer_add(w, t[i].name, AC_ST_F32, nd, nd == 1 ? shape + 1 : shape, *params + t[i].offset, err)) return -1;
    }
    return 0;
}

static void mm_one_line(const ac_err *err, const char *path) {
    if (getenv("ATTNCAP_FUZZ_VERBOSE")) fprintf(stderr, "fuzz_model_meta: %s\n", err->msg);
    if (strchr(err->msg, '\n') || !strstr(err->msg, path)) abort();
}

static int fuzz_model_meta(const uint8_t *data, size_t size) {
    if (!fuzz_model_meta_dir[0]) {
        snprintf(fuzz_model_meta_dir, sizeof fuzz_model_meta_dir, "%s/fuzz-model-meta-XXXXXX",
                 getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp");
        if (!mkdtemp(fuzz_model_meta_dir)) abort();
    }
    char path[4200];
    snprintf(path, sizeof path, "%s/model.safetensors", fuzz_model_meta_dir);
    /* the records: values point into a NUL-terminated copy of the input */
    char *buf = malloc(size + 1);
    if (!buf) abort();
    memcpy(buf, data, size);
    buf[size] = 0;
    const char *meta[MM_KEYS];
    memcpy(meta, mm_base, sizeof meta);
    for (size_t p = 0; p < size;) {
        const int sel = (unsigned char)buf[p] % (2 * MM_KEYS);
        const char *v = buf + p + 1;
        size_t len = p + 1 <= size ? strlen(v) : 0;
        meta[sel % MM_KEYS] = sel < MM_KEYS ? v : NULL;
        p += 1 + len + 1;
    }
    ac_err err;
    ac_st_writer w;
    ac_st_writer_init(&w);
    ac_decoder_config cfg;
    float *params = NULL;
    int ok = 1;
    if (!meta[1] || ac_decoder_config_from_json(meta[1], &cfg, &err)) /* no config of its own: the tiny one's tensors */
        if (ac_decoder_config_from_json(mm_base[1], &cfg, &err)) abort();
    size_t np = 0;
    ac_dec_tensor t[AC_DEC_MAX_TENSORS];
    ac_decoder_tensors(&cfg, t, &np);
    if (np > (1u << 18) && ac_decoder_config_from_json(mm_base[1], &cfg, &err)) abort(); /* too big to write each time */
    ok = mm_add_tensors(&w, &cfg, &params, &err) == 0;
    for (int k = 0; ok && k < MM_KEYS; k++)
        if (meta[k] && ac_st_writer_meta(&w, mm_keys[k], meta[k], &err)) ok = 0;
    if (ok && ac_st_write(&w, path, &err)) ok = 0;
    ac_st_writer_free(&w);
    free(params);
    free(buf);
    if (!ok) return 0; /* the writer refused (a value its JSON header cannot hold): not the loader's input */
    ac_model m;
    if (ac_model_load(path, &m, &err)) {
        mm_one_line(&err, path);
        return 0;
    }
    /* what the captioner reads from an accepted file */
    if (ac_vocab_size(m.vocab) != m.dec.cfg.vocab || !m.encoder_json || !m.path) abort();
    if (m.naming_json && ac_naming_check_json(m.naming_json, &err)) abort();
    if (getenv("ATTNCAP_FUZZ_VERBOSE")) fprintf(stderr, "fuzz_model_meta: loaded\n");
    ac_naming_opts no = ac_naming_opts_for_model(&m);
    if (no.max_tags < 0 || no.max_tags > AC_MAX_CONSTRAINTS) abort();
    if (m.confidence.n) {
        for (double x = -40; x <= 0; x += 10) {
            double pr = ac_confidence_apply(&m.confidence, x);
            if (!(pr >= 0 && pr <= 1)) abort();
        }
    }
    for (int i = 0; i < m.tag_precision.n_words; i++) {
        const char *wd = m.tag_precision.words[i].word;
        if (!wd || ac_tag_precision_find(&m.tag_precision, wd) != &m.tag_precision.words[i]) abort();
        for (double pr = 0; pr <= 1; pr += 0.25) {
            double q = ac_tag_precision_of(&m.tag_precision, wd, pr);
            if (!(q >= 0 && q <= 1)) abort();
        }
    }
    if (m.decode.beam < 1 || m.decode.max_len < 1) abort();
    if (m.paired_counts)
        for (int i = 0; i < m.dec.cfg.vocab; i++)
            if (m.paired_counts[i] < 0) abort();
    const char *names[3] = {"photo00.jpg", "dir/photo01.jpg", ""};
    int hits, n_trained;
    if (ac_model_training_photos_hits(path, names, 3, &hits, &n_trained, &err)) abort(); /* the loader checked it */
    if ((hits < 0) != (n_trained < 0) || hits > 3) abort();
    ac_model_free(&m);
    return 0;
}

AC_FUZZ_MAIN(fuzz_model_meta, "ATTNCAP_MAX_TENSOR_ELEMS", "4000000")
