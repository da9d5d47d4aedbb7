/* attncap/beam.h: not part of the stable API; may change in any release (the stable core: attncap.h). */
/* attncap/beam.h: greedy and beam-search decoding with length normalisation, optionally
 * constrained to contain given words. Every hypothesis carries its own attention history, so the
 * returned alphas belong to the returned caption.
 *
 * Constrained beam search (Anderson et al. 2017, "Guided Open Vocabulary Image Captioning with
 * Constrained Beam Search"). A constraint is a set of alternatives, each a phrase of 1..3 words
 * ({cat, cats, kitten}, {"hot dog", "hot dogs"}); a caption meets it if it contains one of them as
 * consecutive words (a word may count for several constraints). The search runs a finite-state
 * machine whose states are (the subset of constraints met so far, the depth d = 0..2 of the longest
 * unfinished phrase of an unmet constraint that the caption's last d words begin): the states with
 * d > 0 are the intermediate states of multi-word phrases. Every state has its own beam of K
 * hypotheses, filled at each step with the best candidates (by log-probability) that land in it,
 * from any state; each state's beam shrinks as its hypotheses finish, as in the unconstrained search.
 * A caption must end in the accepting state (every constraint met); the search stops when K
 * hypotheses have finished there, or none are live. With a beam large enough that nothing is
 * pruned, the caption returned is the best-scoring of all that meet every constraint. A satisfiable
 * set of constraints is met by any beam >= 1 if max_len leaves room for their words: each state's
 * beam is filled one step after the state before it on the way.
 * Fallback: if no caption finished in the accepting state within max_len, the best finished caption
 * of the state with the most constraints met is returned (ties: the better score); met_mask says
 * which. nbest's runners-up come from the same state. Without constraints the search is exactly the
 * unconstrained one (one state). */
#ifndef ATTNCAP_BEAM_H
#define ATTNCAP_BEAM_H
#include "attncap/decoder.h"
#include "attncap/regions.h"
#include "attncap/vocab.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct ac_caption {
    int n;          /* words, without <start>/<end> */
    int *words;     /* [n] */
    float *alpha;   /* [n + 1, grid_h * grid_w]: attention for each word and for the final <end>, over the
                       photo's own grid (below); for a copy model's caption, once its account is taken
                       (copied below), the attention shown: where each word came from (ac_caption_copy_account) */
    float *beta;    /* [n + 1] */
    double logprob; /* sum of log p of the words and <end> */
    float *word_logp; /* [n + 1] log p of each word and of <end> given the words before (NULL when
                         not known) */
    double score;   /* the ranking score (length-normalised) */
    char **labels;  /* NULL, or [n] words to show instead of the vocabulary's (a given caption's own
                       words, which may lie outside the vocabulary and were fed as <unk>) */
    int n_alt;      /* with ac_beam_opts.nbest > 1: the runners-up, best first (distinct captions, */
    struct ac_caption *alt; /* each with its own attention), owned by this caption */
    int met_mask;   /* with constraints: bit i set if the caption meets constraint i (all bits unless no
                       caption met them all: the fallback); 0 without */
    /* What naming.h adds (zero / NULL / NAN from a plain search): */
    int n_tags;
    struct ac_caption_tag *tags; /* [n_tags] the encoder's tags for the photo, best first; owned */
    double confidence;           /* calibrated probability that the caption is right (naming.h); NAN if
                                    the model has no calibration; 0 from a plain ac_beam_search */
    int described;               /* 1: the model was unsure and a description from the best tag replaced
                                    its caption */
    int grid_h, grid_w; /* the grid alpha's rows cover: the photo's own (ac_decoder_prepare_grid), the
                           model's unless its encoder keeps the aspect ratio (the padding's weights, 0,
                           are left out); 0 in a caption made otherwise: the model's */
    int n_regions;      /* the detected objects the decoder attended to beside the grid (regions.h): each
                           alpha row is grid_h * grid_w cells, then n_regions regions */
    struct ac_region *regions; /* [n_regions] (owned; NULL when the captioner did not fill them in) */
    float *copied;      /* NULL, or [n + 1] a copy model's account (decoder.h ac_decoder_copy_shares): the share of
                           each word's probability that came from copying a region's category (owned) */
    float *account;     /* NULL, or [n + 1, 1 + n_regions] a copy model's search kept each word's account
                           (its copied share, then each region's part), which ac_caption_copy_account takes
                           instead of teacher forcing the caption again (owned) */
} ac_caption;

/* Entries per row of c->alpha: the grid's cells and the regions. */
static inline int ac_caption_alpha_stride(const ac_caption *c) { return c->grid_h * c->grid_w + c->n_regions; }
/* Row k of c->alpha as weights over the grid's cells alone: each region's weight spread evenly over the
 * cells whose centres lie in its box (the cell under its centre when none does), so a picture of the
 * grid shows an attended box lit. out [grid_h * grid_w]; sums to what the row sums to. */
