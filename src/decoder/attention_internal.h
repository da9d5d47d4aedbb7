/* attention_internal.h: the attention score functions (decoder.h lists them), forward and backward
 * over plain float arrays, and the attention softmax. Private to src/decoder*.c.
 *
 * One query q [Ak] against the L keys [L, Ak] of one photo gives the scores e [heads, L]; Ak is
 * ac_attention_key_dim (H for general, else A), and head j scores with columns j Ak/heads .. of both.
 * The decoders make the keys (W_a a_i, + b_a where the score has one) once per photo and the query
 * (W_h h, or h itself for general) once per step; what lies between keys, query and scores is here. */
#ifndef ATTNCAP_ATTENTION_INTERNAL_H
#define ATTNCAP_ATTENTION_INTERNAL_H
#include <stddef.h>

#include "attncap/decoder.h"

/* Which optional attention tensors a score function has (att_wa: all of them). */
enum { AC_ATTENTION_HAS_BA = 1, AC_ATTENTION_HAS_WH = 2, AC_ATTENTION_HAS_WE = 4, AC_ATTENTION_HAS_LOGTAU = 8 };
unsigned ac_attention_tensors(int score);
/* The width of keys and queries: H for general (q = h), A otherwise. */
int ac_attention_key_dim(const ac_decoder_config *c);
/* The attention heads: config.heads, 0 counting as 1. */
int ac_attention_heads(const ac_decoder_config *c);
/* The initial value of cosine's s = log tau: tau = 10, so that the scores of the first steps
 * (cosines near 0 for random projections) give a near-uniform attention, as the additive score's
 * small w_e does, while leaving the softmax room to sharpen. */
#define AC_ATTENTION_LOGTAU_INIT 2.302585092994046

/* A decoder's score function with its parameters, for the kernels below. */
typedef struct ac_attention_fn {
    int score; /* ac_decoder_attention */
    int A;     /* key and query width (ac_attention_key_dim), all heads */
    int heads;
    const float *we;
    float tau; /* cosine: exp(att_logtau) */
} ac_attention_fn;
ac_attention_fn ac_attention_fn_of(const ac_decoder *dec);

/* Floats per query that the forward keeps for the backward: the additive score's tanh [heads, L, A/heads];
 * 0 for the others (their backward recomputes the dot products, which costs less than storing them). */
size_t ac_attention_cache_size(const ac_decoder_config *c);

/* Masks: a photo whose grid is smaller than the model's (an encoder that keeps the aspect ratio,
 * encoder.h) has its own cells as the first n of the L annotation vectors and padding after them.
 * The _masked kernels below take n (1..L): they read and write only the first n keys and scores of
 * each head (head j's scores still start at j L), and the masked softmax gives the other L - n
 * entries of each row a weight of exactly 0 (as softmax with e = -inf there, and a zero gradient).
 * The kernels without _masked are the same with n = L. */

/* e [heads, L] = the scores of q [A] against keys [L, A]. cache: [ac_attention_cache_size] or NULL
 * (inference). */
void ac_attention_scores_forward(const ac_attention_fn *f, int L, const float *q, const float *keys, float *e,
                                 float *cache);
void ac_attention_scores_forward_masked(const ac_attention_fn *f, int L, int n, const float *q, const float *keys,
                                        float *e, float *cache);
/* The backward of the scores: given de [heads, L], ADDS d loss to dq [A], dkeys [L, A] and the score's
 * own parameters: dwe [A] (additive) and *dlogtau (cosine); those of another score may be NULL. */
void ac_attention_scores_backward(const ac_attention_fn *f, int L, const float *q, const float *keys,
                                  const float *cache, const float *de, float *dq, float *dkeys, float *dwe,
                                  float *dlogtau);
void ac_attention_scores_backward_masked(const ac_attention_fn *f, int L, int n, const float *q, const float *keys,
                                         const float *cache, const float *de, float *dq, float *dkeys, float *dwe,
                                         float *dlogtau);

/* alpha = softmax(e) in place, over L, for each of the rows of e [rows, L]. */
void ac_attention_softmax_forward(float *e, int rows, int L);
/* The masked softmax: over the first n of each row's L entries; the other L - n become exactly 0. */
void ac_attention_softmax_forward_masked(float *e, int rows, int L, int n);
/* de [rows, L] = d loss / d e from alpha [rows, L] and dalpha [rows, L] = d loss / d alpha, row by row:
 * alpha (dalpha - alpha . dalpha). */
void ac_attention_softmax_backward(const float *alpha, const float *dalpha, int rows, int L, float *de);
/* The masked softmax's: over the first n of each row; de of the masked entries is exactly 0. */
void ac_attention_softmax_backward_masked(const float *alpha, const float *dalpha, int rows, int L, int n, float *de);
#endif
