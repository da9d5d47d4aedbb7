/* Beam search against independent searches written here over ac_decoder_step: exhaustive search
 * on a tiny vocabulary, a hand-written greedy loop, and teacher forcing of the returned caption
 * (its log-probability, each word's, and its attention must be the decoder's for exactly those words). */
#include <math.h>

#include "attncap/beam.h"
#include "attncap/decode_rows.h"
#include "attncap/vocab.h"
#include "test.h"

static unsigned long long rng = 88172645463325252ULL;
static float frand(void) { /* xorshift, [-1, 1) */
    rng ^= rng << 13, rng ^= rng >> 7, rng ^= rng << 17;
    return (float)((rng >> 11) * (1.0 / 9007199254740992.0)) * 2 - 1;
}

static const char *vocab_json(int V) {
    static char buf[4096];
    int n = snprintf(buf, sizeof buf, "[\"<pad>\",\"<start>\",\"<end>\",\"<unk>\"");
    for (int i = 4; i < V; i++) n += snprintf(buf + n, sizeof buf - n, ",\"w%d\"", i);
    snprintf(buf + n, sizeof buf - n, "]");
    return buf;
}

/* A random decoder with sharpened output (so hypotheses really differ) and random annotations. */
static int make(ac_decoder *dec, float **ann, int V, int L, unsigned long long seed) {
    ac_decoder_config cfg = {.vocab = V, .embed = 8, .hidden = 16, .att = 12, .dim = 10, .n_ann = L,
                             .grid_h = 1, .grid_w = L};
    ac_err err;
    if (ac_decoder_init(dec, &cfg, seed, &err)) {
        printf("# %s\n", err.msg);
        return -1;
    }
    for (int i = 0; i < cfg.embed * V; i++) dec->out_lo[i] *= 8;
    for (int i = 0; i < cfg.dim * cfg.att; i++) dec->att_wa[i] *= 4;
    *ann = malloc((size_t)L * cfg.dim * sizeof **ann);
    for (int i = 0; i < L * cfg.dim; i++) (*ann)[i] = frand() + 0.5f;
    return 0;
}

/* Teacher-forced log-probability of words + <end>; fills alpha [(n+1), L], beta [n+1] and each
 * token's log-probability wlp [n+1] (each may be NULL). */
static double forced(const ac_decoder *dec, const float *ann, const int *words, int n, float *alpha,
                     float *beta, float *wlp) {
    int H = dec->cfg.hidden, V = dec->cfg.vocab, L = dec->cfg.n_ann;
    ac_dec_image *img = ac_decoder_prepare(dec, ann);
    float *h = malloc(4 * H * sizeof *h), *c = h + H, *h2 = c + H, *c2 = h2 + H;
    float *lp = malloc(V * sizeof *lp), a[256], b;
    float *scr = malloc(sizeof(float) * ac_decoder_step_scratch(&dec->cfg, 1));
    ac_decoder_initial_state(dec, img, h, c);
    double sum = 0;
    int prev = AC_START;
    for (int t = 0; t <= n; t++) {
        ac_decoder_step(dec, img, 1, &prev, h, c, h2, c2, lp, a, &b, scr);
        int w = t < n ? words[t] : AC_END;
        sum += lp[w];
        if (wlp) wlp[t] = lp[w];
        if (alpha) memcpy(alpha + (size_t)t * L, a, L * sizeof *a);
        if (beta) beta[t] = b;
        memcpy(h, h2, H * sizeof *h), memcpy(c, c2, H * sizeof *c);
        prev = w;
    }
    free(h), free(lp), free(scr);
    ac_dec_image_free(img);
    return sum;
}

/* Exhaustive search: every sequence of up to T allowed words, then <end>. */
typedef struct {
    const ac_decoder *dec;
    const float *ann;
    int T, allow_unk;
    float len_alpha;
    int seq[16], best[16], best_n;
    double best_score, best_lp;
    int count;
} exh;

