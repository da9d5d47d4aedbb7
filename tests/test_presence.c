/* test_presence.c: the presence head (presence.h): its gradient against finite differences of an
 * independent double-precision loss, the fit against the optimality condition (zero gradient) and
 * against known separating weights, forms and labels of the training set, the file round trip, and
 * hostile files. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "attncap/presence.h"
#include "attncap/presence_data.h"
#include "attncap/safetensors.h"
#include "test.h"

static double urand(unsigned long long *s) {
    *s = *s * 6364136223846793005ull + 1442695040888963407ull;
    return (double)(*s >> 11) / 9007199254740992.0;
}

static ac_presence_group two_groups[2] = {
    {"person", 2, (char *[]){"man", "men"}, 0.75f}, {"dog", 1, (char *[]){"dog"}, 0}};

/* The loss written out in double precision, independently of presence.c. */
static double ref_loss(const ac_presence *p, const float *x, const uint8_t *y, int n, double l2) {
    double loss = 0;
    for (int i = 0; i < n; i++)
        for (int j = 0; j < p->k; j++) {
            double z = p->b[j];
            for (int d = 0; d < p->dim; d++) z += (double)p->w[(size_t)j * p->dim + d] * x[(size_t)i * p->dim + d];
            const double q = 1 / (1 + exp(-z));
            loss -= y[(size_t)i * p->k + j] ? log(q) : log(1 - q);
        }
    loss /= (double)n * p->k;
    for (int i = 0; i < p->k * p->dim; i++) loss += 0.5 * l2 * (double)p->w[i] * p->w[i];
    return loss;
}

static void random_problem(ac_presence *p, float **x, uint8_t **y, int n, int dim, unsigned long long seed) {
    ac_err err;
    ac_presence_init(p, 2, dim, two_groups, "{}", &err);
    *x = malloc(sizeof **x * (size_t)n * dim);
    *y = malloc((size_t)n * 2);
    for (int i = 0; i < n * dim; i++) (*x)[i] = (float)(urand(&seed) * 2 - 1);
    for (int i = 0; i < 2 * dim; i++) p->w[i] = (float)(urand(&seed) - 0.5);
    p->b[0] = 0.3f, p->b[1] = -0.2f;
    for (int i = 0; i < n * 2; i++) (*y)[i] = urand(&seed) < 0.4;
}

static void test_gradient_finite_differences(void) {
    enum { N = 7, D = 5 };
    ac_presence p;
    float *x;
    uint8_t *y;
    random_problem(&p, &x, &y, N, D, 11);
    const float l2 = 0.05f;
    float prob[N * 2], dw[2 * D], db[2];
    ac_presence_forward(&p, x, N, prob);
    const double loss = ac_presence_backward(&p, x, prob, y, N, l2, dw, db);
    CHECK_NEAR(loss, ref_loss(&p, x, y, N, l2), 1e-6);
    for (int i = 0; i < 2 * D + 2; i++) {
        float *v = i < 2 * D ? &p.w[i] : &p.b[i - 2 * D];
        const float keep = *v, h = 1e-3f;
        *v = keep + h;
        const double up = ref_loss(&p, x, y, N, l2);
        *v = keep - h;
        const double down = ref_loss(&p, x, y, N, l2);
        *v = keep;
        const double fd = (up - down) / (2 * h), an = i < 2 * D ? dw[i] : db[i - 2 * D];
        CHECKF(fabs(fd - an) <= 1e-4 + 1e-3 * fabs(fd), "parameter %d: analytic %.7g, finite differences %.7g", i, an, fd);
    }
    ac_presence_free(&p);
    free(x), free(y);
}

