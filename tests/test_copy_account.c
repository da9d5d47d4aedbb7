/* A copy model's account of each word (decoder.h ac_decoder_copy_shares) and the attention a caption
 * shows for it (beam.h ac_caption_copy_account): the per-region shares of a word's probability against
 * a brute force in double from the model's parameters (the pointer's scores, its sentinel and the
 * vocabulary's own softmax, copy_internal.h's formula), and a copied word's shown weights against
 * (1 - share) times its context attention plus those shares. The account a beam search keeps for its
 * captions (ac_caption.account, from each step it took) against teacher forcing of the same words. */
#include "attncap/beam.h"
#include "attncap/decoder.h"
#include "test.h"

#define V 11
#define H 6
#define D 7
#define A 4
#define L 6 /* 2 x 2 cells, then 2 regions */
#define NR 2

static const short word_cat[V] = {-1, -1, -1, -1, 2, 2, 5, -1, 5, 9, -1}; /* category 7 has no words */

static ac_decoder_config copy_cfg(int kind) {
    ac_decoder_config c = {.vocab = V, .embed = 5, .hidden = H, .att = A, .dim = D, .n_ann = L, .grid_h = 2,
                           .grid_w = 2, .regions = NR, .copy = kind, .region_scale = 60};
    return c;
}

static int open_copy(ac_decoder *dec, int kind) {
    ac_decoder_config c = copy_cfg(kind);
    ac_err err;
    if (ac_decoder_init(dec, &c, 5, &err) || ac_decoder_set_copy_words(dec, word_cat, &err)) return -1;
    if (kind == 1) dec->copy_b[0] = 0.5f; /* the gate well open, not shut */
    else dec->ptr_bs[0] = -0.5f;
    return 0;
}

/* The brute force's gate g and pointer weights pi [NR] (0 for a region whose category has no words) at a
 * step with h_{t-1} = hp, h_t = ht, the step's attention al [L] and gate beta, on annotations ann [L, D]. */
static void gate_and_pointer(const ac_decoder *dec, int kind, const float *ann, const int *cat, const float *hp,
                             const float *ht, const float *al, float beta, double *g, double *pi) {
    double w[NR], sum = 0, u;
    int named[NR];
    for (int r = 0; r < NR; r++) named[r] = 0;
    for (int r = 0; r < NR; r++)
        for (int v = 0; v < V; v++) named[r] |= word_cat[v] == cat[r];
    if (kind == 2) { /* e_r = w_p . tanh(W_a a_r + b_a + W_h h_{t-1}), e_s = w_s . h_t + b_s */
        double es = dec->ptr_bs[0], mx = -1e300;
        for (int j = 0; j < H; j++) es += (double)dec->ptr_ws[j] * ht[j];
        for (int r = 0; r < NR; r++) {
            const float *a = ann + (size_t)(4 + r) * D;
            double e = 0;
            for (int i = 0; i < A; i++) {
                double x = dec->att_ba[i];
                for (int d = 0; d < D; d++) x += (double)a[d] * dec->att_wa[d * A + i];
                for (int j = 0; j < H; j++) x += (double)hp[j] * dec->att_wh[j * A + i];
                e += dec->ptr_we[i] * tanh(x);
            }
            w[r] = e, mx = named[r] && e > mx ? e : mx;
        }
        for (int r = 0; r < NR; r++) sum += w[r] = named[r] ? exp(w[r] - mx) : 0;
        u = mx + log(sum) - es;
    } else { /* pi from the attention on the regions; g = sigmoid(w_c . [h_t; z_t] + b_c), z = beta alpha^T a */
        u = dec->copy_b[0];
        for (int j = 0; j < H; j++) u += (double)dec->copy_w[j] * ht[j];
        for (int d = 0; d < D; d++) {
            double z = 0;
            for (int l = 0; l < L; l++) z += (double)al[l] * ann[(size_t)l * D + d];
            u += dec->copy_w[H + d] * beta * z;
        }
        for (int r = 0; r < NR; r++) sum += w[r] = named[r] ? al[4 + r] : 0;
    }
    *g = 1 / (1 + exp(-u));
    for (int r = 0; r < NR; r++) pi[r] = w[r] / sum;
}

/* Row k of the account against the brute force: region r's share g pi_r [c_r = c(w)] (p_w / Q_c) / p(w)
 * with p_w the vocabulary's softmax (the step with the mixture off) and p(w) the model's. */