void ac_caption_cell_attention(const ac_caption *c, int k, float *out);
/* Every row of c->alpha (and its runners-up's) replaced by ac_caption_cell_attention's, in place:
 * afterwards n_regions is 0 (regions stays, for the record). -1 when out of memory (c unchanged). */
int ac_caption_fold_regions(ac_caption *c);

/* A tag of the photo (naming.h): a word for what the encoder's classes see. */
typedef struct ac_caption_tag {
    char word[64];  /* "cat", "hot dog" */
    char cls[96];   /* the ImageNet class it comes from (its most probable one): "Egyptian cat" */
    float prob;     /* its score (tags.h) */
    int in_vocab;   /* the model can say it (some form of it is in the vocabulary) */
    int forced;     /* the search was constrained to say it (and the caption does) */
    int named;      /* the caption names it (forced or not) */
    float precision; /* how often the training photos' references named it at this score (tag_precision.h);
                        NAN when the model records no such fit */
} ac_caption_tag;

#define AC_MAX_CONSTRAINTS 4
#define AC_MAX_PHRASE 3        /* words per alternative */
#define AC_MAX_ALTERNATIVES 64 /* per constraint */
typedef struct ac_phrase {
    int n;                    /* 1..AC_MAX_PHRASE */
    int words[AC_MAX_PHRASE]; /* word ids of real words (> AC_UNK, < the vocabulary's size) */
} ac_phrase;
typedef struct ac_constraint {
    int n_alt;            /* 1..AC_MAX_ALTERNATIVES */
    const ac_phrase *alt; /* [n_alt]: met if the caption contains any of them */
} ac_constraint;

#define AC_REPEAT_CONJUNCTION 2 /* ac_beam_opts.no_repeat's mark of "and" */
#define AC_REPEAT_ARTICLE 3     /* and of "a", "an", "the" */

typedef struct ac_beam_opts {
    int beam;          /* K; 1 = greedy (default 3). The beam shrinks as hypotheses finish (see beam.c) */
    int max_len;       /* words, default 20 */
    float len_alpha;   /* score = logprob / len^len_alpha, len = words + 1 (<end> counts); 0 = none,
                          1 = mean per token (default, as Xu et al.'s code) */
    int allow_unk;     /* 0: <unk> is never emitted */
    int nbest;         /* > 1: also return the next nbest - 1 finished captions by score in
                          ac_caption.alt (at most beam - 1 of them: the beam finishes beam captions) */
    int n_constraints; /* 0..AC_MAX_CONSTRAINTS; 0 = unconstrained (default) */
    const ac_constraint *constraints; /* [n_constraints], the caller's, read only during the search */
    const unsigned char *banned; /* NULL, or [vocabulary size]: words never emitted (the caller's) */
    const unsigned char *no_repeat; /* NULL, or [vocabulary size]: 1 for the words never emitted twice
                                       in one caption, AC_REPEAT_CONJUNCTION for a conjunction ("and",
                                       which may repeat) whose word before it never comes right after
                                       it ("white and white"), AC_REPEAT_ARTICLE for an article (which
                                       may repeat) that never brings back the word before such a
                                       conjunction ("a sink and a sink"); and, when set, no word twice
                                       in a row and no three words in a row twice (the caller's; a
                                       model's own: ac_model.decode) */
} ac_beam_opts;
/* beam 3, max_len 20, len_alpha 1, no <unk>, nbest 1. A model's own settings (chosen on dev photos)
 * are ac_model.decode (model.h). */
ac_beam_opts ac_beam_defaults(void);

/* The caption of one photo. Bad options (beam, max_len, len_alpha out of range; constraints: more
 * than AC_MAX_CONSTRAINTS, one without alternatives or with too many, a phrase of 0 or more than
 * AC_MAX_PHRASE words, a word id outside the real words) are refused through err, as is a beam
 * times constraint states over 4096 hypotheses. */
int ac_beam_search(const ac_decoder *dec, const float *ann /* [L, D] */, const ac_beam_opts *opts,
                   ac_caption *out, ac_err *err);
/* The same for a photo whose own grid is grid_h x grid_w (decoder.h, masks); a grid that does not fit
 * the model is refused. */
int ac_beam_search_grid(const ac_decoder *dec, const float *ann, int grid_h, int grid_w, const ac_beam_opts *opts,
                        ac_caption *out, ac_err *err);
/* The same with n_regions regions after the grid's cells in ann (ac_decoder_prepare_regions), what
 * they are given (their categories and scores; NULL: unknown, a copy model then copies nothing): how a
 * regions model sees a photo, as the captioner gives it its detections. */
int ac_beam_search_regions(const ac_decoder *dec, const float *ann, int grid_h, int grid_w, int n_regions,
                           const ac_region *regions, const ac_beam_opts *opts, ac_caption *out, ac_err *err);