static void exh_rec(exh *e, int n) {
    double lp = forced(e->dec, e->ann, e->seq, n, NULL, NULL, NULL);
    double s = e->len_alpha == 0 ? lp : lp / pow(n + 1, e->len_alpha);
    e->count++;
    if (e->best_n < 0 || s > e->best_score)
        e->best_score = s, e->best_lp = lp, e->best_n = n, memcpy(e->best, e->seq, n * sizeof(int));
    if (n == e->T) return;
    for (int w = AC_UNK; w < e->dec->cfg.vocab; w++) {
        if (w == AC_UNK && !e->allow_unk) continue;
        e->seq[n] = w;
        exh_rec(e, n + 1);
    }
}

static void check_exhaustive(int V, int T, float len_alpha, unsigned long long seed, int *failed) {
    ac_decoder dec;
    float *ann;
    if (make(&dec, &ann, V, 5, seed)) { *failed = 1; return; }
    exh e = {.dec = &dec, .ann = ann, .T = T, .len_alpha = len_alpha, .best_n = -1};
    exh_rec(&e, 0);
    ac_beam_opts o = ac_beam_defaults();
    o.beam = e.count; /* enough that nothing is ever pruned */
    o.max_len = T;
    o.len_alpha = len_alpha;
    ac_caption cap;
    ac_err err;
    if (ac_beam_search(&dec, ann, &o, &cap, &err)) { printf("# %s\n", err.msg); *failed = 1; goto out; }
    int same = cap.n == e.best_n && !memcmp(cap.words, e.best, cap.n * sizeof(int));
    if (!same || fabs(cap.logprob - e.best_lp) > 1e-4 || fabs(cap.score - e.best_score) > 1e-4) {
        printf("# V=%d T=%d len_alpha=%g: beam n=%d score %.6f, exhaustive n=%d score %.6f (%d sequences)\n", V, T,
               len_alpha, cap.n, cap.score, e.best_n, e.best_score, e.count);
        *failed = 1;
    }
    ac_caption_free(&cap);
out:
    free(ann);
    ac_decoder_free(&dec);
}

static void beam_equals_exhaustive(void) {
    int failed = 0;
    float alphas[] = {0.0f, 0.7f, 1.0f};
    for (int s = 0; s < 4; s++)
        for (int a = 0; a < 3; a++) {
            check_exhaustive(6, 3, alphas[a], 100 + s, &failed); /* 2 words: 15 sequences */
            check_exhaustive(7, 3, alphas[a], 200 + s, &failed); /* 3 words: 40 sequences */
        }
    check_exhaustive(6, 5, 1.0f, 7, &failed);
    CHECK(!failed);
}

/* The log-probabilities of the step after words[0..n) (teacher forcing, one row at a time). */
static void step_after(const ac_decoder *dec, const float *ann, const int *words, int n, float *lp) {
    const int H = dec->cfg.hidden, L = dec->cfg.n_ann;
    ac_dec_image *img = ac_decoder_prepare(dec, ann);
    float *h = malloc(4 * H * sizeof *h), *c = h + H, *h2 = c + H, *c2 = h2 + H, *a = malloc(L * sizeof *a), b;
    float *scr = malloc(sizeof(float) * ac_decoder_step_scratch(&dec->cfg, 1));
    ac_decoder_initial_state(dec, img, h, c);
    for (int t = 0, prev = AC_START; t <= n; t++) {
        ac_decoder_step(dec, img, 1, &prev, h, c, h2, c2, lp, a, &b, scr);
        if (t < n) memcpy(h, h2, H * sizeof *h), memcpy(c, c2, H * sizeof *c), prev = words[t];
    }
    free(h), free(a), free(scr);
    ac_dec_image_free(img);
}

/* A textbook beam search with the same rules (beam.c's header), written the slow way: every
 * candidate of every live hypothesis into one list, sorted, the first K - finished kept. */
