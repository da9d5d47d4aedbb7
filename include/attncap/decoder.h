/* attncap/decoder.h: not part of the stable API; may change in any release (the stable core: attncap.h). */
/* attncap/decoder.h: the caption decoders: the soft-attention LSTM of Xu et al. 2015 (the default)
 * and a transformer decoder (Vaswani et al. 2017), chosen by config.decoder.
 *
 * The LSTM:
 *   e_ti  = score(h_{t-1}, a_i)                          one of the score functions below
 *   alpha = softmax(e_t)                                  over the L annotation vectors (the photo's
 *                                                         own cells: masks, below)
 *   beta  = sigmoid(w_b . h_{t-1} + b_b)                  a scalar gate, as in the paper
 *   z_t   = beta * sum_i alpha_ti a_i
 *   i,f,o,g = LSTM([E y_{t-1}; z_t], h_{t-1})
 *   logits = L_o (E y_{t-1} + L_h h_t + L_z z_t) + b_o     (deep output; dropout before L_o in training)
 *   h_0 = tanh(W_init_h mean(a) + b), c_0 = tanh(W_init_c mean(a) + b)
 *
 * Score functions (config.attention, chosen at training time and recorded in the model file). Each
 * scores a query q from h against a key k_i from a_i; the keys are computed once per photo:
 *   additive    e = w_e . tanh(k_i + q)        k_i = W_a a_i + b_a, q = W_h h   (Bahdanau; Xu et al.)
 *   dot         e = q . k_i                    k_i = W_a a_i,       q = W_h h   (the projections
 *                                              make the dimensions match: both are A wide)
 *   scaled-dot  e = q . k_i / sqrt(A)          as dot                           (Vaswani et al.)
 *   general     e = h^T W_a a_i                k_i = W_a a_i (H wide), q = h    (Luong's bilinear score)
 *   cosine      e = tau cos(q, k_i)            k_i = W_a a_i + b_a, q = W_h h, tau = exp(s), s learned,
 *               cos(q, k) = q.k / (|q| |k|) with |x| = sqrt(x.x + 1e-8); s starts at log 10
 * Parameters: additive W_a [D, A], b_a [A], W_h [H, A], w_e [A]; dot and scaled-dot W_a [D, A],
 * W_h [H, A]; general W_a [D, H] (A unused); cosine W_a, b_a, W_h and s ("att_logtau", [1]).
 * dot, scaled-dot and general have no b_a: it would add q . b_a, the same for every i, which the
 * softmax ignores (its gradient is exactly zero). A file without the field is additive.
 *
 * Heads (config.heads = n > 1, multi-head attention as Vaswani et al. split it, with the values the
 * annotation vectors themselves): head j scores with its own 1/n of the key and query columns
 * (columns j K/n .. (j+1) K/n - 1 of k_i, q and w_e, K = A or H for general; scaled-dot divides by
 * sqrt(K/n); cosine shares tau) and has its own softmax alpha_j; it reads its own 1/n of the channels,
 * z_t = beta * [sum_i alpha_1i a_i^(1); ...; sum_i alpha_ni a_i^(n)] with a_i^(j) channels
 * j D/n .. (j+1) D/n - 1. The parameters are the single head's, so a model's size does not change;
 * the doubly stochastic penalty sums over the heads; the inference step reports their mean
 * attention (what the overlays show), or one head's (ac_decoder_show_head). A file without the field
 * has one head.
 *
 * Attention mode (config.attention_mode, Xu et al. 2015 §4.1 "hard" attention; a file without the
 * field is soft, all of the above). Hard: the same scores and alpha, but the context is one location
 * per head, z_t = beta * a_{s_t} (head j: its channels of a_{s_tj}), s_t ~ Multinoulli(alpha_t) in
 * training. Training follows the variational lower bound L_s = sum_s p(s|a) log p(y|s,a) with the
 * REINFORCE estimator (ac_decoder_forward_backward says exactly what it differentiates); at inference
 * the step takes each head's most likely location, s_t = argmax alpha_t, and reports that one-hot
 * alpha (the overlays light one cell per word), or the expected context, which is the soft step,
 * when asked (ac_decoder_hard_context). Same tensors as soft attention.
 * Hard attention is the LSTM's: a transformer with attention_mode hard is refused (ac_decoder_create,
 * model files, train).
 *
 * The transformer (config.decoder = AC_DECODER_TRANSFORMER; d = embed, the model width, also the
 * attention width att; F = hidden, the feed-forward width; heads; layers), pre-LN:
 *   x_0 = sqrt(d) E y_{t-1} + PE(t)                     sinusoidal positions, PE(t, 2i) = sin(t / 10000^(2i/d)),
 *                                                      PE(t, 2i + 1) = cos(the same)
 *   m   = LN(a W_m + b_m)                               the annotation vectors at the model width [L, d]
 *   per layer:  x += SelfAttn(LN_1(x))                  masked: position t sees positions 0..t
 *               x += CrossAttn(LN_2(x), m)             queries from the words, keys and values from m
 *               x += W_2 relu(W_1 LN_3(x) + b_1) + b_2
 *   logits = LN_f(x) W_o + b_o
 * multi-head scaled dot-product attention (heads of d / heads columns, softmax(q k^T / sqrt(d / heads)),
 * then an output projection). Pre-LN (the layer norm inside each residual branch, a final one before
 * the output) rather than the paper's post-LN: it trains without a learning-rate warm-up (Xiong et al.
 * 2020), which the trainer (train.h) does not have. Dropout (training) on x_0 and on each branch's
 * output before it is added. The attention the step reports is the last layer's cross-attention
 * (the heads' mean, or one head's: ac_decoder_show_head): the weights that decide what reaches the
 * output. No gate: beta is 1. The doubly stochastic penalty is the LSTM's (lambda is 0). A photo
 * "without a photo" (the trainer's text batches) is L copies of one learned vector, as for the LSTM.
 * A file without the field "decoder" is an LSTM.
 *
 * Grids of any shape (masked softmax: the LSTM's, soft and hard attention, and the transformer's). A
 * photo may bring fewer cells than the model's grid_h x grid_w (an encoder that keeps the aspect
 * ratio, encoder.h): its own gh x gw cells are then the first n = gh gw of the L annotation vectors (row-major, gh gw <= L), and the rest is padding that is never
 * read. The attention is a softmax over the n cells only: a padded cell's alpha is exactly 0 (alpha rows
 * keep L entries), h_0 and c_0 start from the mean of the n cells, z sums over them, and the doubly
 * stochastic penalty sums (1 - sum_t alpha_ti)^2 over them, target 1 as for a full grid (a padded cell
 * would add a constant 1; the target does not change the gradient at all, since the softmax's
 * backward ignores a shift of every d alpha_i by the same amount, so 1 and tau/n train alike). A photo
 * is thus captioned exactly as a model whose grid is gh x gw would caption it unpadded. A full grid
 * (n = L) is the same arithmetic as before masks, bit for bit. Hard attention samples and takes the argmax
 * over the n cells only. The transformer's cross-attention is masked alike: its keys and values are
 * those of the n cells, its softmax runs over them (a padded cell's weight is exactly 0, its annotation
 * never read), in training and at inference; its tensors do not depend on L, so a photo of gh x gw
 * cells scores as the same weights with a gh x gw grid score it unpadded.
 *
 * The decoder is a set of named float32 tensors (see decoder.c and transformer.c for the lists and
 * shapes) plus the config. It knows no files: the model file (decoder + vocabulary + the encoder's identity) is model.h's. */
