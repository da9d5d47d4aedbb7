/* bench_attention.c: what each attention score function (and heads, and hard attention) costs, and the
 * transformer decoder, side by side in one run: the inference step (K = 3 hypotheses of one photo, as a
 * beam of 3 decodes, at word 10: the transformer attends over its cache of 10 positions) and the
 * training step (forward + backward, batch 32 of 5 captions per photo), at the shipped model's size
 * (E = H = A = 512, V = 8912, 14x14x1280 annotations; the transformers: width 512, feed-forward 2048,
 * 8 heads, 2 layers, and the trainer's default 256, 512, 4 heads, 2 layers), random weights. The
 * variants run in interleaved rounds so that the machine's load falls on all of them alike; prints
 * each one's median, best and worst over the rounds, and its median as a ratio to additive's.
 * Usage: bench_attention [rounds] [seconds per variant and round] */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "attncap/decoder.h"

enum { N_VARIANTS = 10, K = 3, B = 32, T = 40, POS = 10 };
/* layers > 0: a transformer of width d (= embed), feed-forward width F (= hidden) */
static const struct { int score, heads, layers, d, F, mode; } variants[N_VARIANTS] = {
    {AC_ATTENTION_ADDITIVE, 0, 0, 512, 512, 0}, {AC_ATTENTION_DOT, 0, 0, 512, 512, 0},
    {AC_ATTENTION_SCALED_DOT, 0, 0, 512, 512, 0}, {AC_ATTENTION_GENERAL, 0, 0, 512, 512, 0},
    {AC_ATTENTION_COSINE, 0, 0, 512, 512, 0}, {AC_ATTENTION_SCALED_DOT, 8, 0, 512, 512, 0},
    {AC_ATTENTION_ADDITIVE, 8, 0, 512, 512, 0},
    {AC_ATTENTION_ADDITIVE, 0, 0, 512, 512, AC_ATTENTION_HARD}, /* the trainer's hard defaults */
    {AC_ATTENTION_SCALED_DOT, 8, 2, 512, 2048, 0}, {AC_ATTENTION_SCALED_DOT, 4, 2, 256, 512, 0},
};

