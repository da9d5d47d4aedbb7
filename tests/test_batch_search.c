/* The beams of several photos stepped together give the captions of one photo at a time, bit for bit:
 *   - the half-precision panel kernel against a scalar fma chain written here (k ascending, as the
 *     float32 path sums), for row counts and sizes with every kind of tail;
 *   - ac_decoder_step_photos against ac_decoder_step photo by photo (float32 and float16 weights);
 *   - a constrained search taking rows from a memo filled by the free search, against one without;
 *   - a transformer (its step carries a key/value cache per hypothesis): the searches of several photos
 *     together, free, constrained and with a memo, against each photo's own search;
 *   - the shipped model on samples/, ../shared/images and COCO dev photos: ac_captioner_batch (lanes
 *     that search up to 8 photos together) with 1, 2 and 3 threads, tags on and off, against
 *     ac_captioner_run photo by photo: words, log-probabilities, score, confidence, tags, attention and
 *     gates compared exactly. */
#include <dirent.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "attncap/captioner.h"
#include "decoder_internal.h" /* the kernel under test */
#include "test.h"

static float frand(unsigned *s) {
    *s = *s * 1103515245u + 12345u;
    return (float)((*s >> 8) & 0xFFFF) / 32768.0f - 1.0f;
}

static void kernel_matches_fma_chain(void) {
    if (!ac_smm_has_f16()) SKIP("no float16 kernel on this CPU build (AVX-512 BW/VL, or AVX2 with FMA and F16C)");
    const int sizes[][3] = {{1, 64, 7}, {2, 100, 257}, {3, 130, 300}, {4, 77, 33}, {5, 47, 300}, {7, 2048, 513}, {13, 89, 256}, {25, 17, 600}};
    unsigned seed = 7;
    for (size_t t = 0; t < sizeof sizes / sizeof *sizes; t++) {
        const int M = sizes[t][0], N = sizes[t][1], K = sizes[t][2];
        float *A = malloc(sizeof *A * (size_t)M * K), *C = malloc(sizeof *C * (size_t)M * N), *ref = malloc(sizeof *ref * (size_t)M * N);
        uint16_t *B = malloc(sizeof *B * (size_t)K * N), *Bp = malloc(sizeof *Bp * ac_smm_packed_size(K, N));
        for (size_t i = 0; i < (size_t)M * K; i++) A[i] = frand(&seed);
        for (size_t i = 0; i < (size_t)K * N; i++) B[i] = ac_f32_to_f16(frand(&seed));
        for (size_t i = 0; i < (size_t)M * N; i++) C[i] = ref[i] = frand(&seed);
        for (int m = 0; m < M; m++)
            for (int n = 0; n < N; n++)
                for (int k = 0; k < K; k++)
                    ref[(size_t)m * N + n] = fmaf(A[(size_t)m * K + k], ac_f16_to_f32(B[(size_t)k * N + n]), ref[(size_t)m * N + n]);
        ac_smm_pack_h(K, N, B, N, Bp);
        ac_smm_nn_hp(M, N, K, A, K, Bp, C, N);
        const int same = !memcmp(C, ref, sizeof *C * (size_t)M * N);
        free(A), free(C), free(ref), free(B), free(Bp);
        CHECKF(same, "M %d N %d K %d: not the fma chain's bits", M, N, K);
    }
}

/* The float products the same way: ac_smm_nn (one row, or few rows over a long K: B streamed 4 rows at
 * a time; else C held over all of K, rows in blocks over slices of columns, with every tail of the
 * blocks and slices) is the chain C = fma(a_k, b_k, C), k ascending; the training
 * product on packed panels sums from 0 and adds C once at the end. With the vector kernels only
 * (they exist where the float16 one does); plain C sums in its own way. */
