/* hard_attention_internal.h: Xu et al.'s stochastic "hard" attention (decoder.h, attention modes),
 * forward and backward over plain float arrays, one step of one caption at a time: alpha [heads, L] is
 * the step's attention (ac_attention_softmax_forward's output), s [heads] the location each head takes.
 * The context's own backward is nothing: z = a_s does not depend on alpha, so the score function's
 * gradient reaches alpha only through the REINFORCE and entropy terms below. Private to src/decoder/. */
#ifndef ATTNCAP_HARD_ATTENTION_INTERNAL_H
#define ATTNCAP_HARD_ATTENTION_INTERNAL_H
#include <stdint.h>

/* s [heads] ~ Multinoulli(alpha_j), head by head, by inverse CDF of uniforms that are a hash of
 * (seed, idx heads + j): the same (seed, idx) draws the same locations. */
void ac_hard_attention_sample(const float *alpha, int heads, int L, uint64_t seed, uint64_t idx, int *s);
/* s [heads] = each head's most likely location (the first of ties). */
void ac_hard_attention_argmax(const float *alpha, int heads, int L, int *s);
/* alpha [heads, L] := one-hot at s [heads], in place: the attention an inference step reports and
 * weighs the annotations with (sum_i onehot_i a_i = a_s exactly). */
void ac_hard_attention_onehot(float *alpha, int heads, int L, const int *s);
/* ctx [D] = head j's channels j D/heads .. of the annotation a_{s_j}; ann [L, D]. */
void ac_hard_attention_context_forward(const float *ann, int L, int D, int heads, const int *s, float *ctx);
/* log p(s | a) = sum_j log alpha_{j, s_j}. */
double ac_hard_attention_logp(const float *alpha, int heads, int L, const int *s);
/* H = sum_j -sum_i alpha_ji log alpha_ji (0 log 0 = 0). */
double ac_hard_attention_entropy(const float *alpha, int heads, int L);
/* ADDS to de [heads, L] (d loss / d scores) the gradient of kr log p(s | a) - ke H:
 *   kr (onehot(s_j)_i - alpha_ji) + ke alpha_ji (log alpha_ji + H_j). */
void ac_hard_attention_backward(const float *alpha, int heads, int L, const int *s, float kr, float ke, float *de);
#endif
