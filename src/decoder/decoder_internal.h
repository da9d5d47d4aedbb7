/* decoder_internal.h: small kernels shared by the decoders' inference and training paths.
 * Private to src/decoder/ and src/train/. */
#ifndef ATTNCAP_DECODER_INTERNAL_H
#define ATTNCAP_DECODER_INTERNAL_H
#include <math.h>
#include <stdint.h>
#include "expsum_internal.h"

/* tanh as a rational 13/6 polynomial (Eigen's generic_fast_tanh_float): accurate to a few ulp,
 * and unlike tanhf it vectorises, which matters because attention evaluates tanh on
 * B x L x A elements per time step (GCC does it with AVX-512's masks; with AVX2 it keeps the clamp a
 * branch, so attention.c has an 8-lane copy, tanh8, on these constants). */
#define AC_TANH_LIM 7.90531110763549805f /* the clamp */
#define AC_TANH_A13 -2.76076847742355e-16f  /* numerator, odd powers 13 .. 1 */
#define AC_TANH_A11 2.00018790482477e-13f
#define AC_TANH_A9 -8.60467152213735e-11f
#define AC_TANH_A7 5.12229709037114e-08f
#define AC_TANH_A5 1.48572235717979e-05f
#define AC_TANH_A3 6.37261928875436e-04f
#define AC_TANH_A1 4.89352455891786e-03f
#define AC_TANH_B6 1.19825839466702e-06f   /* denominator, even powers 6 .. 0 */
#define AC_TANH_B4 1.18534705686654e-04f
#define AC_TANH_B2 2.26843463243900e-03f
#define AC_TANH_B0 4.89352518554385e-03f
static inline float ac_tanhf(float x) {
    const float lim = AC_TANH_LIM;
    x = x > lim ? lim : (x < -lim ? -lim : x);
    const float x2 = x * x;
    float p = AC_TANH_A13;
    p = p * x2 + AC_TANH_A11;
    p = p * x2 + AC_TANH_A9;
    p = p * x2 + AC_TANH_A7;
    p = p * x2 + AC_TANH_A5;
    p = p * x2 + AC_TANH_A3;
    p = p * x2 + AC_TANH_A1;
    p = p * x;
    float q = AC_TANH_B6;
    q = q * x2 + AC_TANH_B4;
    q = q * x2 + AC_TANH_B2;
    q = q * x2 + AC_TANH_B0;
    return p / q;
}
static inline float ac_sigmoidf(float x) { return 0.5f + 0.5f * ac_tanhf(0.5f * x); }

/* Dropout masks come from a counter-based hash of (seed, index), so a mask never depends on the
 * order work is done in, and resuming a run needs only the step counter. The same function is
 * re-implemented in tools/torch_decoder.py for the parity fixture. Keep iff u >= p, with
 * u = top 24 bits / 2^24. */
static inline uint64_t ac_mix64(uint64_t z) {
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}
static inline int ac_dropout_keep(uint64_t seed, uint64_t idx, float p) {
    uint64_t h = ac_mix64(seed + (idx + 1) * 0x9E3779B97F4A7C15ull);
    return (float)(h >> 40) * (1.0f / 16777216.0f) >= p;
}

/* Numerically stable in-place softmax (or log-softmax) of one row: the inference steps'. */
/* The maximum, the exponentials and their sum are expsum_internal.h's: vectorised, with the bits of
 * the loops "m = x[i] > m ? x[i] : m" and "s += expf(x[i] - m)" (double s). */
static inline void ac_softmax_row(float *x, int n, int log_out) {
    const float m = ac_max_row(x, (size_t)n);
    if (log_out) {
        const float ls = m + (float)log(ac_exp_sum(x, (size_t)n, m, NULL));
        for (int i = 0; i < n; i++) x[i] -= ls;
    } else {
        const float inv = (float)(1.0 / ac_exp_sum(x, (size_t)n, m, x));
        for (int i = 0; i < n; i++) x[i] *= inv;
    }
}

/* The training objective's cross-entropy: the sum over the N rows of logits [N, V] of
 * -log softmax(row)[tgt]. */
static inline double ac_xent_sum(const float *logits, int N, int V, const int *tgt) {
    double ce = 0;
    for (int r = 0; r < N; r++) {
        const float *z = logits + (size_t)r * V;
        const float mx = ac_max_row(z, (size_t)V);
        ce += mx + log(ac_exp_sum(z, (size_t)V, mx, NULL)) - z[tgt[r]];
    }
    return ce;
}
/* Its gradient times k, in place of the logits: k (softmax(row) - onehot(tgt)). */
static inline void ac_xent_grad(float *logits, int N, int V, const int *tgt, float k) {
    for (int r = 0; r < N; r++) {
        float *z = logits + (size_t)r * V;
        ac_exp_sum(z, (size_t)V, ac_max_row(z, (size_t)V), z);
        float s = 0; /* in float, in order, as the loop summed them */
        for (int v = 0; v < V; v++) s += z[v];
        const float ks = k / s;
        for (int v = 0; v < V; v++) z[v] *= ks;
        z[tgt[r]] -= k;
    }
}

/* A uniform draw in [0, 1) from a splitmix64 stream: the decoders' initialisation. */
static inline double ac_uniform01(uint64_t *s) {
    *s += 0x9E3779B97F4A7C15ull;
    return (double)(ac_mix64(*s) >> 11) * (1.0 / 9007199254740992.0);
}