static void float_kernels_match_fma_chain(void) {
    if (!ac_smm_has_f16()) SKIP("no vector kernels on this CPU build (AVX-512, or AVX2 with FMA and F16C)");
    const int sizes[][3] = {{1, 64, 7},     {3, 130, 300},  {6, 2048, 513}, {13, 89, 256}, {25, 17, 600},  {14, 600, 700},
                            {196, 40, 33},  {2, 1300, 206}, {4, 45, 206},   {5, 31, 9},    {9, 1283, 206}, {3, 70, 1500},
                            {7, 100, 1300}, {11, 15, 64}};
    unsigned seed = 9;
    for (size_t t = 0; t < sizeof sizes / sizeof *sizes; t++) {
        const int M = sizes[t][0], N = sizes[t][1], K = sizes[t][2];
        float *A = malloc(sizeof *A * (size_t)M * K), *B = malloc(sizeof *B * (size_t)K * N), *Bp = malloc(sizeof *Bp * ac_smm_packed_size(K, N));
        float *C = malloc(sizeof *C * (size_t)M * N), *C2 = malloc(sizeof *C2 * (size_t)M * N), *ref = malloc(sizeof *ref * (size_t)M * N),
              *ref2 = malloc(sizeof *ref2 * (size_t)M * N);
        for (size_t i = 0; i < (size_t)M * K; i++) A[i] = frand(&seed);
        for (size_t i = 0; i < (size_t)K * N; i++) B[i] = frand(&seed);
        for (size_t i = 0; i < (size_t)M * N; i++) C[i] = C2[i] = ref[i] = ref2[i] = frand(&seed);
        for (int m = 0; m < M; m++)
            for (int n = 0; n < N; n++) {
                float acc = 0;
                for (int k = 0; k < K; k++) {
                    ref[(size_t)m * N + n] = fmaf(A[(size_t)m * K + k], B[(size_t)k * N + n], ref[(size_t)m * N + n]);
                    acc = fmaf(A[(size_t)m * K + k], B[(size_t)k * N + n], acc);
                }
                ref2[(size_t)m * N + n] += acc;
            }
        ac_smm_nn(M, N, K, A, K, B, N, C, N);
        ac_smm_pack(K, N, B, N, 0, Bp);
        ac_smm_nn_packed(M, N, K, A, K, Bp, C2, N);
        const int same = !memcmp(C, ref, sizeof *C * (size_t)M * N), same2 = !memcmp(C2, ref2, sizeof *C2 * (size_t)M * N);
        free(A), free(B), free(Bp), free(C), free(C2), free(ref), free(ref2);
        CHECKF(same, "ac_smm_nn, M %d N %d K %d: not the fma chain's bits", M, N, K);
        CHECKF(same2, "ac_smm_nn_packed, M %d N %d K %d: not the fma chain's bits", M, N, K);
    }
}

/* Three photos with 3, 13 and 1 hypotheses in one step, against each photo's own step. */
static void photos_step_as_one(void) {
    ac_decoder_config cfg = {.vocab = 300, .embed = 24, .hidden = 40, .att = 16, .dim = 20, .n_ann = 12,
                             .grid_h = 3, .grid_w = 4};
    for (int half = 0; half < 2; half++) {
        ac_decoder dec;
        ac_err err;
        CHECKF(ac_decoder_init(&dec, &cfg, 5, &err) == 0, "%s", err.msg);
        for (size_t i = 0; i < dec.n_params; i++) dec.params[i] = ac_f16_to_f32(ac_f32_to_f16(dec.params[i] * 3));
        if (half && ac_decoder_use_f16(&dec) != 1) { /* no float16 kernel on this CPU build */
            ac_decoder_free(&dec);
            break;
        }
        enum { P = 3, K = 17, W = 2 * 40 + 300 + 12 + 1 };
        const int rows[P] = {3, 13, 1};
        float ann[P][12 * 20], h[K * 40], c[K * 40], all[K * W], one[K * W];
        int prev[K];
        unsigned seed = 11;
        ac_dec_image *img[P];
        for (int p = 0; p < P; p++) {
            for (int i = 0; i < 12 * 20; i++) ann[p][i] = frand(&seed) + 1;
            img[p] = ac_decoder_prepare(&dec, ann[p]);
        }
        for (int k = 0; k < K; k++) prev[k] = (k * 37) % 300;
        for (int i = 0; i < K * 40; i++) h[i] = frand(&seed), c[i] = frand(&seed);
        float *scr = malloc(sizeof *scr * ac_decoder_step_scratch(&cfg, K));
        /* outputs laid out [h_out | c_out | logp | alpha | beta] for all K rows */
        ac_decoder_step_photos(&dec, P, (const ac_dec_image *const *)img, rows, prev, h, c, all, all + K * 40,
                               all + K * 80, all + K * 380, all + K * 392, scr);
        for (int p = 0, k0 = 0; p < P; k0 += rows[p++]) {
            const int n = rows[p];
            float part[K * W];
            ac_decoder_step(&dec, img[p], n, prev + k0, h + k0 * 40, c + k0 * 40, part, part + n * 40, part + n * 80,
                            part + n * 380, part + n * 392, scr);
            const int off[5] = {0, 40, 80, 380, 392}, width[5] = {40, 40, 300, 12, 1};
            for (int b = 0; b < 5; b++) /* back into the layout of K rows */
                memcpy(one + off[b] * K + k0 * width[b], part + off[b] * n, sizeof(float) * (size_t)n * width[b]);
        }
        free(scr);
        for (int p = 0; p < P; p++) ac_dec_image_free(img[p]);
        ac_decoder_free(&dec);
        CHECKF(!memcmp(all, one, sizeof all), "%s weights: the rows of a joint step differ", half ? "float16" : "float32");
    }
}