#ifndef ATTNCAP_DECODER_H
#define ATTNCAP_DECODER_H
#include <stddef.h>
#include <stdint.h>

#include "attncap/common.h"
#include "attncap/vocab.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct ac_decoder_config {
    int vocab;     /* V */
    int embed;     /* E: word embedding size (also the deep-output size) */
    int hidden;    /* H: LSTM size */
    int att;       /* A: attention MLP size */
    int dim;       /* D: annotation vector size */
    int n_ann;     /* L: annotation vectors per photo (grid_h * grid_w) */
    int grid_h, grid_w;
    float dropout; /* training only */
    float lambda;  /* doubly stochastic attention penalty */
    int attention; /* score function, an ac_decoder_attention (0 = additive) */
    int heads;     /* attention heads (0 or 1: one); must divide D and the key width (transformer: d) */
    int decoder;   /* the decoder kind, an ac_decoder_kind (0 = lstm) */
    int layers;    /* transformer: its layers (0 for the LSTM) */
    int attention_mode; /* AC_ATTENTION_SOFT (0) or AC_ATTENTION_HARD (LSTM only); the three below are hard's, training only: */
    float reinforce;    /* lambda_r, the weight of the score-function (REINFORCE) term */
    float entropy;      /* lambda_e, the weight of the entropy bonus */
    float expected;     /* the chance that a caption trains on the expected context (soft) instead of a sample */
    /* Regions (regions.h): up to `regions` detected objects per photo as annotation vectors after the
     * grid's cells (n_ann = grid_h grid_w + regions; 0: none, the grid alone). A region's vector adds
     * score * region_scale * code(category) to its pooled cells; detections scored below
     * region_min_score are not regions. Fixed when the model is trained; recorded in the model file. */
    int regions;
    float region_scale, region_min_score;
    /* Copy (LSTM, soft attention, with regions; 0: none): a word can come from the attended region's
     * category as well as from the vocabulary softmax (LSTM-C, Yao et al. 2017; a pointer-generator's
     * gate, See et al. 2017). With g = sigmoid(w_c . [h_t; z_t] + b_c) and pi the attention on the
     * regions renormalised over them,
     *   p(w) = (1 - g) p_vocab(w) + g sum_{r: w names c_r} pi_r p_vocab(w) / p_vocab(S(c_r))
     * where S(c) are the vocabulary words naming category c (objects.h, ac_decoder_set_copy_words): the
     * region says which object, the vocabulary which of its words (giraffe or giraffes, man or woman).
     * Tensors copy_w [H + D], copy_b [1]. A photo without a region of a category with words decodes
     * as without copy. src/decoder/copy_internal.h has the derivation of the gradient.
     * copy = 2, the pointer: the regions get their own scores, apart from the context's attention,
     * and compete with a sentinel (Merity et al. 2017, "Pointer Sentinel Mixture Models"):
     *   e_r = w_p . tanh(k_r + q_t)       k_r the region's attention key (W_a a_r + b_a), q_t the
     *                                     step's attention query (W_h h_{t-1}, or h_{t-1} for general)
     *   e_s = w_s . h_t + b_s             the sentinel: "the next word is not a region's name"
     *   [pi_1 .. pi_n, 1 - g] = softmax([e_1 .. e_n, e_s])   over the regions whose category has words
     * and p(w) as above with g pi_r (pi renormalised over the regions) in place of g and the
     * attention's share. The gate is the regions' scores against the sentinel's, so it opens when some
     * region fits the step's query, whatever the region's category: what the copy learns about one
     * object carries to all. Tensors ptr_we [K] (w_p, K the key width), ptr_ws [H], ptr_bs [1]. */
    int copy;
    /* Absent (a copy model's, 0 or 1): what the vocabulary may say of an object the detector did not
     * see is set from data, not ruled. Each category c has a log-prior b_c, added to the vocabulary
     * logits of the words naming c (S(c) above) on a photo with no region of category c:
     *   logit_w += b_{c(w)} [no region of the photo has category c(w)]
     * trained with the model (attncap train --absent) or matched on held-out photos (tune.h
     * ac_absent_match, which the shipped model's come from), so a category captions over-say unseen (a
     * bench, a dining table) gets a low b_c, one people often name unseen (a person the detector
     * missed) stays near 0. The copy's share of a category (which
     * needs a region of it) is untouched. A photo the detector did not look at (no categories given)
     * gets no bias. Tensor absent_b [AC_COPY_CATEGORIES], zero at initialisation. */
    int absent;
    /* Object init (a copy model's, 0 or 1): the objects the detector found set the LSTM's initial
     * state, so the words before an object's name can already depend on it ("flying" before "a kite";
     * Yao et al. 2017, "Boosting Image Captioning with Attributes", LSTM-A's attributes at the start):
     *   o_c = the best score of the photo's regions of category c (0 when it has none)
     *   h_0 = tanh(W_init_h mean(a) + o U_h + b),  c_0 = tanh(W_init_c mean(a) + o U_c + b)
     * The attention reaches an object only at the steps whose query looks for it; o reaches every
     * step through the state. A photo the detector did not look at (no categories given) has o = 0.
     * Tensors obj_h, obj_c [AC_COPY_CATEGORIES, H], zero at initialisation (a warm start begins as
     * the model it starts from). */
    int object_init;
    /* ImageNet words (a copy model's, 0 .. AC_COPY_CATEGORIES_MAX - AC_COPY_CATEGORIES): words COCO's
     * categories lack (butterfly, fountain, castle) enter through the same copy, not through a rule
     * of their own. Category AC_COPY_CATEGORIES + j is the model's ImageNet word j (model.h
     * imagenet_words: the word and the ImageNet classes that mean it); a photo gets a region of it,
     * over the whole photo, scored by the encoder's own classifier (the classes' summed probability),
     * and a caption without a photo a pseudo-region when it says the word, as COCO's categories do.
     * No tensor: the pointer scores the region from its vector, and the copy maps it to its words. */
    int imagenet_words;
} ac_decoder_config;