static void region_shares(int kind) {
    ac_decoder dec, plain;
    ac_err err;
    CHECK(open_copy(&dec, kind) == 0);
    plain = dec, plain.cfg.copy = 0; /* the same step, the vocabulary alone */
    const int cats[4][NR] = {{2, 9}, {2, 2}, {2, 7}, {5, 2}}, words[6] = {4, 6, 5, 9, 8, 7}, n = 6;
    int checked = 0;
    for (int s = 0; s < 4; s++) {
        float ann[L * D];
        fill_ann(ann, L * D, 7 + s);
        ac_dec_image *im = ac_decoder_prepare_regions(&dec, ann, 2, 2, NR);
        CHECK(im);
        ac_dec_image_set_categories(im, cats[s], NULL);
        float share[7], region[7 * NR];
        CHECK(ac_decoder_copy_shares(&dec, im, words, n, share, region, &err) == 0);
        float st[2 * H], st2[2 * H], lp[V], lv[V], al[L], be, scr[512];
        CHECK(ac_decoder_advance_scratch(&dec.cfg, 1, 8) <= 512);
        const ac_dec_image *imp = im;
        const int one = 1;
        ac_decoder_start(&dec, im, st);
        for (int k = 0; k <= n; k++) {
            const int prev = k ? words[k - 1] : AC_START, w = k < n ? words[k] : AC_END;
            ac_decoder_advance(&plain, 1, &imp, &one, k, &prev, st, NULL, st2, NULL, lv, al, &be, scr);
            ac_decoder_advance(&dec, 1, &imp, &one, k, &prev, st, NULL, st2, NULL, lp, al, &be, scr);
            double g, pi[NR], sum = 0, vocab;
            gate_and_pointer(&dec, kind, ann, cats[s], st, st2, al, be, &g, pi);
            double Q = 0;
            for (int v = 0; v < V; v++) Q += word_cat[w] >= 0 && word_cat[v] == word_cat[w] ? exp(lv[v]) : 0;
            vocab = (1 - g) * exp((double)lv[w] - lp[w]); /* (1 - g) p_w / p(w) */
            for (int r = 0; r < NR; r++) {
                const double want = cats[s][r] == word_cat[w] ? g * pi[r] * exp((double)lv[w] - lp[w]) / Q : 0;
                CHECKF(fabs(region[k * NR + r] - want) <= 2e-5, "copy %d, categories %d %d, word %d, region %d: %.7g, brute force %.7g",
                       kind, cats[s][0], cats[s][1], w, r, region[k * NR + r], want);
                sum += region[k * NR + r];
                checked += want > 0.05;
            }
            /* the brute force's own p(w), vocabulary plus copies, is the step's: its g and pi are the model's */
            CHECKF(fabs(vocab + sum - 1) <= 2e-5, "copy %d, word %d: vocabulary %.7g + regions %.7g != 1", kind, w, vocab, sum);
            CHECKF(fabs(sum - share[k]) <= 1e-6, "copy %d, word %d: regions %.7g, share %.7g", kind, w, sum, share[k]);
            memcpy(st, st2, sizeof st);
        }
        ac_dec_image_free(im);
    }
    CHECKF(checked >= 6, "copy %d: only %d region shares above 0.05 (a test that cannot fail)", kind, checked);
    ac_decoder_free(&dec);
}
static void test_region_shares_copy(void) { region_shares(1); }
static void test_region_shares_pointer(void) { region_shares(2); }

/* ac_decoder_copy_shares_many: captions of different lengths on different photos (one photo twice, one
 * with no regions' categories), accounted together, are each the same bits as accounted alone. */
static void many_as_alone(int kind) {
    ac_decoder dec;
    ac_err err;
    CHECK(open_copy(&dec, kind) == 0);
    enum { N = 5 };
    const int cats[N][NR] = {{2, 9}, {5, 2}, {2, 9}, {2, 7}, {9, 5}}, n_words[N] = {2, 6, 0, 4, 6};
    const int w[N][6] = {{4, 6}, {4, 6, 5, 9, 8, 7}, {0}, {8, 8, 5, 1}, {9, 3, 4, 5, 6, 2}};
    ac_dec_image *im[N];
    float share[N][7], region[N][7 * NR], alone[7], alone_region[7 * NR];
    float *sp[N], *rp[N];
    const int *wp[N];
    for (int i = 0; i < N; i++) {
        float ann[L * D];
        fill_ann(ann, L * D, 3 + (i == 2 ? 0 : i)); /* photos 0 and 2 the same */
        CHECK(im[i] = ac_decoder_prepare_regions(&dec, ann, 2, 2, NR));
        if (i != 3) ac_dec_image_set_categories(im[i], cats[i], NULL); /* photo 3: none known */
        sp[i] = share[i], rp[i] = i == 4 ? NULL : region[i], wp[i] = w[i];
    }
    CHECK(ac_decoder_copy_shares_many(&dec, N, (const ac_dec_image *const *)im, wp, n_words, sp, rp, &err) == 0);
    int copied = 0;
    for (int i = 0; i < N; i++) {
        CHECK(ac_decoder_copy_shares(&dec, im[i], w[i], n_words[i], alone, alone_region, &err) == 0);
        CHECKF(!memcmp(alone, share[i], sizeof(float) * (size_t)(n_words[i] + 1)), "copy %d, caption %d: shares differ from its own", kind, i);
        CHECKF(i == 4 || !memcmp(alone_region, region[i], sizeof(float) * (size_t)(n_words[i] + 1) * NR),
               "copy %d, caption %d: regions' parts differ from its own", kind, i);
        for (int k = 0; k <= n_words[i]; k++) copied += share[i][k] > 0.05f;
        ac_dec_image_free(im[i]);
    }
    CHECKF(copied >= 3, "copy %d: only %d words copied (a test that cannot fail)", kind, copied);
    ac_decoder_free(&dec);
}
static void test_many_as_alone_copy(void) { many_as_alone(1); }
static void test_many_as_alone_pointer(void) { many_as_alone(2); }