/* The searches of several photos at once: each task is searched exactly as ac_beam_search would
 * (same captions, scores and attention, bit for bit), while at every time step the live hypotheses
 * of all the photos go through one decoder step (ac_decoder_step_photos), which reads the decoder's
 * weights once for all of them. */
/* A photo's memo: the decoder's outputs for every hypothesis its searches computed, so that a later
 * search of the same photo (with other options or constraints) takes them instead of computing them
 * again; the same bits either way. Belongs to one photo and one decoder. */
typedef struct ac_beam_memo ac_beam_memo;
ac_beam_memo *ac_beam_memo_new(const ac_decoder *dec);
void ac_beam_memo_free(ac_beam_memo *m);
typedef struct ac_beam_task {
    const ac_dec_image *img; /* the photo (ac_decoder_prepare), the caller's */
    ac_beam_memo *memo;      /* NULL, or the photo's memo (the caller's; searches read and add to it) */
    ac_beam_opts opts;       /* its pointers (constraints, banned) are the caller's */
    ac_caption out;          /* the caption, when not failed (the caller frees it) */
    int failed;              /* nonzero: err says why (bad options, out of memory); out is empty */
    ac_err err;
} ac_beam_task;
/* 0 if every task has its caption, else -1 (the others are still searched and filled). */
int ac_beam_search_photos(const ac_decoder *dec, int n, ac_beam_task *tasks);
void ac_caption_free(ac_caption *c);
/* No search: the caption of the given words[0..n) (ids), with the attention, gates and log-probability
 * the decoder gives them when fed word by word (teacher forcing, ac_decoder_attend); score = logprob. */
int ac_caption_forced(const ac_decoder *dec, const float *ann /* [L, D] */, const int *words, int n, ac_caption *out,
                      ac_err *err);
/* The same for a photo whose own grid is grid_h x grid_w. */
int ac_caption_forced_grid(const ac_decoder *dec, const float *ann, int grid_h, int grid_w, const int *words, int n,
                           ac_caption *out, ac_err *err);
/* The same with n_regions regions after the grid's cells in ann (ac_decoder_prepare_regions), what
 * they are given (NULL: unknown; a copy model then copies nothing); a copy model's caption also gets
 * its `copied` account. */
int ac_caption_forced_regions(const ac_decoder *dec, const float *ann, int grid_h, int grid_w, int n_regions,
                              const ac_region *regions, const int *words, int n, ac_caption *out, ac_err *err);
/* A copy model's account of c and of its runners-up (c->copied: decoder.h ac_decoder_copy_shares) on
 * the photo its search used (its regions' categories set). Nothing for a model without copy, or for a
 * caption that has it already. It also makes c->alpha the attention shown for each word (overlays,
 * `--json --attention`, ac_result's attention and region attention, ground): where the word came from.
 * A word whose probability p(w) came share s from copying regions' categories shows row
 *   (1 - s) alpha + [0 ... 0 | f_1 ... f_R]
 * with alpha the context attention of its step (the cells', then the regions') and f_r the part of p(w)
 * copied from region r (ac_decoder_copy_shares' region; sum_r f_r = s), so a word copied whole from the
 * giraffe's box lights that box, whatever the context attention looked at; the row still sums to 1.
 * Rows with nothing copied (s = 0: every word of a model without copy) are the step's, bit for bit. */
int ac_caption_copy_account(ac_caption *c, const ac_decoder *dec, const ac_dec_image *img, ac_err *err);
/* The same for n captions, c[i] on photo img[i], their runners-up included. A caption the beam search
 * made carries the account its steps kept (c->account, taken and freed here); the others go through
 * one teacher-forced pass together (decoder.h ac_decoder_copy_shares_many). Either way, the same bits
 * as teacher forcing each alone. On an error no caption is given an account. */
int ac_captions_copy_account(const ac_decoder *dec, int n, ac_caption *const *c, const ac_dec_image *const *img,
                             ac_err *err);
/* logprob / (n + 1): the mean log-probability per predicted token (the words and <end>). */
double ac_caption_mean_logprob(const ac_caption *c);
/* Many photos of a feature cache at once: ac_decode_rows (decode_rows.h). */

/* The caption's words (as ac_caption_word shows them) joined by spaces (malloc'd). */
char *ac_caption_text(const ac_caption *c, const ac_vocab *v);
/* The indefinite article ("a" or "an", static) the word next takes by its sound: "an orange", "an
 * hour", "an honest", "an 8"; "a one", "a user", "a unicorn", "a european". Lowercase words, as
 * captions are; "a" for NULL or "". */
const char *ac_article_for(const char *next);
/* Word k as shown: its label if the caption has labels, else the vocabulary's word (or "<unk>"); an
 * indefinite article ("a", "an") agrees with word k + 1 (ac_article_for), whichever the model said or
 * the given caption had. */
const char *ac_caption_word(const ac_caption *c, const ac_vocab *v, int k);
#ifdef __cplusplus
}
#endif
#endif