/* COCO's categories (objects.h's AC_N_OBJECTS): the categories absent priors and object init cover. */
#define AC_COPY_CATEGORIES 80
/* Every category a copy model's regions can name: COCO's, then the model's ImageNet words; 255 marks
 * a region of no category. */
#define AC_COPY_CATEGORIES_MAX 255

/* The decoder kinds (config.decoder). */
typedef enum ac_decoder_kind { AC_DECODER_LSTM = 0, AC_DECODER_TRANSFORMER, AC_DECODER_KIND_COUNT } ac_decoder_kind;
/* "lstm", "transformer"; NULL for a value out of range. */
const char *ac_decoder_kind_name(int kind);
/* The kind of a name above; -1 if it is none of them. */
int ac_decoder_kind_parse(const char *name);

/* The attention modes (see above). */
typedef enum ac_decoder_attention_mode { AC_ATTENTION_SOFT = 0, AC_ATTENTION_HARD, AC_ATTENTION_MODE_COUNT } ac_decoder_attention_mode;
/* "soft", "hard"; NULL out of range. */
const char *ac_decoder_attention_mode_name(int mode);
/* The mode of a name above; -1 if it is none of them. */
int ac_decoder_attention_mode_parse(const char *name);

/* The attention score functions (see above). */
typedef enum ac_decoder_attention {
    AC_ATTENTION_ADDITIVE = 0,
    AC_ATTENTION_DOT,
    AC_ATTENTION_SCALED_DOT,
    AC_ATTENTION_GENERAL,
    AC_ATTENTION_COSINE,
    AC_ATTENTION_COUNT
} ac_decoder_attention;
/* "additive", "dot", "scaled-dot", "general", "cosine"; NULL for a value out of range. */
const char *ac_decoder_attention_name(int score);
/* The score of a name above; -1 if it is none of them. */
int ac_decoder_attention_parse(const char *name);