/* The loss is convex: the fit must end where its gradient vanishes, and no nearby point may be lower. */
static void test_fit_reaches_the_optimum(void) {
    enum { N = 300, D = 4 };
    ac_presence p;
    float *x;
    uint8_t *y;
    random_problem(&p, &x, &y, N, D, 5);
    for (int i = 0; i < N; i++) /* labels that depend on x, with noise */
        y[i * 2] = (x[i * D] + 0.5 * x[i * D + 1] + 0.3 * ((i * 7919) % 11 - 5) / 5.0) > 0;
    ac_presence_fit_opts o = ac_presence_fit_defaults();
    o.steps = 3000, o.lr = 0.02f, o.l2 = 0.01f;
    ac_err err;
    double loss;
    CHECKF(ac_presence_fit(&p, x, y, N, &o, &loss, &err) == 0, "%s", err.msg);
    CHECK_NEAR(loss, ref_loss(&p, x, y, N, o.l2), 1e-5); /* the loss of the head it returns */
    float prob[N * 2], dw[2 * D], db[2];
    ac_presence_forward(&p, x, N, prob);
    ac_presence_backward(&p, x, prob, y, N, o.l2, dw, db);
    double gn = 0;
    for (int i = 0; i < 2 * D; i++) gn += (double)dw[i] * dw[i];
    for (int i = 0; i < 2; i++) gn += (double)db[i] * db[i];
    CHECKF(sqrt(gn) < 1e-4, "gradient norm %.3g at the end of the fit", sqrt(gn));
    const double best = ref_loss(&p, x, y, N, o.l2);
    unsigned long long s = 3;
    for (int t = 0; t < 200; t++) {
        ac_presence q = p;
        float w[2 * D], b[2];
        for (int i = 0; i < 2 * D; i++) w[i] = p.w[i] + (float)((urand(&s) - 0.5) * 0.02);
        for (int i = 0; i < 2; i++) b[i] = p.b[i] + (float)((urand(&s) - 0.5) * 0.02);
        q.w = w, q.b = b;
        CHECKF(ref_loss(&q, x, y, N, o.l2) >= best - 1e-9, "a perturbed point is lower: %.9f < %.9f",
               ref_loss(&q, x, y, N, o.l2), best);
    }
    /* no steps: the head as given, and its loss */
    float w0[2 * D], b0[2];
    memcpy(w0, p.w, sizeof w0), memcpy(b0, p.b, sizeof b0);
    o.steps = 0;
    CHECKF(ac_presence_fit(&p, x, y, N, &o, &loss, &err) == 0, "%s", err.msg);
    CHECK(!memcmp(w0, p.w, sizeof w0) && !memcmp(b0, p.b, sizeof b0));
    CHECK_NEAR(loss, best, 1e-5);
    /* the first group separates: its training accuracy is high */
    int right = 0;
    for (int i = 0; i < N; i++) right += (prob[i * 2] >= 0.5f) == y[i * 2];
    CHECKF(right > N * 85 / 100, "%d of %d right", right, N);
    ac_presence_free(&p);
    free(x), free(y);
}

static void test_rows_pool_windows(void) {
    enum { H = 2, W = 3, D = 2 };
    float ann[H * W * D];
    for (int i = 0; i < H * W * D; i++) ann[i] = (float)i;
    ac_presence p;
    ac_err err;
    CHECK(ac_presence_init(&p, 2, D, two_groups, "{}", &err) == 0);
    p.w[0] = 1, p.w[1] = 0, p.w[2] = 0, p.w[3] = 1; /* logits = the pooled vector itself */
    p.b[0] = -5, p.b[1] = -6;
    const ac_grid_window win = {1, 1, 1, 2}; /* cells (1,1) and (1,2): channel 0 = 8 and 10 */
    float prob[4];
    CHECKF(ac_presence_rows(&p, ann, H, W, &win, 1, prob, &err) == 0, "%s", err.msg);
    /* whole: channel 0 mean of 0,2,...,10 = 5; channel 1 mean = 6 -> both logits 0 */
    CHECK_NEAR(prob[0], 0.5, 1e-6);
    CHECK_NEAR(prob[1], 0.5, 1e-6);
    CHECK_NEAR(prob[2], 1 / (1 + exp(-(9.0 - 5))), 1e-6);
    CHECK_NEAR(prob[3], 1 / (1 + exp(-(10.0 - 6))), 1e-6);
    const ac_grid_window bad = {1, 2, 1, 2};
    CHECK(ac_presence_rows(&p, ann, H, W, &bad, 1, prob, &err) == -1);
    CHECK(strstr(err.msg, "outside") != NULL);
    ac_presence_free(&p);
}