static int cmp_double(const void *a, const void *b) {
    const double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

typedef struct {
    ac_decoder dec;
    ac_dec_image *img;
    ac_dec_pool *pool;
    float *scratch, *grad;
} variant;

/* Microseconds per inference step (ac_decoder_advance, the beam search's), over `secs`: K rows at word
 * POS, state [K, S] and each row's history [POS, P] from `in` (any values), outputs into `out`. */
static double time_step(variant *v, const float *in, float *out, double secs) {
    const ac_decoder_config *c = &v->dec.cfg;
    const size_t S = ac_decoder_state_size(c), P = ac_decoder_hist_size(c);
    const int prev[K] = {5, 6, 7}, rows = K;
    const float *hist[K];
    for (int k = 0; k < K; k++) hist[k] = in + K * S + (size_t)k * POS * P;
    const ac_dec_image *img = v->img;
    long n = 0;
    const double t0 = ac_now();
    do {
        ac_decoder_advance(&v->dec, 1, &img, &rows, POS, prev, in, hist, out, out + K * S, out + K * (S + P),
                           out + K * (S + P + c->vocab), NULL, v->scratch);
        n++;
    } while (ac_now() - t0 < secs);
    return (ac_now() - t0) / n * 1e6;
}

/* Target tokens per second of training steps, over `secs`. */
static double time_train(variant *v, const ac_dec_batch *bt, double secs) {
    ac_dec_stats st;
    ac_err err;
    long toks = 0;
    const double t0 = ac_now();
    do {
        if (ac_dec_pool_forward_backward(v->pool, &v->dec, bt, 1, (unsigned)toks, v->grad, &st, &err)) return 0;
        toks += st.ntok;
    } while (ac_now() - t0 < secs);
    return toks / (ac_now() - t0);
}

int main(int argc, char **argv) {
    const int rounds = argc > 1 ? atoi(argv[1]) : 3;
    const double secs = argc > 2 ? atof(argv[2]) : 2;
    const int L = 196, D = 1280, V = 8912;
    const size_t n_in = (size_t)K * (2 * 512 + POS * 2 * 2 * 512); /* the largest state and history */
    float *ann = malloc(sizeof(float) * L * D * B), *state = malloc(sizeof(float) * n_in),
          *out = malloc(sizeof(float) * K * (2 * 2 * 512 + V + L));
    for (size_t i = 0; i < (size_t)L * D * B; i++) ann[i] = (float)((i * 2654435761u >> 7) % 1000) / 1000.0f;
    for (size_t i = 0; i < n_in; i++) state[i] = (float)((i * 37) % 100) / 100.0f - 0.5f;
    const float *annp[B];
    int len[B], words[B * T];
    for (int i = 0; i < B; i++) annp[i] = ann + (size_t)(i / 5) * L * D, len[i] = 1 + 20 - (i * 14) / B;
    for (int i = 0; i < B * T; i++) words[i] = 4 + (i * 7919) % (V - 4);
    ac_dec_batch bt = {.B = B, .len = len, .words = words, .stride = T, .ann = annp};
    ac_set_threads(1);
    variant v[N_VARIANTS];
    double step_us[N_VARIANTS][64], train_tps[N_VARIANTS][64];
    for (int i = 0; i < N_VARIANTS; i++) {
        const int tf = variants[i].layers > 0;
        ac_decoder_config c = {.vocab = V, .embed = variants[i].d, .hidden = variants[i].F, .att = variants[i].d,
                               .dim = D, .n_ann = L, .grid_h = 14, .grid_w = 14, .dropout = tf ? 0.1f : 0.5f,
                               .lambda = tf ? 0.0f : 1.0f, .attention = variants[i].score, .heads = variants[i].heads,
                               .decoder = tf ? AC_DECODER_TRANSFORMER : AC_DECODER_LSTM, .layers = variants[i].layers,
                               .attention_mode = variants[i].mode};
        if (variants[i].mode == AC_ATTENTION_HARD) c.reinforce = 1, c.entropy = 0.01f, c.expected = 0.5f;
        ac_err err;
        if (ac_decoder_init(&v[i].dec, &c, 1, &err)) return fprintf(stderr, "%s\n", err.msg), 1;
        v[i].img = ac_decoder_prepare(&v[i].dec, ann);
        v[i].pool = ac_dec_pool_new(&c, 2, 2, B, T);
        v[i].scratch = malloc(sizeof(float) * ac_decoder_advance_scratch(&c, K, POS));
        v[i].grad = malloc(sizeof(float) * v[i].dec.n_params);
        if (!v[i].img || !v[i].pool || !v[i].scratch || !v[i].grad) return fprintf(stderr, "out of memory\n"), 1;
    }
    for (int r = 0; r < rounds && r < 64; r++)
        for (int i = 0; i < N_VARIANTS; i++) {
            step_us[i][r] = time_step(&v[i], state, out, secs / 2);
            train_tps[i][r] = time_train(&v[i], &bt, secs);
        }
    double base_step = 0, base_train = 0;
    printf("%-24s %28s %36s\n", "attention", "inference step, us (K = 3)", "training, target tokens/s");
    for (int i = 0; i < N_VARIANTS; i++) {
        qsort(step_us[i], (size_t)rounds, sizeof(double), cmp_double);
        qsort(train_tps[i], (size_t)rounds, sizeof(double), cmp_double);
        const double ms = step_us[i][rounds / 2], mt = train_tps[i][rounds / 2];
        if (i == 0) base_step = ms, base_train = mt;
        char name[40];
        if (variants[i].layers)
            snprintf(name, sizeof name, "transformer %d/%d x%d", variants[i].d, variants[i].F, variants[i].heads);
        else
            snprintf(name, sizeof name, "%s x%d%s", ac_decoder_attention_name(variants[i].score),
                     variants[i].heads > 1 ? variants[i].heads : 1, variants[i].mode ? " hard" : "");
        printf("%-24s %7.0f (%5.0f-%5.0f) %5.2fx %12.0f (%5.0f-%5.0f) %5.2fx\n", name, ms, step_us[i][0],
               step_us[i][rounds - 1], ms / base_step, mt, train_tps[i][0], train_tps[i][rounds - 1], mt / base_train);
    }
    return 0;
}