/* A constrained search whose memo holds the free search's rows, against the same search without. */
static void memo_same_captions(void) {
    ac_decoder_config cfg = {.vocab = 40, .embed = 12, .hidden = 16, .att = 8, .dim = 10, .n_ann = 6,
                             .grid_h = 2, .grid_w = 3};
    ac_decoder dec;
    ac_err err;
    CHECKF(ac_decoder_init(&dec, &cfg, 3, &err) == 0, "%s", err.msg);
    for (int i = 0; i < cfg.embed * cfg.vocab; i++) dec.out_lo[i] *= 5;
    float ann[6 * 10];
    unsigned seed = 5;
    for (int i = 0; i < 6 * 10; i++) ann[i] = frand(&seed) + 1;
    const ac_phrase w1 = {1, {9}}, w2[2] = {{2, {12, 13}}, {1, {30}}};
    const ac_constraint cons[2] = {{1, &w1}, {2, w2}};
    ac_beam_opts o = ac_beam_defaults();
    o.max_len = 8, o.len_alpha = 0.4f;
    ac_dec_image *img = ac_decoder_prepare(&dec, ann);
    ac_beam_memo *memo = ac_beam_memo_new(&dec);
    ac_beam_task t[3] = {{.img = img, .memo = memo, .opts = o}};
    CHECK(ac_beam_search_photos(&dec, 1, t) == 0); /* fills the memo */
    o.n_constraints = 2, o.constraints = cons;
    t[1] = (ac_beam_task){.img = img, .memo = memo, .opts = o}, t[2] = (ac_beam_task){.img = img, .opts = o};
    CHECK(ac_beam_search_photos(&dec, 2, t + 1) == 0);
    ac_caption plain;
    CHECK(ac_beam_search(&dec, ann, &o, &plain, &err) == 0);
    int same = 1;
    for (int k = 1; k < 3; k++) {
        const ac_caption *a = &t[k].out;
        same &= a->n == plain.n && a->logprob == plain.logprob && a->met_mask == plain.met_mask &&
                !memcmp(a->words, plain.words, sizeof(int) * (size_t)a->n) &&
                !memcmp(a->alpha, plain.alpha, sizeof(float) * (size_t)(a->n + 1) * 6);
    }
    for (int k = 0; k < 3; k++) ac_caption_free(&t[k].out);
    ac_caption_free(&plain);
    ac_beam_memo_free(memo);
    ac_dec_image_free(img);
    ac_decoder_free(&dec);
    CHECK(same);
}

static int same_caption(const ac_caption *a, const ac_caption *b, int L);