#include "attncap/decoder.h"
#include "attncap/regions.h"
/* config.object_init's o [AC_COPY_CATEGORIES] from n regions' categories cat (255: none) and scores
 * (NULL: each 1): o_c the best score of category c, 0 for a category no region has (decoder.h). */
void ac_decoder_objects_vector(const unsigned char *cat, const float *score, int n, float *o);
/* ADDS o U_h to h and o U_c to c ([H] each, pre-activation): the training forward and the inference
 * step both call it, so both start from the same sums. */
void ac_decoder_objects_init(const ac_decoder *dec, const unsigned char *cat, const float *score, int n, float *h,
                             float *c);

/* A photo prepared for the inference step (decoder.h's ac_dec_image), of either decoder kind. */
struct ac_dec_image {
    int L, D, A;
    int n, gh, gw; /* the photo's own rows: gh x gw cells then `regions` regions = n of the L (the rest is
                    * padding, never read) */
    int regions;
    float *ann;  /* LSTM: [n, D] */
    float *proj; /* LSTM: [n, A]  the keys W_a a_i (+ b_a); A = ac_attention_key_dim */
    float *mean; /* LSTM: [D] over the n cells */
    float *kv;   /* transformer: [layers, L, 2d] each layer's cross-attention keys and values */
    int has_categories;                 /* copy: cat below set (ac_dec_image_set_categories) */
    unsigned char cat[AC_REGIONS_MAX];  /* copy: each region's category */
    float score[AC_REGIONS_MAX];        /* copy: each region's detector score (config.object_init) */
    /* copy: NULL (inference), or [rows][1 + regions] for a step of this photo's rows: each row's gate g
     * then its regions' weights abar (copy_internal.h) are written there instead of being mixed into
     * logp, which stays the vocabulary's own (teacher forcing's account, ac_decoder_copy_shares, steps a
     * shallow copy of the photo with this set) */
    float *copy_trace;
};
/* How the inference step's attention weights come (ac_decoder_fix_attention). */
enum { FIX_MODEL = 0, FIX_UNIFORM = 1, FIX_PEAK = 2 };
/* lstm_step.c: the LSTM's inference step for the rows of n_photos photos (rows[p] each; h, c and the
 * new h_out, c_out with row strides), writing logp [K, V], alpha [K, L], beta [K] (may be NULL) and, if
 * not NULL, each row's copy account; buf: ac_decoder_step_scratch floats. */
void ac_lstm_step(const ac_decoder *dec, int n_photos, const ac_dec_image *const *img, const int *rows,
                  const int *prev, const float *h, int ldh, const float *c, int ldc, float *h_out, float *c_out,
                  int ldo, float *logp, float *alpha, float *beta, float *account, float *buf);
/* smm.c: C[M, N] += A[M, K] B[K, N] (row-major) for small M, with B packed once by ac_smm_pack
 * (trans: B given as [N, K], i.e. pack B^T) into ac_smm_packed_size(K, N) floats. */
size_t ac_smm_packed_size(int K, int N);
void ac_smm_pack(int K, int N, const float *B, int ldb, int trans, float *Bp);
void ac_smm_nn_packed(int M, int N, int K, const float *A, int lda, const float *Bp, float *C, int ldc);
/* The same product with B unpacked (row-major, row stride ldb): the inference step's, where each
 * weight is used once per call. Single-threaded and with a fixed summation order (k ascending per
 * output), so results never depend on the thread count or on OpenBLAS's kernel choice. */
void ac_smm_nn(int M, int N, int K, const float *A, int lda, const float *B, int ldb, float *C, int ldc);
/* The same product with B as float16 packed by ac_smm_pack_h into panels of 64 columns
 * ([ceil(N/64)][K][64], zero-padded: ac_smm_packed_size(K, N) values), widened exactly on load: the
 * same bits as ac_smm_nn on the widened B, faster for any M (each weight loaded once per 6 rows, from
 * a sequential stream). Only where ac_smm_has_f16() (AVX-512 BW/VL builds, or AVX2 with FMA and F16C). */
int ac_smm_has_f16(void);
void ac_smm_pack_h(int K, int N, const uint16_t *B, int ldb, uint16_t *Bp);
void ac_smm_nn_hp(int M, int N, int K, const float *A, int lda, const uint16_t *Bp, float *C, int ldc);
/* Allocates a zeroed parameter buffer for cfg (checked) without initialising: the model loader's. */
int ac_decoder_alloc(ac_decoder *dec, const ac_decoder_config *cfg, ac_err *err);
/* model.c: the config <-> JSON (the model file's and the training checkpoint's "config"). */
char *ac_decoder_config_to_json(const ac_decoder_config *c);
int ac_decoder_config_from_json(const char *json, ac_decoder_config *c, ac_err *err);
/* decoder_train.c, for the data-parallel shards (decoder_pool.c): the four recurrent weight products
 * packed for smm.c (ac_dec_pack_size floats; pk[i] point into buf), and a work area told to use such a
 * packing, made by the caller once per batch, instead of its own. */
size_t ac_dec_pack_size(const ac_decoder_config *c);
void ac_dec_pack_weights(const ac_decoder *dec, float *buf, const float *pk[4]);
void ac_dec_work_use_packed(ac_dec_work *w, const float *const pk[4]);
#endif