/* The beam search's account (each kept step's, ac_decoder_advance_account): photos searched together,
 * with runners-up, then again through a memo (its steps looked up, not computed); every caption's kept
 * account is the same bits as ac_decoder_copy_shares of its words, and ac_captions_copy_account takes
 * it whole (the same shown attention as teacher forcing's). */
static void search_as_forced(int kind) {
    ac_decoder dec;
    CHECK(open_copy(&dec, kind) == 0);
    enum { N = 3 };
    const ac_region regs[N][NR] = {{{.x1 = 0.5f, .y1 = 1, .score = 0.9f, .category = 2}, {.x0 = 0.5f, .x1 = 1, .y1 = 1, .score = 0.6f, .category = 9}},
                                   {{.x1 = 1, .y1 = 0.5f, .score = 0.8f, .category = 5}, {.x1 = 1, .y0 = 0.5f, .y1 = 1, .score = 0.7f, .category = 2}}};
    ac_dec_image *im[N];
    ac_beam_memo *memo[N];
    float ann[N][L * D];
    for (int i = 0; i < N; i++) {
        fill_ann(ann[i], L * D, 11 + i);
        CHECK(im[i] = ac_decoder_prepare_regions(&dec, ann[i], 2, 2, NR));
        if (i != 2) ac_dec_image_set_regions(im[i], regs[i]); /* photo 2: none known */
        CHECK(memo[i] = ac_beam_memo_new(&dec));
    }
    int checked = 0, copied = 0;
    for (int round = 0; round < 2; round++) { /* the second's steps come from the memo */
        ac_beam_task t[N];
        for (int i = 0; i < N; i++) {
            t[i] = (ac_beam_task){.img = im[i], .memo = memo[i], .opts = ac_beam_defaults()};
            t[i].opts.nbest = 3, t[i].opts.max_len = 8;
        }
        CHECK(ac_beam_search_photos(&dec, N, t) == 0);
        for (int i = 0; i < N; i++)
            for (int a = -1; a < t[i].out.n_alt; a++) {
                ac_caption *c = a < 0 ? &t[i].out : &t[i].out.alt[a];
                float share[9], region[9 * NR];
                ac_err err;
                CHECK(c->account && c->n_regions == NR && c->n <= 8);
                CHECK(ac_decoder_copy_shares(&dec, im[i], c->words, c->n, share, region, &err) == 0);
                for (int k = 0; k <= c->n; k++) {
                    const float *kept = c->account + k * (1 + NR);
                    CHECKF(!memcmp(&kept[0], &share[k], sizeof(float)) && !memcmp(kept + 1, region + k * NR, sizeof(float) * NR),
                           "copy %d, round %d, photo %d, caption %d, word %d: kept %.9g, teacher forcing %.9g", kind, round, i,
                           a, k, kept[0], share[k]);
                    copied += share[k] > 0.05f;
                }
                checked++;
            }
        /* taken whole: the shown attention is teacher forcing's (ac_caption_copy_account of a copy) */
        ac_caption *c = &t[0].out;
        ac_caption forced = {0};
        ac_err err;
        CHECK(ac_caption_forced_regions(&dec, ann[0], 2, 2, NR, regs[0], c->words, c->n, &forced, &err) == 0);
        CHECK(ac_caption_copy_account(c, &dec, im[0], &err) == 0 && !c->account && c->copied && forced.copied);
        CHECK(!memcmp(c->copied, forced.copied, sizeof(float) * (size_t)(c->n + 1)));
        CHECK(!memcmp(c->alpha, forced.alpha, sizeof(float) * (size_t)(c->n + 1) * L));
        ac_caption_free(&forced);
        for (int i = 0; i < N; i++) ac_caption_free(&t[i].out);
    }
    CHECKF(checked >= 2 * N * 2 && copied >= 3, "copy %d: %d captions, %d words copied (a test that cannot fail)", kind,
           checked, copied);
    for (int i = 0; i < N; i++) ac_dec_image_free(im[i]), ac_beam_memo_free(memo[i]);
    ac_decoder_free(&dec);
}
static void test_search_as_forced_copy(void) { search_as_forced(1); }
static void test_search_as_forced_pointer(void) { search_as_forced(2); }

