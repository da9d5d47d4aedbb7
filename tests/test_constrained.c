/* Constrained beam search (beam.h) against independent checks written here: exhaustive search over
 * every sequence on a tiny vocabulary (the best that meets every constraint, the n-best ranking, the
 * fallback when none can), a plain containment test of the returned words, and teacher forcing
 * (ac_decoder_attend) of the returned caption for its log-probability and attention. */
#include <math.h>

#include "attncap/beam.h"
#include "test.h"

static unsigned long long rng = 88172645463325252ULL;
static float frand(void) { /* xorshift, [-1, 1) */
    rng ^= rng << 13, rng ^= rng >> 7, rng ^= rng << 17;
    return (float)((rng >> 11) * (1.0 / 9007199254740992.0)) * 2 - 1;
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

/* Up to 4 constraints of up to 4 alternatives, written as strings of word ids: "5|6 4" is
 * {w5, "w6 w4"}. */
typedef struct {
    int n;
    ac_constraint con[AC_MAX_CONSTRAINTS];
    ac_phrase alt[AC_MAX_CONSTRAINTS][4];
} cset;

static void parse(cset *cs, const char *const *spec, int n) {
    cset s;
    memset(&s, 0, sizeof s);
    s.n = n;
    for (int c = 0; c < n; c++) {
        const char *p = spec[c];
        int a = 0;
        for (;;) {
            ac_phrase *ph = &s.alt[c][a];
            char *end;
            while (ph->n < AC_MAX_PHRASE && (ph->words[ph->n] = (int)strtol(p, &end, 10), end != p)) ph->n++, p = end;
            a++;
            if (*p != '|') break;
            p++;
        }
        s.con[c] = (ac_constraint){a, cs->alt[c]}; /* the caller's copy */
    }
    *cs = s;
}

/* Independent of beam.c: does seq[0..n) contain the phrase as consecutive words? */
static int contains(const int *seq, int n, const ac_phrase *p) {
    for (int i = 0; i + p->n <= n; i++) {
        int k = 0;
        while (k < p->n && seq[i + k] == p->words[k]) k++;
        if (k == p->n) return 1;
    }
    return 0;
}
static int met(const cset *s, const int *seq, int n) {
    int mask = 0;
    for (int c = 0; c < s->n; c++)
        for (int a = 0; a < s->con[c].n_alt; a++)
            if (contains(seq, n, &s->con[c].alt[a])) mask |= 1 << c;
    return mask;
}
static int bits(int x) {
    int n = 0;
    for (; x; x &= x - 1) n++;
    return n;
}

/* Every sequence of up to T real words, scored by teacher forcing. */
typedef struct {
    double score, lp;
    int n, seq[8], mask;
} scored;
static int all_rec(const ac_decoder *dec, const float *ann, int T, float len_alpha, const cset *cs, int *seq, int n,
                   scored *out, int k) {
    float alpha[9 * 8];
    double lp;
    ac_err err;
    if (ac_decoder_attend(dec, ann, seq, n, alpha, NULL, &lp, &err)) abort();
    out[k] = (scored){len_alpha == 0 ? lp : lp / pow(n + 1, len_alpha), lp, n, {0}, met(cs, seq, n)};
    memcpy(out[k].seq, seq, n * sizeof *seq);
    k++;
    if (n == T) return k;
    for (int w = AC_UNK + 1; w < dec->cfg.vocab; w++)
        seq[n] = w, k = all_rec(dec, ann, T, len_alpha, cs, seq, n + 1, out, k);
    return k;
}
/* Best first: the most constraints met, then the score. */
static int by_met_then_score(const void *a, const void *b) {
    const scored *x = a, *y = b;
    if (bits(x->mask) != bits(y->mask)) return bits(y->mask) - bits(x->mask);
    return (x->score < y->score) - (x->score > y->score);
}

/* The caption (and alternatives) have the log-probability, attention and gates that teacher forcing
 * gives their words, bit for bit, and the met_mask their words meet. */
static int check_forced(const ac_decoder *dec, const float *ann, const cset *cs, const ac_caption *cap) {
    const int L = dec->cfg.n_ann;
    for (int r = 0; r <= cap->n_alt; r++) {
        const ac_caption *c = r ? &cap->alt[r - 1] : cap;
        float *alpha = malloc((size_t)(c->n + 1) * L * sizeof *alpha), *beta = malloc((c->n + 1) * sizeof *beta);
        double lp;
        ac_err err;
        int ok = ac_decoder_attend(dec, ann, c->words, c->n, alpha, beta, &lp, &err) == 0 &&
                 !memcmp(c->alpha, alpha, (size_t)(c->n + 1) * L * sizeof *alpha) &&
                 !memcmp(c->beta, beta, (c->n + 1) * sizeof *beta) && fabs(c->logprob - lp) < 1e-9 &&
                 c->met_mask == met(cs, c->words, c->n);
        free(alpha), free(beta);
        if (!ok) return 0;
    }
    return 1;
}

/* With a beam so large nothing is pruned, the caption is the exhaustive ranking's best among the
 * sequences meeting every constraint, and the n-best are the next ones; when no sequence of up to
 * max_len words meets them all, the best of those meeting the most. */
static void exhaustive_case(int V, int T, float len_alpha, unsigned long long seed, const char *const *spec, int n,
                            int *failed) {
    ac_decoder dec;
    float *ann;
    if (make(&dec, &ann, V, 5, seed)) { *failed = 1; return; }
    cset cs;
    parse(&cs, spec, n);
    scored *all = malloc(256 * sizeof *all);
    int seq[8];
    const int count = all_rec(&dec, ann, T, len_alpha, &cs, seq, 0, all, 0);
    qsort(all, count, sizeof *all, by_met_then_score);
    ac_beam_opts o = ac_beam_defaults();
    o.beam = count, o.max_len = T, o.len_alpha = len_alpha, o.nbest = 4;
    o.n_constraints = cs.n, o.constraints = cs.con;
    ac_caption cap;
    ac_err err;
    if (ac_beam_search(&dec, ann, &o, &cap, &err)) {
        printf("# %s\n", err.msg);
        *failed = 1;
        goto out;
    }
    int rank[4], n_rank = 0; /* the best 4 sequences meeting the same constraints as the best */
    for (int i = 0; i < count && n_rank < 4; i++)
        if (all[i].mask == all[0].mask) rank[n_rank++] = i;
    int ok = cap.n_alt == n_rank - 1 && check_forced(&dec, ann, &cs, &cap) && cap.met_mask == all[0].mask;
    for (int r = 0; ok && r <= cap.n_alt; r++) {
        const ac_caption *c = r ? &cap.alt[r - 1] : &cap;
        const scored *want = &all[rank[r]];
        ok = c->n == want->n && !memcmp(c->words, want->seq, c->n * sizeof(int)) && fabs(c->score - want->score) < 1e-9;
    }
    if (!ok) {
        printf("# V=%d T=%d alpha=%g seed=%llu %s...: beam %d words, %d alternatives, met %x, score %.6f; exhaustive "
               "%d words, met %x, score %.6f\n", V, T, len_alpha, seed, spec[0], cap.n, cap.n_alt, cap.met_mask,
               cap.score, all[0].n, all[0].mask, all[0].score);
        *failed = 1;
    }
    ac_caption_free(&cap);
out:
    free(all), free(ann);
    ac_decoder_free(&dec);
}

static void constrained_equals_exhaustive(void) {
    int failed = 0;
    const char *one[] = {"5"}, *either[] = {"5|6"}, *two[] = {"4", "6"}, *pair[] = {"5 4"}, *mixed[] = {"6|4 5", "5"};
    const char *triple[] = {"4 6 5"}, *overlap[] = {"4 5", "5 6"}, *four[] = {"4", "5", "6", "6 4"};
    const char *too_many[] = {"4", "5", "6"}; /* T = 2: at most two of them */
    const float alphas[] = {0.0f, 0.7f, 1.0f};
    for (int s = 0; s < 3; s++)
        for (int a = 0; a < 3; a++) {
            const float la = alphas[a];
            exhaustive_case(7, 3, la, 10 + s, one, 1, &failed);
            exhaustive_case(7, 3, la, 20 + s, either, 1, &failed);
            exhaustive_case(7, 3, la, 30 + s, two, 2, &failed);
            exhaustive_case(7, 3, la, 40 + s, pair, 1, &failed);
            exhaustive_case(8, 3, la, 50 + s, mixed, 2, &failed);
            exhaustive_case(7, 3, la, 60 + s, triple, 1, &failed);
            exhaustive_case(7, 3, la, 70 + s, overlap, 2, &failed);
            exhaustive_case(7, 4, la, 80 + s, four, 4, &failed);
            exhaustive_case(7, 2, la, 90 + s, too_many, 3, &failed);
            exhaustive_case(7, 2, la, 95 + s, four, 4, &failed);
        }
    CHECK(!failed);
}

/* A satisfiable constraint always appears, for beams 1..3: single words, disjunctions, two- and
 * three-word phrases, several constraints; on a larger vocabulary, words the unconstrained caption
 * does not use. Each caption's attention is teacher forcing's for its words. */
static void satisfiable_always_met(void) {
    for (int seed = 0; seed < 10; seed++) {
        ac_decoder dec;
        float *ann;
        const int V = 40, T = 12;
        CHECK(make(&dec, &ann, V, 6, 500 + seed) == 0);
        ac_beam_opts o = ac_beam_defaults();
        o.max_len = T, o.len_alpha = 0.7f;
        ac_caption free_cap;
        ac_err err;
        CHECKF(ac_beam_search(&dec, ann, &o, &free_cap, &err) == 0, "%s", err.msg);
        CHECK(free_cap.met_mask == 0);
        int unused[8], nu = 0; /* words the unconstrained caption does not say */
        for (int w = V - 1; w > AC_UNK && nu < 8; w--) {
            int used = 0;
            for (int k = 0; k < free_cap.n; k++) used |= free_cap.words[k] == w;
            if (!used) unused[nu++] = w;
        }
        CHECK(nu == 8);
        char sp[6][32];
        snprintf(sp[0], 32, "%d", unused[0]);
        snprintf(sp[1], 32, "%d|%d", unused[1], unused[2]);
        snprintf(sp[2], 32, "%d %d", unused[3], unused[4]);
        snprintf(sp[3], 32, "%d %d|%d", unused[5], unused[6], unused[7]);
        snprintf(sp[4], 32, "%d %d %d", unused[0], unused[1], unused[5]);
        snprintf(sp[5], 32, "%d %d", unused[6], unused[6]);
        const char *sets[][4] = {{sp[0]}, {sp[1]}, {sp[2]}, {sp[3]}, {sp[4]}, {sp[5]},
                                 {sp[0], sp[2]}, {sp[2], sp[3]}, {sp[4], sp[1]}, {sp[0], sp[1], sp[2], sp[3]}};
        const int nset[] = {1, 1, 1, 1, 1, 1, 2, 2, 2, 4};
        for (int i = 0; i < 10; i++) {
            cset cs;
            parse(&cs, sets[i], nset[i]);
            for (int K = 1; K <= 3; K++) {
                o.beam = K, o.n_constraints = cs.n, o.constraints = cs.con, o.nbest = K;
                ac_caption cap, again;
                CHECKF(ac_beam_search(&dec, ann, &o, &cap, &err) == 0, "%s", err.msg);
                CHECKF(met(&cs, cap.words, cap.n) == (1 << cs.n) - 1 && cap.met_mask == (1 << cs.n) - 1,
                       "seed %d set %d beam %d: met %x of %d constraints", seed, i, K, met(&cs, cap.words, cap.n), cs.n);
                CHECK(check_forced(&dec, ann, &cs, &cap));
                CHECK_NEAR(cap.score, cap.logprob / pow(cap.n + 1, (double)0.7f), 1e-12);
                CHECK(ac_caption_mean_logprob(&cap) == cap.logprob / (cap.n + 1));
                for (int r = 0; r < cap.n_alt; r++)
                    CHECK(cap.alt[r].met_mask == (1 << cs.n) - 1 && cap.alt[r].score <= (r ? cap.alt[r - 1].score : cap.score));
                /* deterministic */
                CHECK(ac_beam_search(&dec, ann, &o, &again, &err) == 0);
                CHECK(again.n == cap.n && !memcmp(again.words, cap.words, cap.n * sizeof(int)) &&
                      again.logprob == cap.logprob && again.n_alt == cap.n_alt);
                ac_caption_free(&cap), ac_caption_free(&again);
            }
        }
        ac_caption_free(&free_cap);
        free(ann);
        ac_decoder_free(&dec);
    }
}

/* The forced word's attention is where the model looked when it said it: the caption's attention
 * rows equal teacher forcing's, in particular the row of the forced word; and a hypothesis that
 * took the forced word from a parent other than the best keeps its own parent's history. */
static void forced_word_attention_is_teacher_forcing(void) {
    int checked = 0;
    for (int seed = 0; seed < 8; seed++) {
        ac_decoder dec;
        float *ann;
        const int V = 30, L = 9;
        CHECK(make(&dec, &ann, V, L, 900 + seed) == 0);
        for (int w = AC_UNK + 1; w < V; w += 5) {
            char s0[16];
            snprintf(s0, sizeof s0, "%d", w);
            const char *spec[] = {s0};
            cset cs;
            parse(&cs, spec, 1);
            for (int K = 1; K <= 4; K++) {
                ac_beam_opts o = ac_beam_defaults();
                o.beam = K, o.max_len = 10, o.n_constraints = 1, o.constraints = cs.con;
                ac_caption cap;
                ac_err err;
                CHECKF(ac_beam_search(&dec, ann, &o, &cap, &err) == 0, "%s", err.msg);
                int at = -1;
                for (int k = 0; k < cap.n && at < 0; k++)
                    if (cap.words[k] == w) at = k;
                CHECK(at >= 0);
                float alpha[11 * 9], beta[11];
                double lp;
                CHECK(ac_decoder_attend(&dec, ann, cap.words, cap.n, alpha, beta, &lp, &err) == 0);
                CHECK(!memcmp(cap.alpha + at * L, alpha + at * L, L * sizeof *alpha) && cap.beta[at] == beta[at]);
                CHECK(!memcmp(cap.alpha, alpha, (cap.n + 1) * L * sizeof *alpha));
                checked++;
                ac_caption_free(&cap);
            }
        }
        free(ann);
        ac_decoder_free(&dec);
    }
    CHECK(checked == 8 * 6 * 4);
}

/* Without constraints (n_constraints 0, whatever the pointer) the search is the unconstrained one. */
static void no_constraints_is_plain_search(void) {
    ac_decoder dec;
    float *ann;
    CHECK(make(&dec, &ann, 25, 6, 41) == 0);
    const char *spec[] = {"7"};
    cset cs;
    parse(&cs, spec, 1);
    ac_beam_opts o = ac_beam_defaults();
    o.nbest = 3;
    ac_caption a, b;
    ac_err err;
    CHECK(ac_beam_search(&dec, ann, &o, &a, &err) == 0);
    o.constraints = cs.con;
    CHECK(ac_beam_search(&dec, ann, &o, &b, &err) == 0);
    CHECK(a.n == b.n && !memcmp(a.words, b.words, a.n * sizeof(int)) && a.logprob == b.logprob && a.n_alt == b.n_alt);
    CHECK(!memcmp(a.alpha, b.alpha, (a.n + 1) * 6 * sizeof(float)) && a.met_mask == 0 && b.met_mask == 0);
    ac_caption_free(&a), ac_caption_free(&b);
    free(ann);
    ac_decoder_free(&dec);
}

/* Hostile constraints: refused with one line through ac_err, nothing returned, no crash. */
static void hostile_constraints_refused(void) {
    ac_decoder dec;
    float *ann;
    const int V = 20;
    CHECK(make(&dec, &ann, V, 4, 3) == 0);
    ac_phrase ok = {1, {5}}, empty = {0, {0}}, four = {4, {5, 6, 7}}, big = {1, {V}}, neg = {2, {5, -1}};
    ac_phrase special = {1, {AC_END}}, unk = {1, {AC_UNK}};
    ac_phrase many[AC_MAX_ALTERNATIVES + 1];
    for (int i = 0; i <= AC_MAX_ALTERNATIVES; i++) many[i] = ok;
    struct {
        int n;
        ac_constraint con[6];
        int beam;
        const char *want;
    } cases[] = {
        {1, {{0, &ok}}, 3, "constraint 0 has no alternatives"},
        {1, {{1, NULL}}, 3, "constraint 0: its alternatives are not given"},
        {2, {{1, &ok}, {1, &empty}}, 3, "constraint 1, alternative 0: a phrase of 0 words"},
        {1, {{1, &four}}, 3, "a phrase of 4 words"},
        {1, {{1, &big}}, 3, "word id 20 is not a real word"},
        {1, {{1, &neg}}, 3, "word id -1"},
        {1, {{1, &special}}, 3, "word id 2"},
        {1, {{1, &unk}}, 3, "word id 3"},
        {1, {{AC_MAX_ALTERNATIVES + 1, many}}, 3, "65 alternatives, at most 64"},
        {5, {{1, &ok}, {1, &ok}, {1, &ok}, {1, &ok}, {1, &ok}}, 3, "5 constraints, at most 4"},
        {-1, {{1, &ok}}, 3, "-1 constraints"},
        {4, {{1, &ok}, {1, &ok}, {1, &ok}, {1, &ok}}, 300, "over 4096 hypotheses"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        ac_beam_opts o = ac_beam_defaults();
        o.beam = cases[i].beam, o.n_constraints = cases[i].n, o.constraints = cases[i].con;
        ac_caption cap;
        ac_err err = {{0}, 0};
        int rc = ac_beam_search(&dec, ann, &o, &cap, &err);
        CHECKF(rc == -1 && strstr(err.msg, cases[i].want) && !strchr(err.msg, '\n') && !cap.words && !cap.alt,
               "case %zu: rc %d, message '%s', want '%s'", i, rc, err.msg, cases[i].want);
    }
    ac_beam_opts o = ac_beam_defaults();
    o.n_constraints = 2, o.constraints = NULL;
    ac_caption cap;
    ac_err err;
    CHECK(ac_beam_search(&dec, ann, &o, &cap, &err) == -1 && strstr(err.msg, "none given"));
    free(ann);
    ac_decoder_free(&dec);
}

/* Independent of beam.c: no word marked 1 in no_repeat twice, no word twice in a row, no three words
 * in a row twice, no word on both sides of a conjunction (marked 2), nor of a conjunction and an
 * article (marked 3: "sink and a sink"). */
static int repeats_ok(const int *seq, int n, const unsigned char *no_repeat) {
    for (int i = 0; i < n; i++)
        for (int j = i + 1; j < n; j++) {
            if (seq[i] == seq[j] && (no_repeat[seq[i]] == 1 || j == i + 1)) return 0;
            if (j == i + 2 && seq[i] == seq[j] && no_repeat[seq[i + 1]] == 2) return 0;
            if (j == i + 3 && seq[i] == seq[j] && no_repeat[seq[i + 1]] == 2 && no_repeat[seq[i + 2]] == 3) return 0;
            if (j + 2 < n && seq[i] == seq[j] && seq[i + 1] == seq[j + 1] && seq[i + 2] == seq[j + 2]) return 0;
        }
    return 1;
}

/* With no_repeat and a beam so large nothing is pruned, the caption and its runners-up are the
 * exhaustive ranking's best sequences among those that repeat no marked word, no word twice in a
 * row and no three words, with and without a constraint; on these decoders the unrestricted best
 * breaks the rules in some cases, so they are seen to act. */
static void no_repeat_equals_exhaustive(void) {
    const int V = 8, T = 5; /* real words 4 .. 7: 4^0 + ... + 4^5 = 1365 sequences */
    unsigned char no_repeat[8] = {0, 0, 0, 0, 0, 2, 1, 3}; /* 5 a conjunction, 6 said once, 7 an article */
    const unsigned char no_article[8] = {0, 0, 0, 0, 0, 2, 1, 0};
    int failed = 0, acted = 0, acted_article = 0;
    for (int seed = 0; seed < 12; seed++)
        for (int constrained = 0; constrained < 2; constrained++) {
            ac_decoder dec;
            float *ann;
            if (make(&dec, &ann, V, 5, 300 + seed)) { failed = 1; continue; }
            if (seed >= 6) /* "and", "a" and a noun likely: the article's rule matters */
                dec.out_bo[4] += 2.0f, dec.out_bo[5] += 3.0f, dec.out_bo[7] += 3.0f, dec.out_bo[AC_END] -= 3.0f;
            const char *spec[] = {"6"};
            cset cs;
            parse(&cs, spec, constrained);
            scored *all = malloc(1400 * sizeof *all);
            int seq[8], count = all_rec(&dec, ann, T, 1.0f, &cs, seq, 0, all, 0), n_ok = 0;
            qsort(all, count, sizeof *all, by_met_then_score);
            acted += !repeats_ok(all[0].seq, all[0].n, no_repeat);
            for (int i = 0; i < count; i++) /* whether the article's rule decides: its best breaks only that */
                if (repeats_ok(all[i].seq, all[i].n, no_article)) {
                    acted_article += !repeats_ok(all[i].seq, all[i].n, no_repeat);
                    break;
                }
            for (int i = 0; i < count; i++) /* the valid ones, in order */
                if (repeats_ok(all[i].seq, all[i].n, no_repeat)) all[n_ok++] = all[i];
            ac_beam_opts o = ac_beam_defaults();
            o.beam = count, o.max_len = T, o.nbest = 4, o.no_repeat = no_repeat;
            o.n_constraints = cs.n, o.constraints = cs.con;
            ac_caption cap;
            ac_err err;
            if (ac_beam_search(&dec, ann, &o, &cap, &err)) {
                printf("# %s\n", err.msg);
                failed = 1;
            } else {
                int ok = cap.n_alt == 3 && check_forced(&dec, ann, &cs, &cap);
                for (int r = 0; ok && r <= cap.n_alt; r++) {
                    const ac_caption *c = r ? &cap.alt[r - 1] : &cap;
                    ok = c->n == all[r].n && !memcmp(c->words, all[r].seq, c->n * sizeof(int)) &&
                         fabs(c->score - all[r].score) < 1e-9;
                }
                if (!ok) printf("# seed %d constrained %d: beam %d words score %.6f, exhaustive %d words score %.6f\n",
                                seed, constrained, cap.n, cap.score, all[0].n, all[0].score);
                failed |= !ok;
                ac_caption_free(&cap);
            }
            free(all), free(ann);
            ac_decoder_free(&dec);
        }
    CHECK(!failed);
    CHECKF(acted > 0 && acted_article > 0, "the rules never changed the best sequence (%d cases; the article's %d)", acted,
           acted_article);
}

int main(void) {
    RUN(constrained_equals_exhaustive);
    RUN(no_repeat_equals_exhaustive);
    RUN(satisfiable_always_met);
    RUN(forced_word_attention_is_teacher_forcing);
    RUN(no_constraints_is_plain_search);
    RUN(hostile_constraints_refused);
    return TEST_EXIT();
}
