/* beam.c: greedy and beam-search decoding, following the shrinking beam of Xu et al.'s own code
 * (arctic-captions gen_sample):
 *
 *   - the search starts from one hypothesis (<start>, the decoder's initial state);
 *   - at each step every live hypothesis is expanded by every allowed word; of all candidates the
 *     best (K - finished) by cumulative log-probability are kept (ties: lower hypothesis index, then
 *     lower word id, so the search is deterministic);
 *   - a kept candidate ending in <end> is finished and leaves the beam, so the beam shrinks; the
 *     search stops when K hypotheses have finished or none are live;
 *   - after max_len words only <end> may follow (its log-probability is counted);
 *   - among the finished hypotheses the caption with the best score = logprob / len^len_alpha is
 *     returned, len = words + 1 (the <end> token is predicted too, as in arctic-captions); ties go
 *     to the earlier finisher. With nbest > 1 the runners-up by the same order come with it.
 *
 * K = 1 is exactly greedy decoding (argmax until <end>). With K at least the number of distinct
 * sequences of up to max_len words nothing is ever pruned, so the result equals exhaustive search.
 * <pad> and <start> are never emitted; <unk> only with allow_unk.
 *
 * Each hypothesis owns its history (words, alpha, beta) and a candidate copies its parent's, so the
 * attention returned is the attention the decoder actually used for the returned words. All live
 * hypotheses go through one ac_decoder_step call per time step. */
#include "attncap/beam.h"

#include <cblas.h>
#include <math.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

ac_beam_opts ac_beam_defaults(void) {
    ac_beam_opts o = {.beam = 3, .max_len = 20, .len_alpha = 1.0f, .allow_unk = 0};
    return o;
}

typedef struct hyp {
    int *words;   /* [max_len] */
    float *alpha; /* [(max_len + 1), L] */
    float *beta;  /* [max_len + 1] */
    double logprob;
} hyp;

typedef struct cand {
    double lp;
    int k, w;
} cand;

/* a ranks before b: higher log-probability, then lower (hypothesis, word). */
static int cand_before(const cand *a, const cand *b) {
    if (a->lp != b->lp) return a->lp > b->lp;
    if (a->k != b->k) return a->k < b->k;
    return a->w < b->w;
}

/* Inserts c into top[0..*n) (sorted, capacity m), keeping the m best. */
static void top_insert(cand *top, int *n, int m, cand c) {
    if (*n == m && !cand_before(&c, &top[m - 1])) return;
    int i = *n < m ? (*n)++ : m - 1;
    while (i > 0 && cand_before(&c, &top[i - 1])) {
        top[i] = top[i - 1];
        i--;
    }
    top[i] = c;
}

/* A finished hypothesis: its words, attention [(n + 1), L] and gates [n + 1] (buffers sized for max_len). */
typedef struct ended {
    int n;
    double lp, score;
    int *words;
    float *alpha, *beta;
} ended;

/* Makes room for a hypothesis finishing with `score` among the n_keep best (rank, best first; an
 * equal score ranks after those already there: the earlier finisher wins). Returns the slot to fill,
 * or NULL if it does not make the cut. */
static ended *keep_finished(ended **rank, int *n, int n_keep, ended *slots, double score) {
    if (isnan(score)) return NULL; /* never rank a NaN */
    int pos = 0;
    while (pos < *n && rank[pos]->score >= score) pos++;
    if (pos == n_keep) return NULL;
    ended *f = *n < n_keep ? &slots[(*n)++] : rank[n_keep - 1]; /* a new slot, or the dropped one's */
    for (int i = *n - 1; i > pos; i--) rank[i] = rank[i - 1];
    rank[pos] = f;
    f->score = score;
    return f;
}

