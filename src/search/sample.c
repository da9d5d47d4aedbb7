/* sample.c: captions drawn from the decoder's distribution (sample.h). */
#include "attncap/sample.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "attncap/vocab.h"
#include "decoder_internal.h"
#include "alloc_internal.h"

struct ac_sampler {
    int max_rows, max_len;
    int *prev, *rows;
    float *h, *c, *h2, *c2, *logp, *alpha, *scratch;
};

ac_sampler *ac_sampler_new(const ac_decoder_config *cfg, int max_rows, int max_len) {
    ac_sampler *s = ac_calloc(1, sizeof *s);
    if (!s) return NULL;
    const size_t R = (size_t)max_rows, H = (size_t)cfg->hidden;
    s->max_rows = max_rows, s->max_len = max_len;
    s->prev = ac_malloc(sizeof(int) * R), s->rows = ac_malloc(sizeof(int) * R);
    s->h = ac_malloc(sizeof(float) * R * H), s->c = ac_malloc(sizeof(float) * R * H);
    s->h2 = ac_malloc(sizeof(float) * R * H), s->c2 = ac_malloc(sizeof(float) * R * H);
    s->logp = ac_malloc(sizeof(float) * R * (size_t)cfg->vocab), s->alpha = ac_malloc(sizeof(float) * R * (size_t)cfg->n_ann);
    s->scratch = ac_malloc(sizeof(float) * ac_decoder_step_scratch(cfg, max_rows));
    if (!s->prev || !s->rows || !s->h || !s->c || !s->h2 || !s->c2 || !s->logp || !s->alpha || !s->scratch) {
        ac_sampler_free(s);
        return NULL;
    }
    return s;
}

void ac_sampler_free(ac_sampler *s) {
    if (!s) return;
    free(s->prev), free(s->rows), free(s->h), free(s->c), free(s->h2), free(s->c2), free(s->logp), free(s->alpha);
    free(s->scratch), free(s);
}

/* A word drawn from logp [V] (a log-softmax row) with u in [0, 1), never <pad>, <start> or <unk>.
 * The row sums to 1, so the words that may come hold 1 less the three that may not: no pass over the
 * vocabulary before the draw, whose walk ends early (the vocabulary is sorted by frequency). */
static int draw_word(const float *logp, int V, double u) {
    const double total = 1.0 - exp(logp[AC_PAD]) - exp(logp[AC_START]) - exp(logp[AC_UNK]);
    const double target = u * total;
    double acc = 0;
    int last = AC_END;
    for (int v = AC_END; v < V; v++) {
        if (v == AC_UNK) continue;
        const double p = exp(logp[v]);
        if (p > 0) last = v;
        acc += p;
        if (acc > target) return v;
    }
    return last; /* rounding: the last word with any probability */
}

static double uniform(uint64_t seed, int row, int t) {
    const uint64_t x = ac_mix64(seed ^ ac_mix64((uint64_t)row * 0xD1B54A32D192ED03ull + (uint64_t)t * 0x94D049BB133111EBull + 1));
    return (double)(x >> 11) * (1.0 / 9007199254740992.0);
}

int ac_sample_captions(ac_sampler *s, const ac_decoder *dec, const ac_dec_image *const *img, int n, int K, uint64_t seed,
                       int *words, int *len, double *logp) {
    const int R = n * K, H = dec->cfg.hidden, V = dec->cfg.vocab, M = s->max_len;
    if (R > s->max_rows || R < 1 || dec->cfg.decoder != AC_DECODER_LSTM) return -1;
    for (int p = 0; p < n; p++) {
        float *h = s->h + (size_t)p * K * H, *c = s->c + (size_t)p * K * H;
        ac_decoder_initial_state(dec, img[p], h, c);
        for (int k = 1; k < K; k++) memcpy(h + (size_t)k * H, h, sizeof(float) * H), memcpy(c + (size_t)k * H, c, sizeof(float) * H);
        s->rows[p] = K;
    }
    for (int i = 0; i < R; i++) {
        s->prev[i] = AC_START, len[i] = -1; /* -1: still going */
        if (logp) logp[i] = 0;
    }
    for (int t = 0; t <= M; t++) {
        int going = 0;
        for (int i = 0; i < R; i++) going += len[i] < 0;
        if (!going) break;
        if (t == M) { /* cut at max_len words */
            for (int i = 0; i < R; i++)
                if (len[i] < 0) len[i] = M;
            break;
        }
        ac_decoder_step_photos(dec, n, img, s->rows, s->prev, s->h, s->c, s->h2, s->c2, s->logp, s->alpha, NULL, s->scratch);
        for (int i = 0; i < R; i++) {
            if (len[i] >= 0) continue;
            const float *lp = s->logp + (size_t)i * V;
            const int w = draw_word(lp, V, uniform(seed, i, t));
            if (logp) logp[i] += lp[w];
            if (w == AC_END) len[i] = t;
            else words[(size_t)i * M + t] = w;
            s->prev[i] = w;
        }
        float *x = s->h;
        s->h = s->h2, s->h2 = x, x = s->c, s->c = s->c2, s->c2 = x;
    }
    return 0;
}
