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
 * With constraints (beam.h) the same runs per state of the constraint FSM: a candidate's state
 * follows from its parent's met mask and its last words (ac_beam_fsm_next, constraints.c); each state
 * keeps its own best (K - finished in it) candidates, with the same order and ties; finished hypotheses
 * are ranked per met mask. Without constraints there is one state and this is exactly the search above.
 *
 * Each hypothesis owns its history (words, alpha, beta) and a candidate copies its parent's, so the
 * attention returned is the attention the decoder actually used for the returned words, forced
 * words included. All live hypotheses (of every state) go through one ac_decoder_step call per time
 * step. Also here: a given caption's log-probabilities and attention (teacher forcing, ac_caption_forced).
 * The caption object's helpers are caption.c's; many photos of a feature cache, decode_rows.c's. */
#include "attncap/beam.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>
#if defined(__AVX512F__) || defined(__AVX2__)
#include <immintrin.h>
#endif

#include "attncap/regions.h"
#include "beam_internal.h"
#include "alloc_internal.h"

ac_beam_opts ac_beam_defaults(void) {
    ac_beam_opts o = {.beam = 3, .max_len = 20, .len_alpha = 1.0f, .allow_unk = 0};
    return o;
}

typedef struct hyp {
    int *words;   /* [max_len] */
    float *kv;    /* [max_len + 1, P]: the decoder's history (ac_decoder_hist_size P; none for the LSTM) */
    float *alpha; /* [(max_len + 1), L] */
    float *beta;  /* [max_len + 1] */
    float *wlp;   /* [max_len + 1]: each word's log-probability given the words before */
    float *acc;   /* a copy model's: [max_len + 1, 1 + regions] each word's account (ac_caption.account) */
    double logprob;
    int mask;     /* the constraints its words meet */
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
    float *alpha, *beta, *wlp, *acc;
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

/* alpha [rows, L] -> its first gh * gw + nr entries of each row, in place: the photo's own cells and
 * regions (the padding's weights, exactly 0, are dropped). */
static void own_cells(float *alpha, int rows, int L, int gh, int gw, int nr) {
    const size_t n = (size_t)gh * gw + (size_t)nr;
    if (n != (size_t)L)
        for (int k = 1; k < rows; k++) memmove(alpha + k * n, alpha + (size_t)k * L, n * sizeof *alpha);
}

static int copy_finished(const ended *f, int L, int gh, int gw, int nr, ac_caption *c) {
    c->n = f->n, c->logprob = f->lp, c->score = f->score, c->grid_h = gh, c->grid_w = gw, c->n_regions = nr;
    c->words = ac_malloc(((size_t)f->n + 1) * sizeof *c->words);
    c->alpha = ac_malloc((size_t)(f->n + 1) * L * sizeof *c->alpha);
    c->beta = ac_malloc(((size_t)f->n + 1) * sizeof *c->beta);
    c->word_logp = ac_malloc(((size_t)f->n + 1) * sizeof *c->word_logp);
    if (!c->words || !c->alpha || !c->beta || !c->word_logp) return -1;
    memcpy(c->word_logp, f->wlp, ((size_t)f->n + 1) * sizeof *c->word_logp);
    memcpy(c->words, f->words, (size_t)f->n * sizeof *c->words);
    memcpy(c->alpha, f->alpha, (size_t)(f->n + 1) * L * sizeof *c->alpha);
    own_cells(c->alpha, f->n + 1, L, gh, gw, nr);
    memcpy(c->beta, f->beta, ((size_t)f->n + 1) * sizeof *c->beta);
    if (f->acc) {
        const size_t n = ((size_t)f->n + 1) * (1 + (size_t)nr);
        if (!(c->account = ac_malloc(n * sizeof *c->account))) return -1;
        memcpy(c->account, f->acc, n * sizeof *c->account);
    }
    return 0;
}

static double norm_score(double lp, int n_words, float len_alpha) {
    return len_alpha == 0.0f ? lp : lp / pow((double)(n_words + 1), (double)len_alpha);
}

static int popcount(int x) {
    int n = 0;
    for (; x; x &= x - 1) n++;
    return n;
}

/* One photo's search, advanced one time step at a time so that the searches of several photos can
 * share each decoder step (ac_beam_search_photos). */
typedef struct search {
    ac_beam_opts o;
    ac_beam_fsm f;
    int K, T, V, L, S, M, accept, R, n_keep;
    size_t SZ, P;                         /* the decoder's state and history sizes */
    int gh, gw; /* the photo's own grid */
    int nr;     /* and its regions (regions.h) */
    size_t AW;  /* a copy model's account per word, 1 + nr floats (0: none kept) */
    const ac_decoder *dec;
    const ac_dec_image *img;
    hyp *hy, *cur, *nxt;
    cand *top;                            /* [S][K]: each state's best */
    int *prev, *n_top, *cap, *finished;   /* per state: best so far, room left this step, finished */
    float *fbuf, *st, *st_next;           /* live hypotheses' states (R rows of SZ each) */
    int *ibuf;
    unsigned char *said; /* [V] with o.no_repeat: the no-repeat words of the hypothesis being expanded */
    /* Per met mask, the best n_keep finished hypotheses so far, best first: rank[m * n_keep + i]
     * points into fin. */
    ended *fin, **rank;
    int *n_fin, *fin_words;
    float *fin_hist;
    int live, t;
} search;

static void search_close(search *s) {
    free(s->hy), free(s->top), free(s->prev), free(s->n_top), free(s->fbuf), free(s->ibuf), free(s->fin);
    free(s->rank), free(s->n_fin), free(s->fin_words), free(s->fin_hist), free(s->f.in_phrase), free(s->said);
    memset(s, 0, sizeof *s);
}

static int search_open(search *s, const ac_decoder *dec, const ac_dec_image *img, const ac_beam_opts *opts,
                       ac_err *err) {
    memset(s, 0, sizeof *s);
    ac_beam_opts o = opts ? *opts : ac_beam_defaults();
    const int K = o.beam, T = o.max_len, V = dec->cfg.vocab, L = dec->cfg.n_ann;
    const size_t SZ = ac_decoder_state_size(&dec->cfg), P = ac_decoder_hist_size(&dec->cfg);
    if (K < 1 || K > 4096) return ac_errf(err, "beam search: beam size %d out of range 1..4096", K);
    if (T < 1 || T > 1000) return ac_errf(err, "beam search: max length %d out of range 1..1000", T);
    if (V <= AC_UNK) return ac_errf(err, "beam search: vocabulary of %d words has no real words", V);
    if (!isfinite(o.len_alpha) || o.len_alpha < 0)
        return ac_errf(err, "beam search: length-normalisation exponent %g must be >= 0", o.len_alpha);
    if (ac_beam_check_constraints(&o, V, err)) return -1;
    if (ac_beam_fsm_init(&s->f, &o, V)) return ac_errf(err, "beam search: out of memory");
    const int S = s->f.n_states, M = 1 << s->f.C, R = S * K; /* rows: live hypotheses, at most K per state */
    s->o = o, s->K = K, s->T = T, s->V = V, s->L = L, s->S = S, s->M = M, s->R = R, s->SZ = SZ, s->P = P;
    ac_dec_image_grid(img, &s->gh, &s->gw);
    s->nr = ac_dec_image_regions(img);
    s->AW = ac_search_keeps_account(dec) ? 1 + (size_t)s->nr : 0;
    s->dec = dec, s->img = img;
    s->accept = (M - 1) * s->f.depths;
    if (R > 4096) {
        search_close(s);
        return ac_errf(err, "beam search: beam %d x %d constraint states is over 4096 hypotheses", K, S);
    }
    s->hy = ac_calloc((size_t)2 * R, sizeof *s->hy);
    s->top = ac_malloc((size_t)R * sizeof *s->top);
    s->prev = ac_malloc((size_t)R * sizeof *s->prev), s->n_top = ac_malloc((size_t)S * 3 * sizeof *s->n_top);
    /* a hypothesis' alpha, beta, word log-p and account */
    const size_t hist = (size_t)(T + 1) * L + 2 * ((size_t)T + 1) + ((size_t)T + 1) * s->AW;
    s->fbuf = ac_malloc(((size_t)2 * R * (hist + ((size_t)T + 1) * P) + (size_t)2 * R * SZ + 1) * sizeof *s->fbuf);
    s->ibuf = ac_malloc((size_t)2 * R * T * sizeof *s->ibuf);
    const int n_keep = o.nbest > 1 ? (o.nbest < K ? o.nbest : K) : 1, n_slots = M * n_keep;
    s->n_keep = n_keep;
    s->fin = ac_calloc((size_t)n_slots, sizeof *s->fin), s->rank = ac_calloc((size_t)n_slots, sizeof *s->rank);
    s->n_fin = ac_calloc((size_t)M, sizeof *s->n_fin);
    s->fin_words = ac_malloc((size_t)n_slots * T * sizeof *s->fin_words + 1);
    s->fin_hist = ac_malloc((size_t)n_slots * hist * sizeof *s->fin_hist);
    if (o.no_repeat) s->said = ac_calloc((size_t)V, 1);
    if (!s->hy || !s->top || !s->prev || !s->n_top || !s->fbuf || !s->ibuf || !s->fin || !s->rank || !s->n_fin ||
        !s->fin_words || !s->fin_hist || (o.no_repeat && !s->said)) {
        search_close(s);
        return ac_errf(err, "beam search: out of memory (beam %d, vocabulary %d)", K, V);
    }
    for (int i = 0; i < n_slots; i++) {
        s->fin[i].words = s->fin_words + (size_t)i * T;
        s->fin[i].alpha = s->fin_hist + (size_t)i * hist;
        s->fin[i].beta = s->fin[i].alpha + (size_t)(T + 1) * L;
        s->fin[i].wlp = s->fin[i].beta + T + 1;
        s->fin[i].acc = s->AW ? s->fin[i].wlp + T + 1 : NULL;
    }
    s->cap = s->n_top + S, s->finished = s->cap + S;
    memset(s->finished, 0, (size_t)S * sizeof *s->finished);
    float *p = s->fbuf;
    for (int i = 0; i < 2 * R; i++) {
        s->hy[i].alpha = p, p += (size_t)(T + 1) * L;
        s->hy[i].beta = p, p += T + 1;
        s->hy[i].wlp = p, p += T + 1;
        s->hy[i].acc = s->AW ? p : NULL, p += ((size_t)T + 1) * s->AW;
        s->hy[i].kv = p, p += ((size_t)T + 1) * P;
        s->hy[i].words = s->ibuf + (size_t)i * T;
    }
    s->st = p, p += (size_t)R * SZ;
    s->st_next = p;
    s->cur = s->hy, s->nxt = s->hy + R;
    ac_decoder_start(dec, img, s->st);
    s->cur[0].logprob = 0, s->cur[0].mask = 0;
    s->prev[0] = AC_START;
    s->live = 1;
    return 0;
}

static int search_running(const search *s) { return s->t <= s->T && s->live > 0 && s->finished[s->accept] < s->K; }

/* A child's account: its parent's t words', then word w's from the step's account row. */
static void account_step(const search *s, const float *parent, const float *row, int t, int w, float *acc) {
    memcpy(acc, parent, (size_t)t * s->AW * sizeof *acc);
    float *a = acc + (size_t)t * s->AW;
    a[0] = ac_decoder_account_word(s->dec, s->img, row, w, a + 1);
}

/* Word w after hypothesis k (cumulative log-probability base, the step's log-probabilities lk): a
 * candidate of its state if allowed and among the state's best so far. */
static inline void consider(search *s, int k, int w, double base, const float *lk, const unsigned char *said, int stay) {
    const ac_beam_opts *o = &s->o;
    if ((w == AC_UNK && !o->allow_unk) || (o->banned && o->banned[w]) || (said && said[w])) return;
    const double lp = base + lk[w];
    if (isnan(lp)) return; /* never rank a NaN */
    const ac_beam_fsm *f = &s->f;
    const int st = f->in_phrase && f->in_phrase[w] ? ac_beam_fsm_next(f, s->cur[k].words, s->t, s->cur[k].mask, w) : stay;
    cand *best = s->top + (size_t)st * s->K;
    /* most words rank below the state's worst kept candidate: skip them without the call */
    if (s->cap[st] && (s->n_top[st] < s->cap[st] || lp >= best[s->cap[st] - 1].lp))
        top_insert(best, &s->n_top[st], s->cap[st], (cand){lp, k, w});
}

/* Bit j set if base + lk[j] >= thr (in double, as consider computes it; a NaN never), j < 8. */
static unsigned at_least8(const float *lk, double base, double thr) {
#if defined(__AVX512F__)
    const __m512d lp = _mm512_add_pd(_mm512_set1_pd(base), _mm512_cvtps_pd(_mm256_loadu_ps(lk)));
    return _mm512_cmp_pd_mask(lp, _mm512_set1_pd(thr), _CMP_GE_OQ);
#elif defined(__AVX2__)
    const __m256d b = _mm256_set1_pd(base), th = _mm256_set1_pd(thr);
    const __m256d lo = _mm256_add_pd(b, _mm256_cvtps_pd(_mm_loadu_ps(lk))), hi = _mm256_add_pd(b, _mm256_cvtps_pd(_mm_loadu_ps(lk + 4)));
    return (unsigned)_mm256_movemask_pd(_mm256_cmp_pd(lo, th, _CMP_GE_OQ)) |
           (unsigned)_mm256_movemask_pd(_mm256_cmp_pd(hi, th, _CMP_GE_OQ)) << 4;
#else
    unsigned m = 0;
    for (int j = 0; j < 8; j++) m |= (unsigned)(base + lk[j] >= thr) << j;
    return m;
#endif
}

/* Time step t from the decoder's outputs for the live hypotheses (rec[k], ac_memo_row's layout: state,
 * history entry, logp, alpha, beta): the candidates of every state, the hypotheses that finish, the
 * next beams. */
static void search_advance(search *s, const float *const *rec) {
    const ac_beam_opts *o = &s->o;
    const ac_beam_fsm *f = &s->f;
    const int K = s->K, V = s->V, L = s->L, S = s->S, t = s->t, n_keep = s->n_keep;
    const size_t SZ = s->SZ, P = s->P, O = SZ + P; /* where logp starts in a record */
    int *n_top = s->n_top, *cap = s->cap;
    hyp *cur = s->cur, *nxt = s->nxt;
    for (int st = 0; st < S; st++) n_top[st] = 0, cap[st] = K - s->finished[st];
    for (int k = 0; k < s->live; k++) {
        const float *lk = rec[k] + O;
        const double base = cur[k].logprob;
        const int stay = cur[k].mask * f->depths; /* (mask, depth 0): <end> and words in no phrase */
        if (t == s->T) { /* only <end> may follow max_len words */
            if (cap[stay])
                top_insert(s->top + (size_t)stay * K, &n_top[stay], cap[stay], (cand){base + lk[AC_END], k, AC_END});
            continue;
        }
        unsigned char *said = s->said;
        if (said) { /* the words it said that may not come again: marked for the loop, cleared after it */
            const int *h = cur[k].words;
            for (int i = 0; i < t; i++) said[h[i]] = o->no_repeat[h[i]] == 1;
            /* and no three words twice: the word that followed its last two before ("white and white
             * and white" loops through words that may repeat) */
            for (int i = 0; i + 2 < t; i++)
                if (h[i] == h[t - 2] && h[i + 1] == h[t - 1]) said[h[i + 2]] = 1;
            /* and no word twice in a row (0.08 % of the training captions do, nearly all typos: "a a";
             * a copied "teddy teddy teddy bear" loops on a word that may otherwise repeat) */
            if (t > 0) said[h[t - 1]] = 1;
            /* and no word coordinated with itself ("a white and white dog": 0.03 % of the training
             * captions, mostly "neck and neck"; 1.3 % of the pointer model's dev captions) */
            if (t > 1 && o->no_repeat[h[t - 1]] == AC_REPEAT_CONJUNCTION) said[h[t - 2]] = 1;
            /* nor with itself after an article ("a toilet and a toilet": 15 of 80,899 COCO captions,
             * each a compound, "a bird and a bird feeder"; 18 of the pointer model's 408 COCO captions) */
            if (t > 2 && o->no_repeat[h[t - 1]] == AC_REPEAT_ARTICLE && o->no_repeat[h[t - 2]] == AC_REPEAT_CONJUNCTION)
                said[h[t - 3]] = 1;
        }
        int w = AC_END;
        if (!f->in_phrase && cap[stay]) { /* one state for every word: once its list is full, 8 words at a time */
            const cand *best = s->top + (size_t)stay * K;
            for (; w < V && n_top[stay] < cap[stay]; w++) consider(s, k, w, base, lk, said, stay);
            for (; w + 8 <= V; w += 8) /* a word under the list's worst now is under it when its turn comes */
                for (unsigned m = at_least8(lk + w, base, best[cap[stay] - 1].lp); m; m &= m - 1)
                    consider(s, k, w + __builtin_ctz(m), base, lk, said, stay);
        }
        for (; w < V; w++) consider(s, k, w, base, lk, said, stay);
        if (said)
            for (int i = 0; i < t; i++) said[cur[k].words[i]] = 0;
    }
    int nlive = 0;
    for (int st = 0; st < S; st++)
        for (int j = 0; j < n_top[st]; j++) {
            const cand *cd = &s->top[(size_t)st * K + j];
            const hyp *par = &cur[cd->k];
            const int mask = st / f->depths;
            if (cd->w == AC_END) {
                s->finished[st]++;
                ended *e = keep_finished(s->rank + (size_t)mask * n_keep, &s->n_fin[mask], n_keep,
                                         s->fin + (size_t)mask * n_keep, norm_score(cd->lp, t, o->len_alpha));
                if (e) {
                    e->n = t, e->lp = cd->lp;
                    memcpy(e->words, par->words, (size_t)t * sizeof *e->words);
                    memcpy(e->alpha, par->alpha, (size_t)t * L * sizeof *e->alpha);
                    memcpy(e->alpha + (size_t)t * L, rec[cd->k] + O + V, (size_t)L * sizeof *e->alpha);
                    memcpy(e->beta, par->beta, (size_t)t * sizeof *e->beta);
                    e->beta[t] = rec[cd->k][O + V + L];
                    memcpy(e->wlp, par->wlp, (size_t)t * sizeof *e->wlp);
                    e->wlp[t] = (float)(cd->lp - par->logprob);
                    if (e->acc) account_step(s, par->acc, rec[cd->k] + O + V + L + 1, t, AC_END, e->acc);
                }
                continue;
            }
            hyp *ch = &nxt[nlive];
            memcpy(ch->words, par->words, (size_t)t * sizeof *ch->words);
            ch->words[t] = cd->w;
            memcpy(ch->alpha, par->alpha, (size_t)t * L * sizeof *ch->alpha);
            memcpy(ch->alpha + (size_t)t * L, rec[cd->k] + O + V, (size_t)L * sizeof *ch->alpha);
            memcpy(ch->beta, par->beta, (size_t)t * sizeof *ch->beta);
            ch->beta[t] = rec[cd->k][O + V + L];
            if (P) { /* the parent's history and this step's entry */
                memcpy(ch->kv, par->kv, (size_t)t * P * sizeof *ch->kv);
                memcpy(ch->kv + (size_t)t * P, rec[cd->k] + SZ, P * sizeof *ch->kv);
            }
            memcpy(ch->wlp, par->wlp, (size_t)t * sizeof *ch->wlp);
            ch->wlp[t] = (float)(cd->lp - par->logprob);
            if (ch->acc) account_step(s, par->acc, rec[cd->k] + O + V + L + 1, t, cd->w, ch->acc);
            ch->logprob = cd->lp;
            ch->mask = mask;
            memcpy(s->st_next + (size_t)nlive * SZ, rec[cd->k], SZ * sizeof *s->st);
            s->prev[nlive] = cd->w;
            nlive++;
        }
    s->cur = nxt, s->nxt = cur;
    float *tf = s->st;
    s->st = s->st_next, s->st_next = tf;
    s->live = nlive;
    s->t++;
}

/* The caption: the accepting mask (it meets the most) if a caption finished there, else the fallback:
 * the mask meeting the most constraints, then with the best score. */
static int search_result(const search *s, ac_caption *out, ac_err *err) {
    int best = -1;
    for (int m = 0; m < s->M; m++) {
        if (!s->n_fin[m]) continue;
        const int more = best < 0 || popcount(m) > popcount(best);
        const int as_many_better = best >= 0 && popcount(m) == popcount(best) &&
                                   s->rank[(size_t)m * s->n_keep]->score > s->rank[(size_t)best * s->n_keep]->score;
        if (more || as_many_better) best = m;
    }
    if (best < 0) return ac_errf(err, "beam search: no caption finished (the decoder produced no finite probabilities)");
    ended **chosen = s->rank + (size_t)best * s->n_keep;
    if (s->n_fin[best] > 1 && !(out->alt = ac_calloc((size_t)s->n_fin[best] - 1, sizeof *out->alt)))
        return ac_errf(err, "beam search: out of memory");
    for (int i = 0; i < s->n_fin[best]; i++) {
        ac_caption *dst = i ? &out->alt[i - 1] : out;
        if (copy_finished(chosen[i], s->L, s->gh, s->gw, s->nr, dst)) {
            ac_caption_free(out);
            return ac_errf(err, "beam search: out of memory");
        }
        dst->met_mask = best;
        if (i) out->n_alt++;
    }
    return 0;
}

/* The engine's buffers for R live hypotheses at most: the decoder's inputs and outputs for those it
 * computes (compact, photo by photo), each live hypothesis's record (memo'd or computed) and the
 * records of the computed ones. */
typedef struct engine {
    const ac_dec_image **img;
    int *rows, *first;     /* [n]: computed rows of each photo stepped; each search's first live row */
    int *src, *own, *prev; /* [R]: each computed row's live row and search, and its previous word */
    const float **rec, **hist;
    float *st, *st_out, *hist_out, *logp, *alpha, *beta, *account, *rowbuf, *scratch;
    float *fbuf;
} engine;

static int engine_open(engine *e, const ac_decoder *dec, int n, int R, int T) {
    const int V = dec->cfg.vocab, L = dec->cfg.n_ann;
    const size_t SZ = ac_decoder_state_size(&dec->cfg), P = ac_decoder_hist_size(&dec->cfg);
    const size_t W = ac_memo_row_size(dec), nn = (size_t)(n > 0 ? n : 1), nr = (size_t)(R > 0 ? R : 1);
    e->img = ac_malloc(sizeof *e->img * nn), e->rec = ac_malloc(sizeof *e->rec * nr), e->hist = ac_malloc(sizeof *e->hist * nr);
    e->rows = ac_malloc(sizeof *e->rows * (2 * nn + 3 * nr));
    const size_t AR = ac_search_keeps_account(dec) ? AC_DECODER_ACCOUNT_ROW : 0;
    e->fbuf = ac_malloc(sizeof *e->fbuf *
                        (nr * (2 * SZ + P + V + L + 1 + AR + W) + ac_decoder_advance_scratch(&dec->cfg, R, T)));
    if (!e->img || !e->rec || !e->hist || !e->rows || !e->fbuf) return -1;
    e->first = e->rows + nn, e->src = e->first + nn, e->own = e->src + nr, e->prev = e->own + nr;
    e->st = e->fbuf, e->st_out = e->st + nr * SZ, e->hist_out = e->st_out + nr * SZ;
    e->logp = e->hist_out + nr * P, e->alpha = e->logp + nr * V, e->beta = e->alpha + nr * L;
    e->account = AR ? e->beta + nr : NULL;
    e->rowbuf = e->beta + nr + nr * AR, e->scratch = e->rowbuf + nr * W;
    return 0;
}

static void engine_close(engine *e) { free(e->img), free(e->rec), free(e->hist), free(e->rows), free(e->fbuf); }

/* One time step of every running search: the hypotheses a memo knows are looked up, the others go
 * through one decoder step together (and into their photo's memo). A step is at one position, and the
 * searches are: they all start together and each step advances every running one (a search at another
 * position would wait for its own step). Returns 0 when none is running. */
static int engine_step(engine *e, const ac_decoder *dec, int n, ac_beam_task *tasks, search *s) {
    const int V = dec->cfg.vocab, L = dec->cfg.n_ann;
    const size_t SZ = ac_decoder_state_size(&dec->cfg), P = ac_decoder_hist_size(&dec->cfg), W = ac_memo_row_size(dec);
    int np = 0, q = 0, pos = 0, t = -1;
    for (int i = 0; i < n; i++)
        if (!tasks[i].failed && search_running(&s[i]) && (t < 0 || s[i].t < t)) t = s[i].t;
    if (t < 0) return 0;
    for (int i = 0; i < n; i++) {
        e->first[i] = pos;
        if (tasks[i].failed || !search_running(&s[i]) || s[i].t != t) continue;
        int miss = 0;
        for (int k = 0; k < s[i].live; k++, pos++) {
            e->rec[pos] = tasks[i].memo ? ac_memo_find(tasks[i].memo, s[i].cur[k].words, s[i].t) : NULL;
            if (e->rec[pos]) continue;
            e->src[q] = pos, e->own[q] = i, e->prev[q] = s[i].prev[k], e->hist[q] = s[i].cur[k].kv;
            memcpy(e->st + (size_t)q * SZ, s[i].st + (size_t)k * SZ, sizeof *e->st * SZ);
            q++, miss++;
        }
        if (miss) e->img[np] = tasks[i].img, e->rows[np++] = miss;
    }
    if (q)
        ac_decoder_advance_account(dec, np, e->img, e->rows, t, e->prev, e->st, e->hist, e->st_out, e->hist_out,
                                   e->logp, e->alpha, e->beta, e->account, e->scratch);
    for (int j = 0; j < q; j++) { /* the record: [state | history entry | logp | alpha | beta | account] */
        const int i = e->own[j], k = e->src[j] - e->first[i];
        float *r = e->rowbuf + (size_t)e->src[j] * W;
        memcpy(r, e->st_out + (size_t)j * SZ, sizeof *r * SZ);
        memcpy(r + SZ, e->hist_out + (size_t)j * P, sizeof *r * P);
        memcpy(r + SZ + P, e->logp + (size_t)j * V, sizeof *r * V);
        memcpy(r + SZ + P + V, e->alpha + (size_t)j * L, sizeof *r * L);
        r[SZ + P + V + L] = e->beta[j];
        if (e->account) memcpy(r + SZ + P + V + L + 1, e->account + (size_t)j * AC_DECODER_ACCOUNT_ROW, sizeof *r * AC_DECODER_ACCOUNT_ROW);
        e->rec[e->src[j]] = r;
        if (tasks[i].memo) ac_memo_add(tasks[i].memo, s[i].cur[k].words, s[i].t, r); /* full: just not kept */
    }
    for (int i = 0; i < n; i++)
        if (!tasks[i].failed && search_running(&s[i]) && s[i].t == t) search_advance(&s[i], e->rec + e->first[i]);
    return 1;
}

int ac_beam_search_photos(const ac_decoder *dec, int n, ac_beam_task *tasks) {
    search *s = ac_calloc((size_t)(n > 0 ? n : 1), sizeof *s);
    int failed = 0, R = 0, T = 0;
    for (int i = 0; i < n; i++) {
        memset(&tasks[i].out, 0, sizeof tasks[i].out);
        tasks[i].failed = !s ? ac_errf(&tasks[i].err, "beam search: out of memory")
                             : search_open(&s[i], dec, tasks[i].img, &tasks[i].opts, &tasks[i].err);
        failed += tasks[i].failed != 0;
        if (!tasks[i].failed) R += s[i].R, T = s[i].T > T ? s[i].T : T;
    }
    engine e = {0};
    if (engine_open(&e, dec, n, R, T))
        for (int i = 0; i < n; i++)
            if (!tasks[i].failed) tasks[i].failed = ac_errf(&tasks[i].err, "beam search: out of memory"), failed++;
    while (engine_step(&e, dec, n, tasks, s)) {}
    for (int i = 0; i < n; i++) {
        if (!tasks[i].failed && search_result(&s[i], &tasks[i].out, &tasks[i].err)) tasks[i].failed = -1, failed++;
        if (s) search_close(&s[i]);
    }
    engine_close(&e);
    free(s);
    return failed ? -1 : 0;
}

int ac_beam_search(const ac_decoder *dec, const float *ann, const ac_beam_opts *opts, ac_caption *out,
                   ac_err *err) {
    return ac_beam_search_grid(dec, ann, dec->cfg.grid_h, dec->cfg.grid_w, opts, out, err);
}

int ac_beam_search_grid(const ac_decoder *dec, const float *ann, int grid_h, int grid_w, const ac_beam_opts *opts,
                        ac_caption *out, ac_err *err) {
    return ac_beam_search_regions(dec, ann, grid_h, grid_w, 0, NULL, opts, out, err);
}

int ac_beam_search_regions(const ac_decoder *dec, const float *ann, int grid_h, int grid_w, int n_regions,
                           const ac_region *regions, const ac_beam_opts *opts, ac_caption *out, ac_err *err) {
    memset(out, 0, sizeof *out);
    if (ac_decoder_check_grid(&dec->cfg, grid_h, grid_w, err)) return -1;
    ac_dec_image *img = ac_decoder_prepare_regions(dec, ann, grid_h, grid_w, n_regions);
    if (!img) return ac_errf(err, "beam search: out of memory preparing the photo");
    if (regions) ac_dec_image_set_regions(img, regions);
    ac_beam_task task = {.img = img, .opts = opts ? *opts : ac_beam_defaults()};
    int rc = ac_beam_search_photos(dec, 1, &task);
    ac_dec_image_free((ac_dec_image *)task.img);
    if (rc) {
        if (err) *err = task.err;
        return -1;
    }
    *out = task.out;
    return 0;
}

int ac_caption_forced(const ac_decoder *dec, const float *ann, const int *words, int n, ac_caption *out,
                      ac_err *err) {
    return ac_caption_forced_grid(dec, ann, dec->cfg.grid_h, dec->cfg.grid_w, words, n, out, err);
}

int ac_caption_forced_grid(const ac_decoder *dec, const float *ann, int grid_h, int grid_w, const int *words, int n,
                           ac_caption *out, ac_err *err) {
    return ac_caption_forced_regions(dec, ann, grid_h, grid_w, 0, NULL, words, n, out, err);
}

int ac_caption_forced_regions(const ac_decoder *dec, const float *ann, int grid_h, int grid_w, int n_regions,
                              const ac_region *regions, const int *words, int n, ac_caption *out, ac_err *err) {
    memset(out, 0, sizeof *out);
    const int L = dec->cfg.n_ann;
    if (ac_decoder_check_grid(&dec->cfg, grid_h, grid_w, err)) return -1;
    ac_dec_image *img = ac_decoder_prepare_regions(dec, ann, grid_h, grid_w, n_regions);
    if (!img) return ac_errf(err, "out of memory");
    if (regions) ac_dec_image_set_regions(img, regions);
    out->n = n, out->grid_h = grid_h, out->grid_w = grid_w, out->n_regions = n_regions;
    out->words = ac_malloc(((size_t)n + 1) * sizeof *out->words);
    out->alpha = ac_malloc(((size_t)n + 1) * L * sizeof *out->alpha);
    out->beta = ac_malloc(((size_t)n + 1) * sizeof *out->beta);
    out->word_logp = ac_malloc(((size_t)n + 1) * sizeof *out->word_logp);
    int rc = !out->words || !out->alpha || !out->beta || !out->word_logp ? ac_errf(err, "out of memory") : 0;
    if (!rc) {
        memcpy(out->words, words, (size_t)n * sizeof *out->words);
        rc = ac_decoder_attend_image(dec, img, out->words, n, out->alpha, out->beta, out->word_logp, &out->logprob, err);
    }
    if (!rc) own_cells(out->alpha, n + 1, L, grid_h, grid_w, n_regions);
    if (!rc && regions) rc = ac_caption_copy_account(out, dec, img, err); /* a copy model's account of the words */
    ac_dec_image_free(img);
    if (rc) {
        ac_caption_free(out);
        return -1;
    }
    out->score = out->logprob;
    return 0;
}