typedef struct { double lp; int k, w; } ref_cand;
static int ref_cmp(const void *a, const void *b) {
    const ref_cand *x = a, *y = b;
    if (x->lp != y->lp) return x->lp > y->lp ? -1 : 1;
    return x->k != y->k ? x->k - y->k : x->w - y->w;
}
enum { REF_T = 8, REF_K = 8 };
typedef struct { int n, words[REF_T + 1]; double lp; } ref_hyp;

static ref_hyp ref_beam(const ac_decoder *dec, const float *ann, int K, int T, float len_alpha) {
    const int V = dec->cfg.vocab;
    ref_hyp live[REF_K] = {{0}}, next[REF_K], best = {.n = -1};
    double best_score = 0;
    int n_live = 1, finished = 0;
    float *lp = malloc(sizeof *lp * (size_t)V);
    ref_cand *cands = malloc(sizeof *cands * (size_t)REF_K * V);
    for (int t = 0; t <= T && n_live > 0 && finished < K; t++) {
        int n = 0;
        for (int k = 0; k < n_live; k++) {
            step_after(dec, ann, live[k].words, live[k].n, lp);
            for (int w = AC_END; w < V; w++)
                if (w != AC_UNK && (t < T || w == AC_END) && !isnan(live[k].lp + lp[w]))
                    cands[n++] = (ref_cand){live[k].lp + lp[w], k, w};
        }
        qsort(cands, (size_t)n, sizeof *cands, ref_cmp);
        int kept = 0;
        for (int j = 0; j < n && j < K - finished; j++) {
            const ref_hyp *par = &live[cands[j].k];
            if (cands[j].w == AC_END) {
                const double score = len_alpha == 0 ? cands[j].lp : cands[j].lp / pow(t + 1, len_alpha);
                if (best.n < 0 || score > best_score) best = *par, best.lp = cands[j].lp, best_score = score;
            } else {
                next[kept] = *par, next[kept].words[next[kept].n++] = cands[j].w, next[kept++].lp = cands[j].lp;
            }
        }
        for (int j = 0; j < n && j < K - finished; j++) finished += cands[j].w == AC_END;
        memcpy(live, next, sizeof *live * (size_t)kept), n_live = kept;
    }
    free(lp), free(cands);
    return best;
}

/* On vocabularies large enough that each state's list fills long before the last word (where the
 * search skips words under the list's worst), beams of 2 to 8 against the textbook search. */
static void beam_equals_textbook(void) {
    int checked = 0;
    for (int seed = 0; seed < 6; seed++)
        for (int K = 2; K <= REF_K; K *= 2) {
            ac_decoder dec;
            float *ann;
            CHECK(make(&dec, &ann, 300, 12, 500 + seed) == 0);
            for (int i = 0; i < dec.cfg.embed * dec.cfg.vocab; i++) dec.out_lo[i] *= 0.25f; /* close calls */
            const float len_alpha = seed % 2 ? 0.6f : 1.0f;
            const ref_hyp want = ref_beam(&dec, ann, K, REF_T, len_alpha);
            ac_beam_opts o = ac_beam_defaults();
            o.beam = K, o.max_len = REF_T, o.len_alpha = len_alpha;
            ac_caption cap;
            ac_err err;
            CHECKF(ac_beam_search(&dec, ann, &o, &cap, &err) == 0, "%s", err.msg);
            CHECKF(cap.n == want.n && !memcmp(cap.words, want.words, sizeof(int) * (size_t)want.n) &&
                       cap.logprob == want.lp,
                   "seed %d, beam %d: %d words (log p %.9g), the textbook search's %d (%.9g)", seed, K, cap.n,
                   cap.logprob, want.n, want.lp);
            checked += want.n > 1;
            ac_caption_free(&cap);
            free(ann);
            ac_decoder_free(&dec);
        }
    CHECKF(checked >= 10, "only %d captions of more than one word", checked);
}