typedef struct ac_decoder {
    ac_decoder_config cfg;
    size_t n_params;
    float *params; /* all parameters, one buffer; the pointers below are views into it */
    float *emb;                                  /* [V, E] (transformer: [V, d]) */
    /* Attention: additive [D, A], [A], [H, A], [A]; the tensors a score function lacks are NULL
     * (general's att_wa is [D, H]; att_logtau [1] is cosine's only). */
    float *att_wa, *att_ba, *att_wh, *att_we, *att_logtau;
    float *beta_w, *beta_b;                      /* [H], [1] */
    float *init_h_w, *init_h_b, *init_c_w, *init_c_b; /* [D, H], [H], [D, H], [H] */
    float *lstm_w, *lstm_b;                      /* [E + D + H, 4H] (gate order i f g o), [4H] */
    float *out_lh, *out_lz, *out_lo, *out_bo;    /* [H, E], [D, E], [E, V], [V] */
    float *copy_w, *copy_b;                      /* [H + D], [1]: config.copy 1's gate; NULL otherwise */
    float *ptr_we, *ptr_ws, *ptr_bs;             /* [K], [H], [1]: config.copy 2's pointer; NULL otherwise */
    float *absent_b;                             /* [AC_COPY_CATEGORIES]: config.absent's priors; NULL otherwise */
    float *obj_h, *obj_c;                        /* [AC_COPY_CATEGORIES, H] each: config.object_init's; NULL otherwise */
    struct ac_copy_sets *copy; /* which words name each category (ac_decoder_set_copy_words); owned */
    /* The transformer has emb, out_lo [d, V] and out_bo [V] under these names (the trainer's output
     * bias and a warm start's word rows work alike); its other tensors are in transformer.c's list,
     * and the LSTM's pointers above are NULL. */
    /* Optional float16 copies of the weights the inference step streams (ac_decoder_use_f16), packed
     * for its kernel (panels of 64 columns); NULL unless made. They must not outlive a change of
     * params: training never makes them. */
    uint16_t *lstm_w16, *out_lo16, *att_wh16, *out_lh16, *out_lz16;
    uint16_t *emb16; /* [V, E] as stored, for a decoder loaded for captions (ac_decoder_take_f16); else NULL */
    /* Some of those (or emb16) were taken straight from a model file's float16 (ac_decoder_take_f16)
     * and their float32 weights in params never written: the decoder can caption but not train or be
     * saved. */
    int f16_only;
    struct ac_pool *step_pool; /* NULL, or the inference step's helper threads (ac_decoder_set_threads) */
    int shown_head;            /* the attention the inference step reports (ac_decoder_show_head) */
    int hard_expected;         /* a hard model decodes with the expected context (ac_decoder_hard_context) */
    int fixed_attention;       /* the inference step's weights replaced (ac_decoder_fix_attention) */
} ac_decoder;

int ac_decoder_init(ac_decoder *dec, const ac_decoder_config *cfg, unsigned long long seed, ac_err *err);
/* Turns config.absent on for a copy model without it: absent_b, all 0 (the same captions until set). The
 * other weights keep their values (and the float16 copies stay valid). */
int ac_decoder_add_absent(ac_decoder *dec, ac_err *err);
/* A copy model's word sets: word_category [vocab] gives the category (0 .. AC_COPY_CATEGORIES_MAX - 1)
 * word w names alone, or -1 (objects.h's ac_objects_of_vocab for COCO's; model.h's ImageNet words
 * after them). Needed before a copy model trains or decodes (the model loader and the trainer set
 * it); without it the copy path is off. */
int ac_decoder_set_copy_words(ac_decoder *dec, const short *word_category, ac_err *err);
void ac_decoder_free(ac_decoder *dec);
/* For inference (LSTM): keep float16 copies of the weights each step streams (lstm_w, out_lo, att_wh, out_lh,
 * out_lz) if every value is exactly a float16 (true of a model stored as F16) and the CPU has the
 * kernel (AVX-512). The step then reads half the memory, runs a faster kernel and gives the same
 * bits. Returns 1 if made, 0 if not (the float32 path stays), -1 out of memory. */