/* A given caption's attention as shown (ac_caption_forced_regions, which takes the account): each row is
 * (1 - share) times the step's context attention (ac_decoder_attend_image), plus on each region the part
 * of the word copied from it (ac_decoder_copy_shares); rows still sum to 1. */
static void shown_attention(int kind) {
    ac_decoder dec;
    ac_err err;
    CHECK(open_copy(&dec, kind) == 0);
    const int cat[NR] = {2, 9}, words[5] = {4, 7, 9, 6, 5}, n = 5;
    float ann[L * D];
    fill_ann(ann, L * D, 7);
    ac_caption cap;
    const ac_region regs[NR] = {{.score = 1, .category = 2}, {.score = 1, .category = 9}};
    CHECK(ac_caption_forced_regions(&dec, ann, 2, 2, NR, regs, words, n, &cap, &err) == 0);
    CHECK(cap.copied && cap.n_regions == NR && ac_caption_alpha_stride(&cap) == L);
    ac_dec_image *im = ac_decoder_prepare_regions(&dec, ann, 2, 2, NR);
    CHECK(im);
    ac_dec_image_set_categories(im, cat, NULL);
    float alpha[6 * L], share[6], region[6 * NR];
    CHECK(ac_decoder_attend_image(&dec, im, words, n, alpha, NULL, NULL, NULL, &err) == 0);
    CHECK(ac_decoder_copy_shares(&dec, im, words, n, share, region, &err) == 0);
    int moved = 0;
    for (int k = 0; k <= n; k++) {
        double sum = 0;
        for (int i = 0; i < L; i++) {
            const double want = (1 - share[k]) * alpha[k * L + i] + (i >= 4 ? region[k * NR + i - 4] : 0);
            CHECKF(fabs(cap.alpha[k * L + i] - want) <= 1e-6, "copy %d, word %d, column %d: shown %.7g, want %.7g (context %.7g, share %.7g)",
                   kind, k, i, cap.alpha[k * L + i], want, alpha[k * L + i], share[k]);
            sum += cap.alpha[k * L + i];
            moved += i >= 4 && cap.alpha[k * L + i] - alpha[k * L + i] > 0.1;
        }
        CHECK_NEAR(sum, 1.0, 1e-5);
        CHECK_NEAR(cap.copied[k], share[k], 1e-7);
    }
    CHECKF(moved > 0, "copy %d: no word's copies moved its attention (the gate is shut?)", kind);
    ac_caption_free(&cap);
    ac_dec_image_free(im);
    ac_decoder_free(&dec);
}
static void test_shown_attention_copy(void) { shown_attention(1); }
static void test_shown_attention_pointer(void) { shown_attention(2); }

/* A model without copy: the given caption's attention is the step's, bit for bit. */
static void test_shown_attention_without_copy(void) {
    ac_decoder_config c = copy_cfg(0);
    ac_decoder dec;
    ac_err err;
    CHECK(ac_decoder_init(&dec, &c, 5, &err) == 0);
    const int words[5] = {4, 7, 9, 6, 5};
    const ac_region regs[NR] = {{.score = 1, .category = 2}, {.score = 1, .category = 9}};
    float ann[L * D], alpha[6 * L];
    fill_ann(ann, L * D, 7);
    ac_caption cap;
    CHECK(ac_caption_forced_regions(&dec, ann, 2, 2, NR, regs, words, 5, &cap, &err) == 0);
    CHECK(!cap.copied);
    ac_dec_image *im = ac_decoder_prepare_regions(&dec, ann, 2, 2, NR);
    CHECK(im && ac_decoder_attend_image(&dec, im, words, 5, alpha, NULL, NULL, NULL, &err) == 0);
    CHECK(!memcmp(cap.alpha, alpha, sizeof alpha));
    ac_caption_free(&cap);
    ac_dec_image_free(im);
    ac_decoder_free(&dec);
}

int main(void) {
    RUN(test_region_shares_copy);
    RUN(test_region_shares_pointer);
    RUN(test_many_as_alone_copy);
    RUN(test_many_as_alone_pointer);
    RUN(test_search_as_forced_copy);
    RUN(test_search_as_forced_pointer);
    RUN(test_shown_attention_copy);
    RUN(test_shown_attention_pointer);
    RUN(test_shown_attention_without_copy);
    return TEST_EXIT();
}