/* Every sequence of up to T words with its score, for the n-best ranking. */
typedef struct {
    double score, lp;
    int n, seq[8];
} scored;
static int all_rec(const ac_decoder *dec, const float *ann, int T, float len_alpha, int *seq, int n, scored *out, int k) {
    double lp = forced(dec, ann, seq, n, NULL, NULL, NULL);
    out[k].lp = lp, out[k].score = len_alpha == 0 ? lp : lp / pow(n + 1, len_alpha), out[k].n = n;
    memcpy(out[k].seq, seq, n * sizeof *seq);
    k++;
    if (n == T) return k;
    for (int w = AC_UNK + 1; w < dec->cfg.vocab; w++) seq[n] = w, k = all_rec(dec, ann, T, len_alpha, seq, n + 1, out, k);
    return k;
}
static int by_score_desc(const void *a, const void *b) {
    const scored *x = a, *y = b;
    return (x->score < y->score) - (x->score > y->score);
}

/* nbest: with nothing pruned, the caption and its runners-up are the exhaustive ranking's top n, each
 * with the attention teacher forcing gives its words; with a small beam, at most beam captions, in
 * score order, all distinct. */
static void nbest_equals_exhaustive_ranking(void) {
    ac_decoder dec;
    float *ann;
    CHECK(make(&dec, &ann, 7, 5, 31) == 0);
    const int T = 3, L = dec.cfg.n_ann;
    scored *all = malloc(64 * sizeof *all);
    int seq[8];
    const int count = all_rec(&dec, ann, T, 0.7f, seq, 0, all, 0); /* 1 + 3 + 9 + 27 = 40 */
    qsort(all, count, sizeof *all, by_score_desc);
    ac_beam_opts o = ac_beam_defaults();
    o.beam = count, o.max_len = T, o.len_alpha = 0.7f, o.nbest = 6;
    ac_caption cap;
    ac_err err;
    CHECKF(ac_beam_search(&dec, ann, &o, &cap, &err) == 0, "%s", err.msg);
    CHECK(count == 40 && cap.n_alt == 5);
    float *alpha = malloc((T + 1) * L * sizeof *alpha), beta[8];
    for (int r = 0; r <= cap.n_alt && r < 6; r++) {
        const ac_caption *c = r ? &cap.alt[r - 1] : &cap;
        const scored *want = &all[r];
        double lp = forced(&dec, ann, c->words, c->n, alpha, beta, NULL);
        CHECKF(c->n == want->n && !memcmp(c->words, want->seq, c->n * sizeof(int)), "rank %d: %d words, want %d", r,
               c->n, want->n);
        CHECK_NEAR(c->score, want->score, 1e-4);
        CHECK_NEAR(c->logprob, lp, 1e-4);
        CHECK(!memcmp(c->alpha, alpha, (c->n + 1) * L * sizeof *alpha));
        CHECK(!memcmp(c->beta, beta, (c->n + 1) * sizeof *beta));
    }
    ac_caption_free(&cap);
    /* A beam of 3 finishes 3 captions: asking for 10 gives the caption and 2 runners-up; the caption
     * is the one a search without nbest returns. */
    ac_caption plain;
    o.beam = 3, o.nbest = 0;
    CHECK(ac_beam_search(&dec, ann, &o, &plain, &err) == 0);
    o.nbest = 10;
    CHECK(ac_beam_search(&dec, ann, &o, &cap, &err) == 0);
    CHECK(cap.n_alt == 2 && plain.n_alt == 0 && !plain.alt);
    CHECK(cap.n == plain.n && !memcmp(cap.words, plain.words, cap.n * sizeof(int)) && cap.score == plain.score);
    for (int r = 0; r < cap.n_alt; r++) {
        const ac_caption *a = &cap.alt[r], *before = r ? &cap.alt[r - 1] : &cap;
        CHECK(a->score <= before->score);
        CHECK(a->n != before->n || memcmp(a->words, before->words, a->n * sizeof(int)));
    }
    ac_caption_free(&cap);
    ac_caption_free(&plain);
    free(alpha), free(all), free(ann);
    ac_decoder_free(&dec);
}