int ac_decoder_use_f16(ac_decoder *dec);
/* For inference, while loading (model.h's ac_model_init): if `name` is one of the weights the step
 * streams and the CPU has the float16 kernel, packs its float16 values src [rows, cols] (from the
 * file, 2-byte aligned) as its copy; the word embeddings ("emb"), of which the step reads a row per
 * hypothesis, are kept as stored (emb16) and widened a row at a time. Either sets f16_only: their
 * float32 weights are never made (half the memory to fault in and write at every start). 1 if taken,
 * 0 if not (load it as float32), -1 out of memory. */
int ac_decoder_take_f16(ac_decoder *dec, const char *name, const uint16_t *src);
/* For inference with few hypotheses (one photo; the LSTM's step): split the step over `threads` threads
 * (a pool the decoder keeps; 1 = none): its products by columns (with the float16 copies,
 * ac_decoder_use_f16), the attention scores and the photo's keys by cells, z by channels, the cell by
 * hidden units, the softmax and copy mixture by rows. The same bits for any count: every output is
 * computed whole by one thread, the same way whatever its chunk. A decoder with
 * helper threads must not step on two threads at once (a shallow copy with step_pool = NULL may).
 * Returns 0, or -1 if the threads cannot be started (the step then stays on the caller's thread). */
int ac_decoder_set_threads(ac_decoder *dec, int threads);
/* For inference with heads: the step reports head `head` (1 .. heads) instead of the heads' mean (0,
 * the default) as its attention, so overlays, teacher forcing and grounding show that head; the
 * words do not change. Fails for a head the model does not have. */
int ac_decoder_show_head(ac_decoder *dec, int head, ac_err *err);
/* For inference with a hard-attention model: context "argmax" (the default) takes each head's most
 * likely location at each step, "expected" the expected context sum_i alpha_i a_i (the soft step). Also
 * what training's validation loss uses (ac_decoder_forward_backward with train = 0). Fails for another
 * name, or for a soft model (it has no choice to make). */
int ac_decoder_hard_context(ac_decoder *dec, const char *context, ac_err *err);
/* An experiment on a trained LSTM model's attention at inference (what happens when all weights are
 * equal, or all but one are 0?): "uniform" gives every cell of the photo the same weight 1/n (the
 * context is the photo's mean annotation vector at every word), "peak" keeps only each head's most
 * weighted cell (weight 1, the rest 0: hard attention's argmax step on a soft model), "model" (the
 * default) the model's own weights. The step reports the weights it used. Training is never affected.
 * Fails for another name, or for a transformer. */
int ac_decoder_fix_attention(ac_decoder *dec, const char *how, ac_err *err);
/* Checks that a config's sizes are positive and sane (also bounds n_params). */
int ac_decoder_check_config(const ac_decoder_config *cfg, ac_err *err);

/* The parameter tensors in buffer order (names as stored in the model file; matrices are
 * [rows, cols] row-major, vectors have rows == 1). Returns the count (at most AC_DEC_MAX_TENSORS:
 * the score function decides which attention tensors there are). */
#define AC_DEC_MAX_TENSORS 32
typedef struct ac_dec_tensor {
    const char *name;
    int rows, cols;
    size_t offset; /* into params */
} ac_dec_tensor;
int ac_decoder_tensors(const ac_decoder_config *cfg, ac_dec_tensor *out, size_t *n_params);

/* The deep output used here is arctic-captions' (the authors' code): logits =
 * L_o dropout(tanh(E y + L_h dropout(h) + L_z z)) + b_o. */

/* Training: a batch of B captions, sorted by length descending so that the captions still running
 * at step t are a prefix. Caption b has len[b] steps: inputs <start> w_1 .. w_n, targets
 * w_1 .. w_n <end> (len = n + 1). words[b * stride + k] = w_{k+1}. ann[b] points to its photo's
 * annotations [L, D]; captions of one photo should share the pointer (W_a a is then computed once). */
