/* copy_internal.h: the copy path of an LSTM with config.copy (decoder.h): the word for an attended
 * region comes from the region's category, mixed with the vocabulary softmax by a learned gate.
 * Private to src/decoder/.
 *
 * Per step, with p = softmax(logits) over the V words, g = sigmoid(w_c . [h_t; z_t] + b_c), and the
 * photo's regions r of category c_r (only regions whose category names some word: S(c) non-empty):
 *   pi_r   = abar_r / sum_r' abar_r'            abar: the attention on region r (the heads' mean)
 *   Pi_c   = sum_{r: c_r = c} pi_r
 *   p(w)   = (1 - g) p_w + g Pi_{c(w)} p_w / Q_{c(w)},   Q_c = sum_{w' in S(c)} p_w'
 * where c(w) is the category word w names (objects.h's reading of a word alone; every word names
 * at most one, so the sets S(c) are disjoint) and Pi of a category no region has is 0. The copy share
 * g Pi_c is spread over S(c) in the vocabulary's own proportions: "giraffe" or "giraffes", "man" or
 * "woman" come from the language model, that it is a giraffe from the region. Without a region of a
 * named category p(w) = p_w, and g gets no gradient.
 *
 * Training supervises the switch as well (Gulcehre et al. 2016, "Pointing the Unknown Words"): where the
 * photo has a region of a named category, each token adds AC_COPY_SWITCH_WEIGHT times the binary
 * cross-entropy of g against whether the target word names one of its regions' categories. Without it
 * the gate hardly opens: on training photos the vocabulary already says "dog" for a dog, so the
 * likelihood alone gains little from copying, and a sheep the encoder sees as a dog stays a dog. */
#ifndef ATTNCAP_COPY_INTERNAL_H
#define ATTNCAP_COPY_INTERNAL_H
#include "attncap/decoder.h"

#define AC_COPY_SWITCH_WEIGHT 1.0

/* Region rows of one photo for the copy path: n of them, categories cat[n], attention abar[n]. */
typedef struct ac_copy_regions {
    int n;
    const unsigned char *cat;
    const float *abar;
} ac_copy_regions;

/* Frees the word sets (ac_decoder_free does). */
void ac_decoder_free_copy_words(ac_decoder *dec);

/* abar [nr]: the heads' mean of the attention ah [heads, L] on rows g0 .. g0 + nr - 1 (the regions). */
static inline void ac_copy_region_attention(const float *ah, int heads, int L, int g0, int nr, float *abar) {
    for (int k = 0; k < nr; k++) {
        float sum = 0;
        for (int j = 0; j < heads; j++) sum += ah[(size_t)j * L + g0 + k];
        abar[k] = sum / heads;
    }
}

/* The gate's pre-activation u = w_c . [h; z] + b_c (h [H], z [D]). */
float ac_copy_gate_logit(const ac_decoder *dec, const float *h, const float *z);

/* Inference: logp [V] (a log-softmax row) becomes log p(w) above, in place. */
void ac_copy_mix_logp(const ac_decoder *dec, const ac_copy_regions *reg, float gate, float *logp);
/* 0 when ac_copy_word_account of y is 0 whatever the step (y of no category, or of none of the n
 * regions' categories cat), else 1: a caption's account need not step past its last such word. */
int ac_copy_word_may_copy(const ac_decoder *dec, const unsigned char *cat, int n, int y);
/* Teacher forcing's account of word y at a step whose vocabulary log-softmax is logp [V] (before the
 * mixture), with the gate and reg->abar the mixture takes: returns the share of p(y) that was copied,
 * g Pi_c p_y / Q_c over p(y) (c = c(y)), and writes region [reg->n] (may be NULL) each region's part of
 * it, g pi_r [c_r = c] p_y / Q_c over p(y): they sum to the share, and 1 - share = (1 - g) p_y / p(y) is
 * the vocabulary's. All 0 for a word of no region's category. */
float ac_copy_word_account(const ac_decoder *dec, const ac_copy_regions *reg, float gate, const float *logp, int y,
                           float *region);
/* The same for a word of each region's category at once, as the search's step keeps it: share [reg->n]
 * (entry r: the share of a word of region r's category) and from [reg->n] (region r's part of that
 * word's share); 0 where the category has no words. ac_copy_account_of_word reads a word's account
 * off them, the same bits as ac_copy_word_account's. */
void ac_copy_row_account(const ac_decoder *dec, const ac_copy_regions *reg, float gate, const float *logp,
                         float *share, float *from);
float ac_copy_account_of_word(const ac_decoder *dec, const unsigned char *cat, int n, const float *share,
                              const float *from, int y, float *region);

/* Training, one token: -log p(y) for raw logits [V] and gate g; *switch_loss gets the switch's binary
 * cross-entropy above (0 where there is nothing to copy), unweighted. */
double ac_copy_xent(const ac_decoder *dec, const ac_copy_regions *reg, float gate, const float *logits, int y,
                    double *switch_loss);
/* The gradient of -log p(y) + AC_COPY_SWITCH_WEIGHT * switch_loss, times k: logits [V] is replaced by k d(-log p(y))/d logits; *dgate_logit gets k d/du
 * (u the gate's pre-activation) and dabar [reg->n] gets k d/d abar_r. */
void ac_copy_xent_grad(const ac_decoder *dec, const ac_copy_regions *reg, float gate, float *logits, int y, float k,
                       float *dgate_logit, float *dabar);

/* copy 2 (decoder.h): the pointer's step. reg->n regions of categories reg->cat with keys [n, K] (their
 * rows of W_a a + b_a), the step's query q [K], h [H] the sentinel's input (dropped h_t): writes the
 * scores e [n], abar [n] = exp(e_r - max) over the regions whose category has words (0 for the others),
 * cache [n, K] (the tanh, for the backward; NULL at inference), and returns the gate's pre-activation
 * u = log sum_r exp(e_r) - e_s (-inf when no region's category has words). ac_copy_mix_logp and
 * ac_copy_xent then take sigmoid(u) as the gate and abar as the regions' attention: g pi_r is the
 * sentinel softmax's weight on region r. */
float ac_copy_pointer_forward(const ac_decoder *dec, const ac_copy_regions *reg, const float *keys, const float *q,
                              const float *h, float *e, float *abar, float *cache);
/* Its backward from du and dabar [n] (ac_copy_xent_grad's dgate_logit and dabar), reg->abar being the
 * forward's: ADDS d loss to dq [K], dkeys [n, K], the pointer's g_we [K], g_ws [H], g_bs [1] and dh [H]. */
void ac_copy_pointer_backward(const ac_decoder *dec, const ac_copy_regions *reg, const float *keys, const float *q,
                              const float *h, const float *cache, float du, const float *dabar, float *dq,
                              float *dkeys, float *g_we, float *g_ws, float *g_bs, float *dh);
/* config.absent: rows [rows, ld] of vocabulary logits of a photo whose regions have categories cat [n]
 * (255: none) get absent_b[c] added to each word of every category c no region has. */
void ac_copy_absent_logits(const ac_decoder *dec, const unsigned char *cat, int n, int rows, float *logits, int ld);
/* Its gradient: ADDS to g_absent [AC_COPY_CATEGORIES] the sum of dlogits [V] over the words of each
 * category the regions cat [n] lack (the bias enters every such word's logit once). */
void ac_copy_absent_grad(const ac_decoder *dec, const unsigned char *cat, int n, const float *dlogits, float *g_absent);
#endif