/* K = 1 is argmax until <end>. */
static void greedy_equals_loop(void) {
    for (int s = 0; s < 5; s++) {
        ac_decoder dec;
        float *ann;
        int V = 40, L = 12, T = 15;
        CHECK(make(&dec, &ann, V, L, 300 + s) == 0);
        int H = dec.cfg.hidden;
        ac_dec_image *img = ac_decoder_prepare(&dec, ann);
        float h[64], c[64], h2[64], c2[64], lp[64], a[64], b;
        float *scr = malloc(sizeof(float) * ac_decoder_step_scratch(&dec.cfg, 1));
        ac_decoder_initial_state(&dec, img, h, c);
        int words[32], n = 0, prev = AC_START;
        double sum = 0;
        for (int t = 0; t <= T; t++) {
            ac_decoder_step(&dec, img, 1, &prev, h, c, h2, c2, lp, a, &b, scr);
            int best = AC_END;
            if (t < T)
                for (int w = AC_END; w < V; w++)
                    if (w != AC_UNK && lp[w] > lp[best]) best = w;
            sum += lp[best];
            if (best == AC_END) break;
            words[n++] = best;
            memcpy(h, h2, sizeof h), memcpy(c, c2, sizeof c);
            prev = best;
        }
        (void)H;
        free(scr);
        ac_dec_image_free(img);
        ac_beam_opts o = ac_beam_defaults();
        o.beam = 1, o.max_len = T;
        ac_caption cap;
        ac_err err;
        CHECKF(ac_beam_search(&dec, ann, &o, &cap, &err) == 0, "%s", err.msg);
        CHECKF(cap.n == n && !memcmp(cap.words, words, n * sizeof(int)), "greedy: %d words vs loop %d", cap.n, n);
        CHECK_NEAR(cap.logprob, sum, 1e-4);
        ac_caption_free(&cap);
        free(ann);
        ac_decoder_free(&dec);
    }
}

/* The returned attention is the decoder's for the returned words (teacher forcing). */
static void attention_belongs_to_caption(void) {
    int not_greedy = 0; /* cases whose caption is not the greedy one: parents other than row 0 */
    for (int seed = 0; seed < 12; seed++) {
        ac_decoder dec;
        float *ann;
        int V = 30, L = 9;
        CHECK(make(&dec, &ann, V, L, 77 + seed) == 0);
        ac_caption greedy = {0};
        for (int K = 1; K <= 6; K++) {
            ac_beam_opts o = ac_beam_defaults();
            o.beam = K, o.max_len = 12, o.len_alpha = 0.7f;
            ac_caption cap;
            ac_err err;
            CHECKF(ac_beam_search(&dec, ann, &o, &cap, &err) == 0, "%s", err.msg);
            float alpha[13 * 9], beta[13], wlp[13];
            double lp = forced(&dec, ann, cap.words, cap.n, alpha, beta, wlp);
            CHECK_NEAR(cap.logprob, lp, 1e-4);
            /* each word's log-probability, from the search and from ac_caption_forced */
            ac_caption tf;
            CHECKF(ac_caption_forced(&dec, ann, cap.words, cap.n, &tf, &err) == 0, "%s", err.msg);
            CHECK(cap.word_logp && tf.word_logp);
            for (int t = 0; cap.word_logp && tf.word_logp && t <= cap.n; t++) {
                CHECK_NEAR(cap.word_logp[t], wlp[t], 1e-4);
                CHECK_NEAR(tf.word_logp[t], wlp[t], 1e-5);
            }
            ac_caption_free(&tf);
            CHECK_NEAR(cap.score, lp / pow(cap.n + 1, 0.7), 1e-4);
            for (int i = 0; i < (cap.n + 1) * L; i++) CHECK_NEAR(cap.alpha[i], alpha[i], 1e-5);
            for (int i = 0; i <= cap.n; i++) CHECK_NEAR(cap.beta[i], beta[i], 1e-5);
            for (int t = 0; t <= cap.n; t++) {
                double s = 0;
                for (int i = 0; i < L; i++) s += cap.alpha[t * L + i];
                CHECK_NEAR(s, 1.0, 1e-4);
            }
            if (K == 1) greedy = cap;
            else {
                not_greedy += cap.n != greedy.n || memcmp(cap.words, greedy.words, cap.n * sizeof(int));
                ac_caption_free(&cap);
            }
        }
        ac_caption_free(&greedy);
        free(ann);
        ac_decoder_free(&dec);
    }
    CHECKF(not_greedy > 5, "only %d beam captions differ from greedy: the test does not exercise reordering", not_greedy);
}