typedef struct ac_dec_batch {
    int B;
    const int *len;
    const int *words;
    int stride;
    const float *const *ann;
    /* Optional [D], overwritten by the backward pass (NULL: not computed): d loss / d x, where x is
     * added to every annotation vector of every photo in the batch. For a batch whose photos are all
     * L copies of one vector (the trainer's learned "no photo" context for captions without a photo),
     * this is the gradient of that vector. Costs O(N D) on top of the backward pass. */
    float *dctx_sum;
    /* Hard attention: the REINFORCE baseline b per target token (the trainer's moving average of
     * the sampled captions' cross-entropy per token); a caption of n tokens is measured against n b. */
    double baseline;
    /* Optional [B] (NULL: every photo fills the grid): caption b's photo is its first n_valid[b] of the
     * L annotation vectors, the rest padding (masked: never read). 1 <= n_valid[b] <= L, the same for
     * captions that share a photo. */
    const int *n_valid;
    /* Optional [B] (NULL: nothing to copy): for a copy model, the last n_regions[b] of caption b's
     * photo's n_valid[b] rows are regions of categories region_cat[b][0 .. n_regions[b] - 1]. */
    const int *n_regions;
    const unsigned char *const *region_cat;
    /* Optional [B] (NULL: every region scores 1): caption b's regions' detector scores, in (0, 1],
     * region_score[b][0 .. n_regions[b] - 1] beside region_cat (config.object_init reads them). */
    const float *const *region_score;
    /* Optional [B] (NULL: each 1; the soft LSTM's only): caption b's cross-entropy, and a copy model's
     * switch supervision on its tokens, count weight[b] times in the loss and its gradient; the attention
     * penalty does not. A negative weight pushes the caption's probability down: self-critical training
     * (train.h's scst) weighs each sampled caption by its reward's advantage. */
    const float *weight;
} ac_dec_batch;
typedef struct ac_dec_stats {
    double ce_sum;  /* sum over target tokens of -log p(target) */
    double pen_sum; /* sum over captions and locations of (1 - sum_t alpha_ti)^2 */
    double switch_sum; /* copy: the switch's supervision, summed over tokens (copy_internal.h; 0 without) */
    int ntok;       /* target tokens */
    double loss;    /* (ce_sum + lambda * pen_sum + switch_sum - entropy * ent_sum + reinforce * score_sum) / ntok: the
                     * objective that grad differentiates (soft attention: the last two are 0; with caption
                     * weights, weighted_sum in place of ce_sum + switch_sum) */
    double weighted_sum; /* sum over captions of weight[b] (ce_b + switch_b); ce_sum + switch_sum without weights */
    /* Hard attention, over the captions that trained on sampled locations (for the trainer's baseline): */
    int hard_captions, hard_ntok;
    double hard_ce_sum;
    double ent_sum;   /* sum over their steps and heads of H(alpha_t) = -sum_i alpha_ti log alpha_ti */
    double score_sum; /* sum over them of (ce - n b) log p(s | a): ce their cross-entropy, n their tokens, held
                       * constant in the gradient; log p(s | a) = sum over steps and heads of log alpha_{t, s_t} */
} ac_dec_stats;
typedef struct ac_dec_work ac_dec_work; /* activations and scratch for batches up to max_B x max_T */
ac_dec_work *ac_dec_work_new(const ac_decoder_config *cfg, int max_B, int max_T);
void ac_dec_work_free(ac_dec_work *w);
/* Forward pass; if grad != NULL also the backward pass, grad [n_params] overwritten with d loss.
 * dropout > 0 only when train != 0; masks come from dropout_seed (same seed, same masks).
 * Hard attention (config.attention_mode) with train != 0: each caption, with probability
 * config.expected, trains on the expected context exactly as soft attention; the others sample s_t per
 * step and head from alpha_t (both from dropout_seed) and their terms of grad are
 *   d/dW [ -log p(y|s,a) + lambda sum_i (1 - sum_t alpha_ti)^2 - lambda_e H(s)
 *          + lambda_r (-log p(y|s,a) - n b) log p(s|a) ]      (the first factor held constant)
 * i.e. minus Xu et al.'s (eq. 12) estimate of the gradient of the bound L_s, with the moving baseline
 * n b (see ac_dec_batch) and H(s) = sum_t H(alpha_t) (see ac_dec_stats); all divided by ntok as the
 * soft objective. With train == 0 every caption takes the inference step's context
 * (ac_decoder_hard_context: argmax, or expected) and only the first two terms. */
int ac_decoder_forward_backward(const ac_decoder *dec, ac_dec_work *w, const ac_dec_batch *b, int train,
                                unsigned long long dropout_seed, float *grad, ac_dec_stats *st, ac_err *err);
/* The last forward's logits [ntok, V], rows time-major (step 0 of every caption, then step 1 of those
 * still running, ...; the transformer's are caption-major: caption 0's steps, then caption 1's ...),
 * after a call without grad (with grad they are overwritten by d loss/d logits).
 * For tests. */
const float *ac_dec_work_logits(const ac_dec_work *w);
/* The last forward's attention locations [ntok, heads] (rows as the logits'): the location each head
 * took at each step of a hard-attention caption, -1 for a caption on the expected context (and for
 * every row of a soft model). For tests. */
const int *ac_dec_work_locations(const ac_dec_work *w);
/* The same objective over `shards` shares of the batch (whole photos per share, balanced by tokens),
 * each forward/backward in its own thread (up to `threads`), gradients combined as the whole batch's.
 * BLAS runs single-threaded inside each shard (held so by the pool's fork/join). Results depend on shards,
 * not on threads. */
typedef struct ac_dec_pool ac_dec_pool;
ac_dec_pool *ac_dec_pool_new(const ac_decoder_config *cfg, int shards, int threads, int max_B, int max_T);
void ac_dec_pool_free(ac_dec_pool *p);
int ac_dec_pool_forward_backward(ac_dec_pool *p, const ac_decoder *dec, const ac_dec_batch *b, int train,
                                 unsigned long long dropout_seed, float *grad, ac_dec_stats *st, ac_err *err);

/* Inference, any decoder kind: what the beam search drives. */
typedef struct ac_dec_image ac_dec_image; /* per-photo precomputation: the LSTM's annotations, W_a a + b_a
                                             and mean; the transformer's keys and values of every layer */