/* A transformer's searches of 4 photos together (its history copied from hypothesis to hypothesis),
 * free, constrained (with a memo filled by the free ones) and with runners-up, against each alone. */
static void transformer_photos_as_one(void) {
    ac_decoder_config cfg = {.vocab = 60, .embed = 16, .hidden = 24, .att = 16, .dim = 10, .n_ann = 6, .grid_h = 2,
                             .grid_w = 3, .attention = AC_ATTENTION_SCALED_DOT, .heads = 2,
                             .decoder = AC_DECODER_TRANSFORMER, .layers = 2};
    ac_decoder dec;
    ac_err err;
    CHECKF(ac_decoder_init(&dec, &cfg, 17, &err) == 0, "%s", err.msg);
    for (int i = 0; i < cfg.embed * cfg.vocab; i++) dec.out_lo[i] *= 4; /* peaked enough for captions to end */
    dec.out_bo[AC_END] = 1.0f;
    enum { P = 4 };
    float ann[P][6 * 10];
    unsigned seed = 9;
    for (int p = 0; p < P; p++)
        for (int i = 0; i < 6 * 10; i++) ann[p][i] = frand(&seed) + 1;
    const ac_phrase w1 = {1, {9}}, w2[2] = {{2, {12, 13}}, {1, {30}}};
    const ac_constraint cons[2] = {{1, &w1}, {2, w2}};
    int same = 1, words = 0;
    for (int mode = 0; mode < 3 && same; mode++) { /* free, constrained with memos, runners-up */
        ac_beam_opts o = ac_beam_defaults();
        o.max_len = 9, o.len_alpha = 0.4f;
        if (mode == 1) o.n_constraints = 2, o.constraints = cons;
        if (mode == 2) o.beam = 4, o.nbest = 3;
        ac_dec_image *img[P];
        ac_beam_memo *memo[P];
        ac_beam_task t[P];
        for (int p = 0; p < P; p++) {
            img[p] = ac_decoder_prepare(&dec, ann[p]);
            memo[p] = mode == 1 ? ac_beam_memo_new(&dec) : NULL;
            if (memo[p]) { /* the free search fills the memo first */
                ac_beam_task f = {.img = img[p], .memo = memo[p], .opts = ac_beam_defaults()};
                f.opts.max_len = 9;
                CHECK(ac_beam_search_photos(&dec, 1, &f) == 0);
                ac_caption_free(&f.out);
            }
            t[p] = (ac_beam_task){.img = img[p], .memo = memo[p], .opts = o};
        }
        CHECK(ac_beam_search_photos(&dec, P, t) == 0);
        for (int p = 0; p < P; p++) {
            ac_caption one;
            CHECKF(ac_beam_search(&dec, ann[p], &o, &one, &err) == 0, "%s", err.msg);
            same &= same_caption(&t[p].out, &one, 6) && t[p].out.n_alt == one.n_alt;
            for (int a = 0; same && a < one.n_alt; a++) same &= same_caption(&t[p].out.alt[a], &one.alt[a], 6);
            words += one.n;
            ac_caption_free(&one), ac_caption_free(&t[p].out);
            ac_dec_image_free(img[p]), ac_beam_memo_free(memo[p]);
        }
        CHECKF(same, "mode %d: a photo's caption differs when searched with the others", mode);
    }
    ac_decoder_free(&dec);
    CHECKF(words > 3 * P, "captions too short to show anything (%d words)", words);
}

/* ---- the shipped model on real photos ---- */

enum { MAX_PHOTOS = 64 };
typedef struct seen {
    int n;
    ac_caption cap[MAX_PHOTOS]; /* copies of the results */
    int ok[MAX_PHOTOS];
} seen;