static void unk_suppressed_unless_allowed(void) {
    ac_decoder dec;
    float *ann;
    int V = 12;
    CHECK(make(&dec, &ann, V, 4, 9) == 0);
    dec.out_bo[AC_UNK] += 100; /* the decoder wants <unk> above everything */
    ac_beam_opts o = ac_beam_defaults();
    o.max_len = 6;
    ac_caption cap;
    ac_err err;
    CHECKF(ac_beam_search(&dec, ann, &o, &cap, &err) == 0, "%s", err.msg);
    for (int i = 0; i < cap.n; i++) CHECK(cap.words[i] != AC_UNK && cap.words[i] > AC_END);
    ac_caption_free(&cap);
    o.allow_unk = 1;
    CHECKF(ac_beam_search(&dec, ann, &o, &cap, &err) == 0, "%s", err.msg);
    CHECK(cap.n == 6); /* <unk> beats <end> until max_len */
    for (int i = 0; i < cap.n; i++) CHECK(cap.words[i] == AC_UNK);
    ac_caption_free(&cap);
    free(ann);
    ac_decoder_free(&dec);
}

static void max_len_respected(void) {
    ac_decoder dec;
    float *ann;
    CHECK(make(&dec, &ann, 10, 4, 11) == 0);
    dec.out_bo[AC_END] -= 100; /* never wants to stop */
    for (int K = 1; K <= 4; K++) {
        ac_beam_opts o = ac_beam_defaults();
        o.beam = K, o.max_len = 7;
        ac_caption cap;
        ac_err err;
        CHECKF(ac_beam_search(&dec, ann, &o, &cap, &err) == 0, "%s", err.msg);
        CHECK(cap.n == 7);
        CHECK(cap.logprob < -90); /* the forced <end> is counted */
        ac_caption_free(&cap);
    }
    ac_beam_opts bad = ac_beam_defaults();
    bad.beam = 0;
    ac_caption cap;
    ac_err err;
    CHECK(ac_beam_search(&dec, ann, &bad, &cap, &err) == -1 && strstr(err.msg, "beam"));
    free(ann);
    ac_decoder_free(&dec);
}

/* Same caption, bit for bit, for any number of the decoder's helper threads (its products, attention
 * scores, z and softmax rows split over them: decoder.c), with one attention head and with four whose
 * 24 channels each straddle the 16-column chunks of z; and for OpenBLAS's thread count. */