static int copy_finished(const ended *f, int L, ac_caption *c) {
    c->n = f->n, c->logprob = f->lp, c->score = f->score;
    c->words = malloc(((size_t)f->n + 1) * sizeof *c->words);
    c->alpha = malloc((size_t)(f->n + 1) * L * sizeof *c->alpha);
    c->beta = malloc(((size_t)f->n + 1) * sizeof *c->beta);
    if (!c->words || !c->alpha || !c->beta) return -1;
    memcpy(c->words, f->words, (size_t)f->n * sizeof *c->words);
    memcpy(c->alpha, f->alpha, (size_t)(f->n + 1) * L * sizeof *c->alpha);
    memcpy(c->beta, f->beta, ((size_t)f->n + 1) * sizeof *c->beta);
    return 0;
}

static double norm_score(double lp, int n_words, float len_alpha) {
    return len_alpha == 0.0f ? lp : lp / pow((double)(n_words + 1), (double)len_alpha);
}

int ac_beam_search(const ac_decoder *dec, const float *ann, const ac_beam_opts *opts, ac_caption *out,
                   ac_err *err) {
    memset(out, 0, sizeof *out);
    ac_beam_opts o = opts ? *opts : ac_beam_defaults();
    const int K = o.beam, T = o.max_len, V = dec->cfg.vocab, H = dec->cfg.hidden, L = dec->cfg.n_ann;
    if (K < 1 || K > 4096) return ac_errf(err, "beam search: beam size %d out of range 1..4096", K);
    if (T < 1 || T > 1000) return ac_errf(err, "beam search: max length %d out of range 1..1000", T);
    if (V <= AC_UNK) return ac_errf(err, "beam search: vocabulary of %d words has no real words", V);
    if (!isfinite(o.len_alpha) || o.len_alpha < 0)
        return ac_errf(err, "beam search: length-normalisation exponent %g must be >= 0", o.len_alpha);

    float *fbuf = NULL;
    int *ibuf = NULL;
    hyp *hy = calloc((size_t)2 * K, sizeof *hy);
    cand *top = malloc((size_t)K * sizeof *top);
    int *prev = malloc((size_t)K * sizeof *prev);
    size_t nf = (size_t)2 * K * ((size_t)(T + 1) * L + (T + 1)) /* histories */
              + (size_t)4 * K * H + (size_t)2 * K * H         /* h, c, h_out, c_out (2 sets) */
              + (size_t)K * V + (size_t)K * L + K;           /* logp, alpha, beta */
    fbuf = malloc(nf * sizeof *fbuf);
    ibuf = malloc((size_t)2 * K * T * sizeof *ibuf);
    ac_dec_image *img = NULL;
    int rc = -1;
    /* The best n_keep finished hypotheses so far, best first: rank[i] points into fin. */
    const int n_keep = o.nbest > 1 ? (o.nbest < K ? o.nbest : K) : 1;
    int n_fin = 0;
    ended *fin = calloc((size_t)n_keep, sizeof *fin), **rank = calloc((size_t)n_keep, sizeof *rank);
    int *fin_words = malloc((size_t)n_keep * T * sizeof *fin_words + 1);
    float *fin_hist = malloc((size_t)n_keep * ((size_t)(T + 1) * L + (T + 1)) * sizeof *fin_hist);
    for (int i = 0; fin && fin_words && fin_hist && i < n_keep; i++) {
        fin[i].words = fin_words + (size_t)i * T;
        fin[i].alpha = fin_hist + (size_t)i * ((size_t)(T + 1) * L + (T + 1));
        fin[i].beta = fin[i].alpha + (size_t)(T + 1) * L;
    }
    if (!hy || !top || !prev || !fbuf || !ibuf || !fin || !rank || !fin_words || !fin_hist) {
        ac_errf(err, "beam search: out of memory (beam %d, vocabulary %d)", K, V);
        goto done;
    }
    img = ac_decoder_prepare(dec, ann);
    if (!img) {
        ac_errf(err, "beam search: out of memory preparing the photo");
        goto done;
    }
    float *p = fbuf;
    for (int i = 0; i < 2 * K; i++) {
        hy[i].alpha = p, p += (size_t)(T + 1) * L;
        hy[i].beta = p, p += T + 1;
        hy[i].words = ibuf + (size_t)i * T;
    }
    float *h = p; p += (size_t)K * H;
    float *c = p; p += (size_t)K * H;
    float *h_out = p; p += (size_t)K * H;
    float *c_out = p; p += (size_t)K * H;
    float *h_next = p; p += (size_t)K * H;
    float *c_next = p; p += (size_t)K * H;
    float *logp = p; p += (size_t)K * V;
    float *alpha = p; p += (size_t)K * L;
    float *beta = p;
    hyp *cur = hy, *nxt = hy + K;

    ac_decoder_initial_state(dec, img, h, c);
    cur[0].logprob = 0;
    prev[0] = AC_START;
    int live = 1, finished = 0;
    for (int t = 0; t <= T && live > 0 && finished < K; t++) {
        ac_decoder_step(dec, img, live, prev, h, c, h_out, c_out, logp, alpha, beta);
        int m = K - finished, n = 0;
        for (int k = 0; k < live; k++) {
            const float *lk = logp + (size_t)k * V;
            double base = cur[k].logprob;
            if (t == T) { /* only <end> may follow max_len words */
                top_insert(top, &n, m, (cand){base + lk[AC_END], k, AC_END});
                continue;
            }
            for (int w = AC_END; w < V; w++) {
                if (w == AC_UNK && !o.allow_unk) continue;
                double lp = base + lk[w];
                if (isnan(lp)) continue; /* never rank a NaN */
                top_insert(top, &n, m, (cand){lp, k, w});
            }
        }
        int nlive = 0;
        for (int j = 0; j < n; j++) {
            const cand *cd = &top[j];
            const hyp *par = &cur[cd->k];
            if (cd->w == AC_END) {
                finished++;
                ended *f = keep_finished(rank, &n_fin, n_keep, fin, norm_score(cd->lp, t, o.len_alpha));
                if (f) {
                    f->n = t, f->lp = cd->lp;
                    memcpy(f->words, par->words, (size_t)t * sizeof *f->words);
                    memcpy(f->alpha, par->alpha, (size_t)t * L * sizeof *f->alpha);
                    memcpy(f->alpha + (size_t)t * L, alpha + (size_t)cd->k * L, (size_t)L * sizeof *f->alpha);
                    memcpy(f->beta, par->beta, (size_t)t * sizeof *f->beta);
                    f->beta[t] = beta[cd->k];
                }
                continue;
            }
            hyp *ch = &nxt[nlive];
            memcpy(ch->words, par->words, (size_t)t * sizeof *ch->words);
            ch->words[t] = cd->w;
            memcpy(ch->alpha, par->alpha, (size_t)t * L * sizeof *ch->alpha);
            memcpy(ch->alpha + (size_t)t * L, alpha + (size_t)cd->k * L, (size_t)L * sizeof *ch->alpha);
            memcpy(ch->beta, par->beta, (size_t)t * sizeof *ch->beta);
            ch->beta[t] = beta[cd->k];
            ch->logprob = cd->lp;
            memcpy(h_next + (size_t)nlive * H, h_out + (size_t)cd->k * H, (size_t)H * sizeof *h);
            memcpy(c_next + (size_t)nlive * H, c_out + (size_t)cd->k * H, (size_t)H * sizeof *c);
            prev[nlive] = cd->w;
            nlive++;
        }
        hyp *ts = cur; cur = nxt; nxt = ts;
        float *tf = h; h = h_next; h_next = tf;
        tf = c; c = c_next; c_next = tf;
        live = nlive;
    }
    if (!n_fin) {
        ac_errf(err, "beam search: no caption finished (the decoder produced no finite probabilities)");
        goto done;
    }
    if (n_fin > 1 && !(out->alt = calloc((size_t)n_fin - 1, sizeof *out->alt))) {
        ac_errf(err, "beam search: out of memory");
        goto done;
    }
    for (int i = 0; i < n_fin; i++) {
        if (copy_finished(rank[i], L, i ? &out->alt[i - 1] : out)) {
            ac_caption_free(out);
            ac_errf(err, "beam search: out of memory");
            goto done;
        }
        if (i) out->n_alt++;
    }
    rc = 0;
done:
    ac_dec_image_free(img);
    free(hy), free(top), free(prev), free(fbuf), free(ibuf), free(fin), free(rank), free(fin_words), free(fin_hist);
    return rc;
}

