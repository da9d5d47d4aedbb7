/* bench_attention.c: what each attention score function (and heads) costs, side by side in one run:
 * the inference step (K = 3 hypotheses of one photo, as a beam of 3 decodes) and the training step
 * (forward + backward, batch 32 of 5 captions per photo), at the shipped model's size (E = H = A = 512,
 * V = 8912, 14x14x1280 annotations), random weights. The variants run in interleaved rounds so that
 * the machine's load falls on all of them alike; prints each one's median, best and worst over the
 * rounds, and its median as a ratio to additive's.
 * Usage: bench_attention [rounds] [seconds per variant and round] */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "attncap/decoder.h"

enum { N_VARIANTS = 7, K = 3, B = 32, T = 40 };
static const struct { int score, heads; } variants[N_VARIANTS] = {
    {AC_ATTENTION_ADDITIVE, 0}, {AC_ATTENTION_DOT, 0},         {AC_ATTENTION_SCALED_DOT, 0}, {AC_ATTENTION_GENERAL, 0},
    {AC_ATTENTION_COSINE, 0},   {AC_ATTENTION_SCALED_DOT, 8}, {AC_ATTENTION_ADDITIVE, 8},
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

/* Microseconds per inference step, over `secs`. */
static double time_step(variant *v, const float *state, float *out, double secs) {
    const ac_decoder_config *c = &v->dec.cfg;
    const int H = c->hidden;
    int prev[K] = {5, 6, 7};
    long n = 0;
    const double t0 = ac_now();
    do {
        ac_decoder_step(&v->dec, v->img, K, prev, state, state + K * H, out, out + K * H, out + 2 * K * H,
                        out + 2 * K * H + (size_t)K * c->vocab, NULL, v->scratch);
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
    float *ann = malloc(sizeof(float) * L * D * B), *state = malloc(sizeof(float) * 2 * K * 512),
          *out = malloc(sizeof(float) * K * (2 * 512 + V + L));
    for (size_t i = 0; i < (size_t)L * D * B; i++) ann[i] = (float)((i * 2654435761u >> 7) % 1000) / 1000.0f;
    for (int i = 0; i < 2 * K * 512; i++) state[i] = (float)((i * 37) % 100) / 100.0f - 0.5f;
    const float *annp[B];
    int len[B], words[B * T];
    for (int i = 0; i < B; i++) annp[i] = ann + (size_t)(i / 5) * L * D, len[i] = 1 + 20 - (i * 14) / B;
    for (int i = 0; i < B * T; i++) words[i] = 4 + (i * 7919) % (V - 4);
    ac_dec_batch bt = {B, len, words, T, annp, NULL, NULL};
    ac_set_threads(1);
    variant v[N_VARIANTS];
    double step_us[N_VARIANTS][64], train_tps[N_VARIANTS][64];
    for (int i = 0; i < N_VARIANTS; i++) {
        ac_decoder_config c = {.vocab = V, .embed = 512, .hidden = 512, .att = 512, .dim = D, .n_ann = L, .grid_h = 14,
                               .grid_w = 14, .dropout = 0.5f, .lambda = 1.0f, .attention = variants[i].score,
                               .heads = variants[i].heads};
        ac_err err;
        if (ac_decoder_init(&v[i].dec, &c, 1, &err)) return fprintf(stderr, "%s\n", err.msg), 1;
        v[i].img = ac_decoder_prepare(&v[i].dec, ann);
        v[i].pool = ac_dec_pool_new(&c, 2, 2, B, T);
        v[i].scratch = malloc(sizeof(float) * ac_decoder_step_scratch(&c, K));
        v[i].grad = malloc(sizeof(float) * v[i].dec.n_params);
        if (!v[i].img || !v[i].pool || !v[i].scratch || !v[i].grad) return fprintf(stderr, "out of memory\n"), 1;
    }
    for (int r = 0; r < rounds && r < 64; r++)
        for (int i = 0; i < N_VARIANTS; i++) {
            step_us[i][r] = time_step(&v[i], state, out, secs / 2);
            train_tps[i][r] = time_train(&v[i], &bt, secs);
        }
    double base_step = 0, base_train = 0;
    printf("%-16s %28s %36s\n", "attention", "inference step, us (K = 3)", "training, target tokens/s");
    for (int i = 0; i < N_VARIANTS; i++) {
        qsort(step_us[i], (size_t)rounds, sizeof(double), cmp_double);
        qsort(train_tps[i], (size_t)rounds, sizeof(double), cmp_double);
        const double ms = step_us[i][rounds / 2], mt = train_tps[i][rounds / 2];
        if (i == 0) base_step = ms, base_train = mt;
        char name[32];
        snprintf(name, sizeof name, "%s x%d", ac_decoder_attention_name(variants[i].score),
                 variants[i].heads > 1 ? variants[i].heads : 1);
        printf("%-16s %7.0f (%5.0f-%5.0f) %5.2fx %12.0f (%5.0f-%5.0f) %5.2fx\n", name, ms, step_us[i][0],
               step_us[i][rounds - 1], ms / base_step, mt, train_tps[i][0], train_tps[i][rounds - 1], mt / base_train);
    }
    return 0;
}