static int copy_caption(const ac_caption *src, ac_caption *dst, int L) {
    *dst = *src;
    dst->labels = NULL, dst->alt = NULL, dst->n_alt = 0, dst->account = NULL; /* not compared */
    dst->regions = src->n_regions && src->regions ? malloc(sizeof *dst->regions * (size_t)src->n_regions) : NULL;
    dst->copied = src->copied ? malloc(sizeof(float) * ((size_t)src->n + 1)) : NULL;
    if ((src->n_regions && src->regions && !dst->regions) || (src->copied && !dst->copied)) return -1;
    if (dst->regions) memcpy(dst->regions, src->regions, sizeof *dst->regions * (size_t)src->n_regions);
    if (dst->copied) memcpy(dst->copied, src->copied, sizeof(float) * ((size_t)src->n + 1));
    dst->words = malloc(sizeof(int) * ((size_t)src->n + 1));
    dst->alpha = malloc(sizeof(float) * ((size_t)src->n + 1) * L);
    dst->beta = malloc(sizeof(float) * ((size_t)src->n + 1));
    dst->tags = src->n_tags ? malloc(sizeof *dst->tags * (size_t)src->n_tags) : NULL;
    dst->word_logp = src->word_logp ? malloc(sizeof(float) * ((size_t)src->n + 1)) : NULL;
    if (!dst->words || !dst->alpha || !dst->beta || (src->n_tags && !dst->tags) || (src->word_logp && !dst->word_logp))
        return -1;
    if (src->word_logp) memcpy(dst->word_logp, src->word_logp, sizeof(float) * ((size_t)src->n + 1));
    memcpy(dst->words, src->words, sizeof(int) * (size_t)src->n);
    memcpy(dst->alpha, src->alpha, sizeof(float) * ((size_t)src->n + 1) * L);
    memcpy(dst->beta, src->beta, sizeof(float) * ((size_t)src->n + 1));
    if (src->n_tags) memcpy(dst->tags, src->tags, sizeof *dst->tags * (size_t)src->n_tags);
    return 0;
}

static int same_caption(const ac_caption *a, const ac_caption *b, int L) {
    const int conf = (isnan(a->confidence) && isnan(b->confidence)) || a->confidence == b->confidence;
    return a->n == b->n && a->logprob == b->logprob && a->score == b->score && conf && a->met_mask == b->met_mask &&
           a->described == b->described && a->n_tags == b->n_tags &&
           !memcmp(a->words, b->words, sizeof(int) * (size_t)a->n) &&
           !memcmp(a->alpha, b->alpha, sizeof(float) * ((size_t)a->n + 1) * L) &&
           !memcmp(a->beta, b->beta, sizeof(float) * ((size_t)a->n + 1)) && !a->word_logp == !b->word_logp &&
           (!a->word_logp || !memcmp(a->word_logp, b->word_logp, sizeof(float) * ((size_t)a->n + 1))) &&
           (!a->n_tags || !memcmp(a->tags, b->tags, sizeof *a->tags * (size_t)a->n_tags)) &&
           a->n_regions == b->n_regions && !a->regions == !b->regions &&
           (!a->regions || !memcmp(a->regions, b->regions, sizeof *a->regions * (size_t)a->n_regions)) &&
           !a->copied == !b->copied && (!a->copied || !memcmp(a->copied, b->copied, sizeof(float) * ((size_t)a->n + 1)));
}

typedef struct batch_user {
    seen *s;
    int L;
} batch_user;

static void keep_result(void *user, const ac_batch_result *r) {
    batch_user *u = user;
    u->s->ok[r->index] = r->ok && copy_caption(r->caption, &u->s->cap[r->index], u->L) == 0;
}

static void free_seen(seen *s) {
    for (int i = 0; i < s->n; i++) ac_caption_free(&s->cap[i]);
    memset(s, 0, sizeof *s);
}