ac_dec_image *ac_decoder_prepare(const ac_decoder *dec, const float *ann /* [L, D] */);
/* A photo whose own grid is grid_h x grid_w, its cells the first grid_h * grid_w rows of ann (the rest,
 * padding, is not read); NULL when out of memory or when the grid does not fit (ac_decoder_check_grid).
 * ac_decoder_prepare is this with the model's grid. */
ac_dec_image *ac_decoder_prepare_grid(const ac_decoder *dec, const float *ann, int grid_h, int grid_w);
/* A photo's grid_h x grid_w cells followed by `regions` region vectors (regions.h; at most
 * config.regions): rows 0 .. grid_h grid_w + regions - 1 of ann; the attention ranges over all of them. */
ac_dec_image *ac_decoder_prepare_regions(const ac_decoder *dec, const float *ann, int grid_h, int grid_w, int regions);
/* Refuses (one line) a photo grid that is empty or has more cells than the model's L. */
int ac_decoder_check_grid(const ac_decoder_config *cfg, int grid_h, int grid_w, ac_err *err);
/* The photo's own grid (as prepared). */
void ac_dec_image_grid(const ac_dec_image *img, int *grid_h, int *grid_w);
/* The regions it was prepared with (ac_decoder_prepare_regions; 0 otherwise). */
int ac_dec_image_regions(const ac_dec_image *img);
/* A copy model's step copies from the regions' categories (category [regions], each below
 * AC_COPY_CATEGORIES): set them after ac_decoder_prepare_regions; without them nothing is copied.
 * score [regions]: the detector's scores (config.object_init reads them), or NULL: each 1. */
void ac_dec_image_set_categories(ac_dec_image *img, const int *category, const float *score);
/* The same from the regions themselves (regions.h; as many as the photo was prepared with). */
struct ac_region;
void ac_dec_image_set_regions(ac_dec_image *img, const struct ac_region *regions);
void ac_dec_image_free(ac_dec_image *img);
/* A hypothesis's decoder state is two things: `state`, ac_decoder_state_size floats that each step
 * replaces (the LSTM's [h | c]; none for the transformer), and its history, ac_decoder_hist_size floats
 * per word fed so far that each step appends one of (the transformer's keys and values of every layer
 * at that position, [layers][2][d]: its KV cache; none for the LSTM). */
size_t ac_decoder_state_size(const ac_decoder_config *cfg);
size_t ac_decoder_hist_size(const ac_decoder_config *cfg);
/* The state before <start> is fed: state [ac_decoder_state_size]. */
void ac_decoder_start(const ac_decoder *dec, const ac_dec_image *img, float *state);
/* One step for K rows, all at position t (t words fed before: <start> is position 0): photo p has rows[p]
 * consecutive rows (K = their sum) and attends over img[p]; prev[K] word ids; state [K, S] and
 * hist[k] ([t, P]: row k's history, may be NULL when P = 0 or t = 0) in; state_out [K, S], hist_out
 * [K, P] (position t's entry), logp [K, V] (log-softmax), alpha [K, L] (with heads: their mean, or the
 * head shown) and beta [K] (may be NULL) out. In and out buffers must not alias. scratch holds
 * ac_decoder_advance_scratch(cfg, K, t_max) floats for any t <= t_max, owned by the caller; its contents on
 * entry do not matter. Each weight matrix is read once for all the rows, and every row's results are the
 * same bits as a step of its photo alone; the LSTM's are those of ac_decoder_step_photos. */
size_t ac_decoder_advance_scratch(const ac_decoder_config *cfg, int K, int t_max);
void ac_decoder_advance(const ac_decoder *dec, int n_photos, const ac_dec_image *const *img, const int *rows, int t,
                        const int *prev, const float *state, const float *const *hist, float *state_out,
                        float *hist_out, float *logp, float *alpha, float *beta, float *scratch);
/* The same step, and for each row the copy model's account of any word it may give next
 * (ac_decoder_copy_shares' numbers, the same bits, without teacher forcing them again): account [K,
 * AC_DECODER_ACCOUNT_ROW], read with ac_decoder_account_word; rows of a model without copy, or of a
 * photo without categories, account for nothing. account may be NULL. */
#define AC_DECODER_ACCOUNT_ROW 64 /* 2 * regions.h's AC_REGIONS_MAX */
void ac_decoder_advance_account(const ac_decoder *dec, int n_photos, const ac_dec_image *const *img, const int *rows,
                                int t, const int *prev, const float *state, const float *const *hist,
                                float *state_out, float *hist_out, float *logp, float *alpha, float *beta,
                                float *account, float *scratch);
/* From a row of account (its photo img): word w's share copied, and region [R] (may be NULL; R =
 * ac_dec_image_regions(img)) where it came from: ac_decoder_copy_shares' share[k] and region row k for
 * a caption whose word k is w. */
float ac_decoder_account_word(const ac_decoder *dec, const ac_dec_image *img, const float *account, int w,
                              float *region);