static void threads_identical(void) {
    for (int heads = 1; heads <= 4; heads += 3) {
        ac_decoder_config cfg = {.vocab = 2000, .embed = 64, .hidden = 128, .att = 64, .dim = 96, .n_ann = 196,
                                 .grid_h = 14, .grid_w = 14, .heads = heads};
        if (heads > 1) cfg.attention = AC_ATTENTION_SCALED_DOT;
        ac_decoder dec;
        ac_err err;
        CHECKF(ac_decoder_init(&dec, &cfg, 5, &err) == 0, "%s", err.msg);
        for (int i = 0; i < cfg.embed * cfg.vocab; i++) dec.out_lo[i] *= 4;
        float *ann = malloc((size_t)cfg.n_ann * cfg.dim * sizeof *ann);
        for (int i = 0; i < cfg.n_ann * cfg.dim; i++) ann[i] = frand() + 0.3f;
        ac_caption cap[4];
        ac_beam_opts o = ac_beam_defaults();
        o.beam = 3, o.max_len = 16;
        for (int r = 0; r < 4; r++) {
            ac_set_threads(r == 3 ? 2 : 1);
            CHECK(ac_decoder_set_threads(&dec, r < 3 ? r + 1 : 1) == 0);
            CHECKF(ac_beam_search(&dec, ann, &o, &cap[r], &err) == 0, "%s", err.msg);
        }
        ac_set_threads(ac_default_threads());
        for (int r = 1; r < 4; r++) {
            CHECKF(cap[0].n == cap[r].n && !memcmp(cap[0].words, cap[r].words, cap[0].n * sizeof(int)),
                   "heads %d, run %d: other words", heads, r);
            CHECKF(!memcmp(cap[0].alpha, cap[r].alpha, (size_t)(cap[0].n + 1) * cfg.n_ann * sizeof(float)),
                   "heads %d, run %d: other attention", heads, r);
            CHECKF(cap[0].logprob == cap[r].logprob, "heads %d, run %d: log p %.9g vs %.9g", heads, r,
                   cap[0].logprob, cap[r].logprob);
        }
        for (int r = 0; r < 4; r++) ac_caption_free(&cap[r]);
        free(ann);
        ac_decoder_free(&dec);
    }
}

static void caption_text(void) {
    ac_vocab *v;
    ac_err err;
    CHECKF(ac_vocab_from_json(vocab_json(8), &v, &err) == 0, "%s", err.msg);
    int words[] = {4, 7, 5};
    ac_caption c = {.n = 3, .words = words};
    char *s = ac_caption_text(&c, v);
    CHECK(s && !strcmp(s, "w4 w7 w5"));
    free(s);
    c.n = 0;
    s = ac_caption_text(&c, v);
    CHECK(s && !strcmp(s, ""));
    free(s);
    ac_vocab_free(v);
}

/* A regions model decoded from a feature cache (training's validation, tune) sees each photo's
 * regions as the captioner gives them: the caption of row r equals the search over its grid followed
 * by its regions' vectors (regions.h's formula written out here), with their categories; and the
 * regions change some caption (a copy model with an open gate copies their words). */