static void test_file_round_trip_and_hostile(void) {
    ac_presence p, q;
    ac_err err;
    CHECK(ac_presence_init(&p, 2, 3, two_groups, "{\"file\":\"m.tflite\"}", &err) == 0);
    for (int i = 0; i < 6; i++) p.w[i] = 0.25f * (float)(i - 2);
    p.b[0] = 1.5f, p.b[1] = -0.75f; /* exact in float16 */
    const char *path = "/tmp/attncap_test_presence.safetensors";
    CHECKF(ac_presence_save(&p, path, 1, "{\"photos\":3}", &err) == 0, "%s", err.msg);
    CHECKF(ac_presence_load(path, &q, &err) == 0, "%s", err.msg);
    CHECK(q.k == 2 && q.dim == 3 && !memcmp(p.w, q.w, sizeof(float) * 6) && !memcmp(p.b, q.b, sizeof(float) * 2));
    CHECK(!strcmp(q.groups[0].name, "person") && q.groups[0].n_forms == 2 && !strcmp(q.groups[0].forms[1], "men"));
    CHECK(q.groups[0].prior == 0.75f && q.groups[1].prior == 0); /* 0: not recorded, and not written */
    CHECK(!strcmp(q.encoder_json, "{\"file\":\"m.tflite\"}"));
    ac_presence_free(&q);
    /* hostile: a NaN weight, too few groups, no format, an extra tensor */
    struct { const char *groups, *format; float w0; int extra; const char *want; } cases[] = {
        {NULL, "attncap-presence-1", NAN, 0, "not finite"},
        {"[{\"name\":\"person\",\"forms\":[\"man\"]}]", "attncap-presence-1", 0, 0, "groups"},
        {"[{\"name\":\"a\",\"forms\":[]},{\"name\":\"b\",\"forms\":[\"b\"]}]", "attncap-presence-1", 0, 0, "forms"},
        {NULL, "attncap-decoder-1", 0, 0, "not a presence head"},
        {NULL, "attncap-presence-1", 0, 1, "exactly the tensors"},
        {"[{\"name\":\"a\",\"forms\":[\"a\"],\"prior\":1.5},{\"name\":\"b\",\"forms\":[\"b\"]}]", "attncap-presence-1", 0, 0, "prior"},
        {"[{\"name\":\"a\",\"forms\":[\"a\"],\"prior\":\"high\"},{\"name\":\"b\",\"forms\":[\"b\"]}]", "attncap-presence-1", 0, 0, "prior"},
    };
    for (size_t c = 0; c < sizeof cases / sizeof *cases; c++) {
        ac_st_writer w;
        ac_st_writer_init(&w);
        float wv[6] = {cases[c].w0, 0, 0, 0, 0, 0}, bv[2] = {0, 0};
        const int64_t ws[2] = {2, 3}, bs[1] = {2};
        ac_st_writer_add(&w, "w", AC_ST_F32, 2, ws, wv, &err);
        ac_st_writer_add(&w, "b", AC_ST_F32, 1, bs, bv, &err);
        if (cases[c].extra) ac_st_writer_add(&w, "c", AC_ST_F32, 1, bs, bv, &err);
        ac_st_writer_meta(&w, "format", cases[c].format, &err);
        ac_st_writer_meta(&w, "groups",
                          cases[c].groups ? cases[c].groups
                                          : "[{\"name\":\"person\",\"forms\":[\"man\"]},{\"name\":\"dog\",\"forms\":[\"dog\"]}]",
                          &err);
        CHECK(ac_st_write(&w, path, &err) == 0);
        ac_st_writer_free(&w);
        CHECKF(ac_presence_load(path, &q, &err) == -1, "case %zu loaded", c);
        CHECKF(strstr(err.msg, cases[c].want) && strstr(err.msg, path), "case %zu: %s", c, err.msg);
        CHECK(q.w == NULL && q.k == 0);
    }
    remove(path);
    ac_presence_free(&p);
}