/* The LSTM's step in its own terms (h and c apart); a transformer has none (these do nothing for it:
 * use ac_decoder_start and ac_decoder_advance). */
void ac_decoder_initial_state(const ac_decoder *dec, const ac_dec_image *img, float *h /* [H] */, float *c /* [H] */);
/* One step for K rows: prev[K] word ids, h/c [K, H] in; h_out/c_out [K, H], logp [K, V] (log-softmax),
 * alpha [K, L] (with heads: their mean), beta [K] out (beta may be NULL). In and out buffers must not
 * alias. scratch holds ac_decoder_step_scratch(cfg, K) floats, owned by the caller (one per thread),
 * so the step neither allocates nor fails; its contents on entry do not matter. */
size_t ac_decoder_step_scratch(const ac_decoder_config *cfg, int K);
void ac_decoder_step(const ac_decoder *dec, const ac_dec_image *img, int K, const int *prev, const float *h,
                     const float *c, float *h_out, float *c_out, float *logp, float *alpha, float *beta,
                     float *scratch /* [ac_decoder_step_scratch(cfg, K)] */);

/* The same step for the hypotheses of several photos at once: photo p has rows[p] consecutive rows
 * (of K = the sum) and attends over its own img[p]; all buffers are as above with K rows, scratch
 * ac_decoder_step_scratch(cfg, K). Each weight matrix is read once for all the rows, and every row's
 * results are the same bits as a step of its photo alone (ac_decoder_step is this with one photo). */
void ac_decoder_step_photos(const ac_decoder *dec, int n_photos, const ac_dec_image *const *img, const int *rows,
                            const int *prev, const float *h, const float *c, float *h_out, float *c_out, float *logp,
                            float *alpha, float *beta, float *scratch);

/* A copy model's account of a caption on a photo prepared with its regions' categories, in one
 * teacher-forced pass (the steps of ac_decoder_attend_image): share [n + 1], for each word (and <end>)
 * the part of its probability that came from copying a region's category, g Pi_c p_w / Q_c over p(w)
 * (config.copy): 0 for a word the vocabulary alone gave, near 1 for one the region named; and region
 * [n + 1, R] (may be NULL; R = ac_dec_image_regions(img)), where each copy came from: row k, region r's
 * part of word k's probability, g pi_r [c_r = c(w)] p_w / Q_c over p(w) (pi_r the pointer's weight on
 * the region, copy 2's, or the attention's renormalised over the regions, copy 1's). Row k sums to
 * share[k], and share[k] + (1 - g) p_w / p(w), the vocabulary's part, is 1. All 0 for a model without
 * copy or a photo without categories. words [n] (ids). */
int ac_decoder_copy_shares(const ac_decoder *dec, const ac_dec_image *img, const int *words, int n, float *share,
                           float *region, ac_err *err);
/* The same for n captions at once, caption i of n_words[i] words on photo img[i] (photos may repeat), with
 * share[i] and region[i] (may be NULL) as above: the steps of all the captions run together, each weight
 * matrix read once a step for every caption still running, and each caption's numbers are the same bits as
 * ac_decoder_copy_shares of it alone. On an error, the shares are unspecified. */
int ac_decoder_copy_shares_many(const ac_decoder *dec, int n, const ac_dec_image *const *img,
                                const int *const *words, const int *n_words, float *const *share,
                                float *const *region, ac_err *err);

/* Teacher forcing: the attention the decoder gives each word of a given caption, as if it had
 * produced the caption itself. words [n] (ids, without <start>/<end>); ann [L, D].
 * alpha [n + 1, L]: row k is the attention of the step that predicts word k (row n: <end>);
 * beta [n + 1] and logprob (log p of the words and <end>) may be NULL. The same ac_decoder_advance calls
 * as a beam search that produced these words, so the same numbers bit for bit. */
int ac_decoder_attend(const ac_decoder *dec, const float *ann, const int *words, int n, float *alpha, float *beta,
                      double *logprob, ac_err *err);
/* The same, with word_logp [n + 1] (may be NULL): log p of each word and of <end>. */
int ac_decoder_attend_words(const ac_decoder *dec, const float *ann, const int *words, int n, float *alpha,
                            float *beta, float *word_logp, double *logprob, ac_err *err);
/* The same for a photo whose own grid is grid_h x grid_w (ac_decoder_prepare_grid); alpha rows keep L
 * entries, the padded ones 0. */
int ac_decoder_attend_grid(const ac_decoder *dec, const float *ann, int grid_h, int grid_w, const int *words, int n,
                           float *alpha, float *beta, float *word_logp, double *logprob, ac_err *err);
/* The same on a prepared photo (its regions, and a copy model's categories, included). */
int ac_decoder_attend_image(const ac_decoder *dec, const ac_dec_image *img, const int *words, int n, float *alpha,
                            float *beta, float *word_logp, double *logprob, ac_err *err);
#ifdef __cplusplus
}
#endif
#endif