static void decode_rows_sees_regions(void) {
    enum { V = 9, GH = 2, GW = 2, R = 2, DIM = 10, ROWS = 4 };
    ac_decoder_config cfg = {.vocab = V, .embed = 8, .hidden = 16, .att = 12, .dim = DIM, .n_ann = GH * GW + R,
                             .grid_h = GH, .grid_w = GW, .regions = R, .region_scale = 6, .copy = 1};
    ac_decoder dec;
    ac_err err;
    ac_vocab *v = NULL;
    CHECKF(ac_decoder_init(&dec, &cfg, 7, &err) == 0, "%s", err.msg);
    CHECKF(ac_vocab_from_json(vocab_json(V), &v, &err) == 0, "%s", err.msg);
    for (int i = 0; i < cfg.embed * V; i++) dec.out_lo[i] *= 8;
    dec.copy_b[0] = 2.0f; /* a gate well open */
    const short word_cat[V] = {-1, -1, -1, -1, 0, 1, 1, 2, -1};
    CHECK(ac_decoder_set_copy_words(&dec, word_cat, &err) == 0);
    static float data[ROWS * GH * GW * DIM];
    for (int i = 0; i < ROWS * GH * GW * DIM; i++) data[i] = frand() + 0.5f;
    ac_feature_cache fc = {.n = ROWS, .grid_h = GH, .grid_w = GW, .dim = DIM, .data = data};
    ac_region reg[ROWS * R] = {{0, 0, 0.5f, 1, 0.9f, 2}, {0.5f, 0, 1, 0.5f, 0.6f, 0}, {0.2f, 0.2f, 0.8f, 0.8f, 1, 1},
                               {0, 0, 0, 0, 0, 0}, {0, 0, 0, 0, 0, 0}, {0, 0, 0, 0, 0, 0}, {0, 0.5f, 1, 1, 0.8f, 2}, {0, 0, 1, 1, 0.3f, 1}};
    unsigned char nreg[ROWS] = {2, 1, 0, 2};
    const ac_rows_regions rr = {reg, nreg, R};
    const int rows[ROWS] = {3, 0, 2, 1};
    char *with[ROWS], *without[ROWS];
    ac_beam_opts o = ac_beam_defaults();
    o.max_len = 6;
    CHECKF(ac_decode_rows(&dec, v, &fc, rows, ROWS, &rr, &o, 2, with, &err) == 0, "%s", err.msg);
    CHECKF(ac_decode_rows(&dec, v, &fc, rows, ROWS, NULL, &o, 2, without, &err) == 0, "%s", err.msg);
    int differ = 0;
    for (int i = 0; i < ROWS; i++) {
        const int row = rows[i], n = nreg[row];
        float ann[(GH * GW + R) * DIM];
        memcpy(ann, data + (size_t)row * GH * GW * DIM, sizeof(float) * GH * GW * DIM);
        for (int k = 0; k < n; k++) { /* mean of the cells whose centres are in the box + score * scale * code */
            const ac_region *r = &reg[row * R + k];
            float code[DIM], *a = ann + (GH * GW + k) * DIM;
            int m = 0;
            ac_region_code(r->category, DIM, code);
            memset(a, 0, sizeof(float) * DIM);
            for (int c = 0; c < GH * GW; c++) {
                const float cy = (c / GW + 0.5f) / GH, cx = (c % GW + 0.5f) / GW;
                if (cy < r->y0 || cy > r->y1 || cx < r->x0 || cx > r->x1) continue;
                for (int d = 0; d < DIM; d++) a[d] += ann[c * DIM + d];
                m++;
            }
            for (int d = 0; d < DIM; d++) a[d] = a[d] / (float)m + r->score * cfg.region_scale * code[d];
        }
        ac_caption c;
        CHECKF(ac_beam_search_regions(&dec, ann, GH, GW, n, n ? &reg[row * R] : NULL, &o, &c, &err) == 0, "%s", err.msg);
        char *t = ac_caption_text(&c, v);
        CHECKF(t && !strcmp(t, with[i]), "row %d: decode_rows \"%s\", by hand \"%s\"", row, with[i], t ? t : "");
        differ += strcmp(with[i], without[i]) != 0;
        if (!n) CHECKF(!strcmp(with[i], without[i]), "row %d has no regions: \"%s\" vs \"%s\"", row, with[i], without[i]);
        free(t), ac_caption_free(&c), free(with[i]), free(without[i]);
    }
    CHECKF(differ > 0, "the regions changed no caption");
    ac_vocab_free(v);
    ac_decoder_free(&dec);
}

int main(void) {
    RUN(beam_equals_exhaustive);
    RUN(nbest_equals_exhaustive_ranking);
    RUN(greedy_equals_loop);
    RUN(beam_equals_textbook);
    RUN(attention_belongs_to_caption);
    RUN(unk_suppressed_unless_allowed);
    RUN(max_len_respected);
    RUN(threads_identical);
    RUN(caption_text);
    RUN(decode_rows_sees_regions);
    return TEST_EXIT();
}