/* Labels: present when at least 2 references name the category; forms: synonyms and plurals. */
static void test_set_labels_and_forms(void) {
    char *caps_a[] = {"a man and a cat", "two men with a kitten", "a cat on a sofa"},
         *caps_b[] = {"a dog runs", "a man and a dog"}, *caps_c[] = {"a bus"};
    ac_ds_image ims[3] = {{.key = "a.jpg", .split = AC_SPLIT_TRAIN, .n_caps = 3, .caps = caps_a},
                          {.key = "b.jpg", .split = AC_SPLIT_TRAIN, .n_caps = 2, .caps = caps_b},
                          {.key = "c.jpg", .split = AC_SPLIT_VAL, .n_caps = 1, .caps = caps_c}};
    ac_dataset ds = {.n = 3, .images = ims};
    enum { D = 2 };
    char *keys[] = {"a.jpg", "b.jpg", "c.jpg"};
    float data[3 * 4 * D];
    for (int i = 0; i < 3 * 4 * D; i++) data[i] = (float)i;
    ac_feature_cache fc = {.n = 3, .keys = keys, .grid_h = 2, .grid_w = 2, .dim = D, .data = data};
    ac_presence_set s;
    ac_err err;
    CHECKF(ac_presence_set_build(&fc, &ds, 1, AC_SPLIT_TRAIN, &s, &err) == 0, "%s", err.msg);
    CHECK(s.n == 2);
    const int person = ac_object_index("person"), cat = ac_object_index("cat"), dog = ac_object_index("dog");
    CHECK(s.y[person] == 1 && s.y[cat] == 1);               /* a: man/men in 2, cat/kitten in 3 */
    CHECK(s.y[AC_N_OBJECTS + person] == 0 && s.y[AC_N_OBJECTS + dog] == 1); /* b: man in 1 of 2, dog in 2 */
    CHECK(s.positives[person] == 1 && s.positives[dog] == 1 && s.positives[cat] == 1);
    CHECK_NEAR(s.x[0], (0 + 2 + 4 + 6) / 4.0, 1e-6);       /* a's whole-grid mean, channel 0 */
    CHECK_NEAR(s.x[D + 1], (9 + 11 + 13 + 15) / 4.0, 1e-6); /* b's, channel 1 */
    ac_presence_group *g;
    int cats[AC_N_OBJECTS];
    uint8_t *y;
    CHECK(ac_presence_set_groups(&s, 2, &g, cats, &y, &err) == 0 && !g);
    const int k = ac_presence_set_groups(&s, 1, &g, cats, &y, &err);
    CHECK(k == 3 && cats[0] == person && cats[1] == cat && cats[2] == dog);
    CHECK(y[0] == 1 && y[1] == 1 && y[2] == 0 && y[3] == 0 && y[4] == 0 && y[5] == 1);
    CHECK(g[0].prior == 0.5f && g[1].prior == 0.5f && g[2].prior == 0.5f); /* each in 1 of the 2 train photos */
    uint8_t *y2;
    float prior[2];
    const int dog_person[2] = {dog, person};
    CHECK(ac_presence_set_labels(&s, dog_person, 2, &y2, prior, &err) == 0);
    CHECK(y2[0] == 0 && y2[1] == 1 && y2[2] == 1 && y2[3] == 0 && prior[0] == 0.5f && prior[1] == 0.5f);
    free(y2);
    int has_men = 0, has_man = 0, has_surfers = 0, has_individual = 0;
    for (int f = 0; f < g[0].n_forms; f++)
        has_men |= !strcmp(g[0].forms[f], "men"), has_man |= !strcmp(g[0].forms[f], "man"),
            has_surfers |= !strcmp(g[0].forms[f], "surfers"), has_individual |= !strcmp(g[0].forms[f], "individual");
    CHECK(has_man && has_men);
    CHECK(has_surfers && has_individual); /* every synonym: the last of the list too */
    ac_presence_groups_free(g, k);
    free(y);
    ac_presence_set_free(&s);
}

int main(void) {
    RUN(test_gradient_finite_differences);
    RUN(test_fit_reaches_the_optimum);
    RUN(test_rows_pool_windows);
    RUN(test_file_round_trip_and_hostile);
    RUN(test_set_labels_and_forms);
    return TEST_EXIT();
}