/* The photos: the .jpg files of samples/, ../shared/images, the first COCO dev photos when present. */
static int add_dir(char **paths, int n, const char *dir, const char *list, int max_from_list) {
    if (list) {
        FILE *f = fopen(list, "r");
        char line[512];
        for (int k = 0; f && k < max_from_list && n < MAX_PHOTOS && fgets(line, sizeof line, f); k++) {
            line[strcspn(line, "\r\n")] = 0;
            char path[4096];
            snprintf(path, sizeof path, "%s/%s", dir, line);
            FILE *g = fopen(path, "rb");
            if (g) fclose(g), paths[n++] = strdup(path);
        }
        if (f) fclose(f);
        return n;
    }
    DIR *d = opendir(dir);
    struct dirent *e;
    while (d && n < MAX_PHOTOS && (e = readdir(d))) {
        const char *x = strrchr(e->d_name, '.');
        if (!x || (strcmp(x, ".jpg") && strcmp(x, ".bmp"))) continue;
        char path[4096];
        snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
        paths[n++] = strdup(path);
    }
    if (d) closedir(d);
    return n;
}

static void shipped_model_batches(void) {
    const char *root = getenv("ATTNCAP_ROOT") ? getenv("ATTNCAP_ROOT") : ".";
    char model[4096], dir[4096], list[4096];
    snprintf(model, sizeof model, "%s/models/attncap.safetensors", root);
    if (!test_data_dir() || !test_shared("images/cat.bmp")) SKIP("needs ../shared/images (and its encoder)");
    ac_captioner c;
    ac_err err = {{0}, 0};
    if (ac_captioner_init(&c, model, NULL, 2, &err)) SKIP("the shipped model or its encoder is missing");
    char *paths[MAX_PHOTOS];
    snprintf(dir, sizeof dir, "%s/samples", root);
    int n = add_dir(paths, 0, dir, NULL, 0);
    snprintf(dir, sizeof dir, "%s/images", test_data_dir());
    n = add_dir(paths, n, dir, NULL, 0);
    snprintf(dir, sizeof dir, "%s/data/coco/images", test_data_dir());
    snprintf(list, sizeof list, "%s/models/coco_dev_photos.txt", root);
    n = add_dir(paths, n, dir, list, 24);
    static seen ref, got;
    int failures = 0;
    const ac_naming_opts on = c.naming;
    ac_naming_opts off = on;
    off.mode = AC_TAGS_OFF;
    for (int mode = 0; mode < 2 && !failures; mode++) {
        CHECKF(ac_captioner_set_naming(&c, mode ? &off : &on, NULL, &err) == 0, "%s", err.msg);
        /* one photo at a time: the encoder and the detector side by side (2 threads, a model with
         * regions); the lanes below run them one after the other, so each checks the other */
        CHECK(c.cnns_beside == (c.det != NULL));
        ref.n = n;
        for (int i = 0; i < n; i++) {
            ac_image im;
            ac_caption cap;
            if (ac_image_load(paths[i], &im, &err)) continue;
            ref.ok[i] = !ac_captioner_run(&c, &im, &cap, NULL, NULL, &err);
            if (ref.ok[i]) ref.ok[i] = copy_caption(&cap, &ref.cap[i], c.L) == 0, ac_caption_free(&cap);
            ac_image_free(&im);
        }
        for (int threads = 1; threads <= 3; threads++) {
            got.n = n;
            batch_user u = {&got, c.L};
            ac_batch_stats st;
            CHECKF(ac_captioner_batch(&c, (const char *const *)paths, n, threads, 0, keep_result, &u, &st, &err) == 0,
                   "%s", err.msg);
            for (int i = 0; i < n; i++)
                if (!ref.ok[i] || !got.ok[i] || !same_caption(&ref.cap[i], &got.cap[i], c.L)) {
                    printf("# tags %s, %d threads (%d lanes): %s differs\n", mode ? "off" : "auto", threads, st.lanes,
                           paths[i]);
                    failures++;
                }
            free_seen(&got);
        }
        free_seen(&ref);
    }
    for (int i = 0; i < n; i++) free(paths[i]);
    ac_captioner_free(&c);
    CHECKF(!failures && n >= 5, "%d of %d photos differ (or too few photos)", failures, n);
}

int main(void) {
    RUN(kernel_matches_fma_chain);
    RUN(float_kernels_match_fma_chain);
    RUN(photos_step_as_one);
    RUN(memo_same_captions);
    RUN(transformer_photos_as_one);
    RUN(shipped_model_batches);
    return TEST_EXIT();
}
