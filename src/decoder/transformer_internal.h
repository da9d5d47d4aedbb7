/* transformer_internal.h: the transformer decoder (decoder.h), private to src/decoder/: decoder.c
 * dispatches to it by config.decoder, decoder_train.c hands it its batches. transformer.c holds the
 * parameters, the kernels both paths share and the inference step; transformer_train.c the batched
 * forward and backward. */
#ifndef ATTNCAP_TRANSFORMER_INTERNAL_H
#define ATTNCAP_TRANSFORMER_INTERNAL_H
#include <stddef.h>
#include <stdint.h>

#include "attncap/decoder.h"

/* The sizes: d = embed (model width), F = hidden (feed-forward width), nh heads of dh = d / nh columns,
 * Y layers, V words, D and L of the annotations. */
typedef struct ac_tf_dims {
    int d, F, nh, dh, Y, V, D, L;
} ac_tf_dims;
ac_tf_dims ac_tf_dims_of(const ac_decoder_config *c);

/* The parameters (or a gradient laid out like them), as pointers into one buffer. A stacked tensor
 * holds every layer: layer l's matrix starts at l * rows_per_layer * cols, its vector at l * cols
 * (AC_TF_LAYER below). */
typedef struct ac_tf_view {
    float *emb;                                  /* [V, d] */
    float *mem_w, *mem_b, *mem_g, *mem_bn;       /* [D, d], [d], [d], [d] */
    float *ln1_g, *ln1_b;                        /* [Y, d] */
    float *wqkv, *bqkv, *wo, *bo;                /* [Y d, 3d], [Y, 3d], [Y d, d], [Y, d] */
    float *ln2_g, *ln2_b;                        /* [Y, d] */
    float *cwq, *cbq, *cwkv, *cbkv, *cwo, *cbo;  /* [Y d, d], [Y, d], [Y d, 2d], [Y, 2d], [Y d, d], [Y, d] */
    float *ln3_g, *ln3_b;                        /* [Y, d] */
    float *w1, *b1, *w2, *b2;                    /* [Y d, F], [Y, F], [Y F, d], [Y, d] */
    float *lnf_g, *lnf_b;                        /* [d] */
    float *out_w, *out_b;                        /* [d, V], [V] (the tensors out_lo, out_bo) */
} ac_tf_view;
ac_tf_view ac_tf_view_of(const ac_decoder_config *c, float *base);
/* Layer l's slice of a stacked tensor p whose per-layer part has n elements. */
#define AC_TF_LAYER(p, l, n) ((p) + (size_t)(l) * (size_t)(n))

/* The tensors in buffer order (decoder.h's ac_decoder_tensors for a transformer). */
int ac_tf_tensors(const ac_decoder_config *c, ac_dec_tensor *t, size_t *n_params);
/* What a transformer's config must also satisfy (layers, d even, att == d; decoder.c checks the rest). */
int ac_tf_check_config(const ac_decoder_config *c, ac_err *err);
/* Initial values for dec (allocated): Glorot-uniform matrices per layer, layer norms at gain 1, zero
 * biases, embeddings of standard deviation 1 / sqrt(d) (so that sqrt(d) E y is about unit size). */
void ac_tf_init(ac_decoder *dec, uint64_t seed);

/* pe [d]: the sinusoidal encoding of position t. */
void ac_tf_position(int d, int t, float *pe);
/* Layer norm of n rows of x [n, d] (eps 1e-5) into y (may be x); xhat [n, d] and rstd [n] (kept for
 * the backward) may be NULL. */
void ac_tf_layer_norm(int n, int d, const float *x, const float *g, const float *b, float *y, float *xhat,
                      float *rstd);
#define AC_TF_LN_EPS 1e-5f

/* Inference (decoder.h's ac_decoder_prepare / ac_decoder_advance for a transformer). */
/* ac_tf_prepare: the photo's own cells are the first n of ann's L rows (the rest, padding, is not
 * read; its keys get no weight in the step's cross-attention). */
ac_dec_image *ac_tf_prepare(const ac_decoder *dec, const float *ann, int n);
size_t ac_tf_step_scratch(const ac_decoder_config *c, int K, int t_max);
void ac_tf_step(const ac_decoder *dec, int n_photos, const ac_dec_image *const *img, const int *rows, int t,
                const int *prev, const float *const *hist, float *hist_out, float *logp, float *alpha, float *beta,
                float *scratch);

/* Training (transformer_train.c): the objective of decoder.h over a checked batch (decoder_train.c's
 * ac_decoder_forward_backward checks it and calls this). */
typedef struct ac_tf_work ac_tf_work;
ac_tf_work *ac_tf_work_new(const ac_decoder_config *c);
void ac_tf_work_free(ac_tf_work *w);
const float *ac_tf_work_logits(const ac_tf_work *w);
int ac_tf_forward_backward(const ac_decoder *dec, ac_tf_work *w, const ac_dec_batch *b, int train, uint64_t seed,
                           float *grad, ac_dec_stats *st, ac_err *err);
#endif