/* ---- many photos of a feature cache ---- */

#define MAX_THREADS 16

typedef struct decode_job {
    const ac_decoder *dec;
    const ac_vocab *vocab;
    const ac_feature_cache *fc;
    const int *rows;
    int n, t, T, rc;
    const ac_beam_opts *o;
    char **texts;
    ac_err err;
} decode_job;

static void *decode_run(void *arg) {
    decode_job *j = arg;
    const size_t row = (size_t)j->fc->grid_h * j->fc->grid_w * j->fc->dim;
    float *scratch = j->fc->data ? NULL : malloc(sizeof(float) * row);
    if (!j->fc->data && !scratch) j->rc = ac_errf(&j->err, "out of memory");
    for (int i = j->t; i < j->n && !j->rc; i += j->T) {
        ac_caption c;
        if (ac_beam_search(j->dec, ac_features_row(j->fc, j->rows[i], scratch), j->o, &c, &j->err)) {
            j->rc = -1;
            break;
        }
        j->texts[i] = ac_caption_text(&c, j->vocab);
        ac_caption_free(&c);
        if (!j->texts[i]) j->rc = ac_errf(&j->err, "out of memory");
    }
    free(scratch);
    return NULL;
}

int ac_decode_rows(const ac_decoder *dec, const ac_vocab *vocab, const ac_feature_cache *fc, const int *rows, int n,
                   const ac_beam_opts *o, int threads, char **texts, ac_err *err) {
    int T = threads > 0 ? threads : ac_default_threads();
    if (T > MAX_THREADS) T = MAX_THREADS;
    if (T > n) T = n > 0 ? n : 1;
    for (int i = 0; i < n; i++) texts[i] = NULL;
    decode_job jobs[MAX_THREADS];
    pthread_t th[MAX_THREADS];
    int started[MAX_THREADS] = {0};
    for (int t = 0; t < T; t++) jobs[t] = (decode_job){dec, vocab, fc, rows, n, t, T, 0, o, texts, {{0}, 0}};
    const int blas = openblas_get_num_threads(); /* BLAS must not be driven from several threads */
    if (T > 1 && blas != 1) openblas_set_num_threads(1);
    for (int t = 1; t < T; t++) started[t] = pthread_create(&th[t], NULL, decode_run, &jobs[t]) == 0;
    decode_run(&jobs[0]);
    for (int t = 1; t < T; t++) {
        if (started[t]) pthread_join(th[t], NULL);
        else decode_run(&jobs[t]);
    }
    if (T > 1 && blas != 1) openblas_set_num_threads(blas);
    for (int t = 0; t < T; t++)
        if (jobs[t].rc) {
            if (err) *err = jobs[t].err;
            for (int i = 0; i < n; i++) free(texts[i]), texts[i] = NULL;
            return -1;
        }
    return 0;
}

void ac_caption_free(ac_caption *c) {
    if (!c) return;
    for (int i = 0; i < c->n_alt; i++) ac_caption_free(&c->alt[i]);
    free(c->alt);
    for (int k = 0; c->labels && k < c->n; k++) free(c->labels[k]);
    free(c->labels);
    free(c->words), free(c->alpha), free(c->beta), free(c->tags);
    memset(c, 0, sizeof *c);
}

const char *ac_caption_word(const ac_caption *c, const ac_vocab *v, int k) {
    if (c->labels && c->labels[k]) return c->labels[k];
    const char *w = ac_vocab_word(v, c->words[k]);
    return w ? w : "<unk>";
}

char *ac_caption_text(const ac_caption *c, const ac_vocab *v) {
    size_t n = 1;
    for (int i = 0; i < c->n; i++) n += strlen(ac_caption_word(c, v, i)) + 1;
    char *s = malloc(n), *q = s;
    if (!s) return NULL;
    for (int i = 0; i < c->n; i++) {
        const char *w = ac_caption_word(c, v, i);
        if (i) *q++ = ' ';
        size_t l = strlen(w);
        memcpy(q, w, l);
        q += l;
    }
    *q = 0;
    return s;
}
