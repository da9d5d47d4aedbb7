/* Grounding: the exact union-of-boxes geometry against a fine raster of the same boxes, the
 * pointing game on hand-made maps, the box-file reader's errors, and teacher-forced attention
 * against beam search's own attention for the caption it produced. */
#include <unistd.h>

#include "attncap/beam.h"
#include "attncap/grounding.h"
#include "test.h"

/* The reference: rasterise the unit square at R x R points (pixel centres) and count. */
#define R 2000
static int inside(const ac_box *b, int n, double x, double y) {
    for (int i = 0; i < n; i++)
        if (x > b[i].x0 && x < b[i].x1 && y > b[i].y0 && y < b[i].y1) return 1;
    return 0;
}
static double raster_mass(const float *alpha, int gh, int gw, const ac_box *b, int n) {
    double mass = 0;
    for (int py = 0; py < R; py++)
        for (int px = 0; px < R; px++) {
            double x = (px + 0.5) / R, y = (py + 0.5) / R;
            if (inside(b, n, x, y)) mass += alpha[(int)(y * gh) * gw + (int)(x * gw)] * ((double)gh * gw) / ((double)R * R);
        }
    return mass;
}

static const ac_box three[] = {{0.10f, 0.20f, 0.55f, 0.60f}, {0.40f, 0.50f, 0.90f, 0.95f}, {0.45f, 0.05f, 0.52f, 0.12f}};

static void test_area_matches_raster(void) {
    float uniform[49];
    for (int i = 0; i < 49; i++) uniform[i] = 1.0f / 49;
    double area = ac_ground_area(three, 3);
    /* by hand: 0.45*0.4 + 0.5*0.45 - overlap 0.15*0.1 + 0.07*0.07 */
    CHECK_NEAR(area, 0.18 + 0.225 - 0.015 + 0.0049, 1e-6);
    CHECK_NEAR(raster_mass(uniform, 7, 7, three, 3), area, 2e-3);
    /* an even map puts exactly the area inside */
    CHECK_NEAR(ac_ground_mass(uniform, 7, 7, three, 3), area, 1e-6);
    /* boxes beyond the square are clipped */
    ac_box big = {0, 0, 1, 1};
    CHECK_NEAR(ac_ground_area(&big, 1), 1.0, 1e-9);
}

static void test_mass_matches_raster(void) {
    float alpha[14 * 14];
    unsigned s = 12345;
    double sum = 0;
    for (int i = 0; i < 196; i++) {
        s = s * 1103515245u + 12345u;
        alpha[i] = (float)((s >> 8) & 0xffff) / 65536.0f;
        alpha[i] = alpha[i] * alpha[i] * alpha[i]; /* peaky, like real attention */
        sum += alpha[i];
    }
    for (int i = 0; i < 196; i++) alpha[i] = (float)(alpha[i] / sum);
    CHECK_NEAR(ac_ground_mass(alpha, 14, 14, three, 3), raster_mass(alpha, 14, 14, three, 3), 2e-3);
    /* a non-square grid */
    CHECK_NEAR(ac_ground_mass(alpha, 7, 28, three, 2), raster_mass(alpha, 7, 28, three, 2), 2e-3);
}

static void test_one_hot(void) {
    float a[16] = {0};
    a[1 * 4 + 2] = 1; /* row 1, column 2: x in [0.5, 0.75], y in [0.25, 0.5] */
    ac_box half = {0.5f, 0.25f, 0.625f, 0.5f};
    CHECK_NEAR(ac_ground_mass(a, 4, 4, &half, 1), 0.5, 1e-6);
    CHECK(ac_ground_hit(a, 4, 4, &half, 1) == 1);
    ac_box beside = {0.75f, 0.25f, 1.0f, 0.5f}; /* touches the cell's edge only */
    CHECK_NEAR(ac_ground_mass(a, 4, 4, &beside, 1), 0.0, 1e-9);
    CHECK(ac_ground_hit(a, 4, 4, &beside, 1) == 0);
    /* chance: the box overlaps 1 of 16 cells; a box straddling four cells overlaps 4 */
    CHECK_NEAR(ac_ground_hit_chance(4, 4, &half, 1), 1.0 / 16, 1e-9);
    ac_box mid = {0.4f, 0.4f, 0.6f, 0.6f};
    CHECK_NEAR(ac_ground_hit_chance(4, 4, &mid, 1), 4.0 / 16, 1e-9);
}

static int write_file(const char *path, const char *text) {
    FILE *f = fopen(path, "w");
    if (!f) return -1;
    fputs(text, f);
    return fclose(f);
}

static void test_box_file(void) {
    char path[4096];
    snprintf(path, sizeof path, "%s/boxes_%d.tsv", test_tmpdir(), (int)getpid());
    ac_ground_set set;
    ac_err err;
    CHECK(write_file(path, "# comment\n\nphoto.jpg\tDog, dogs\t0.1,0.2,0.3,0.4 0.5,0.5,1,1\r\nb.jpg\tkite\t0,0,1,1\n") == 0);
    CHECKF(ac_ground_load(path, &set, &err) == 0, "%s", err.msg);
    CHECK(set.n == 2 && set.obj[0].n_words == 2 && set.obj[0].n_boxes == 2 && set.obj[1].n_boxes == 1);
    CHECK(ac_ground_names(&set.obj[0], "dog") && ac_ground_names(&set.obj[0], "dogs"));
    CHECK(!ac_ground_names(&set.obj[0], "cat"));
    CHECK_NEAR(set.obj[0].boxes[1].x1, 1.0, 0);
    ac_ground_free(&set);
    static const struct {
        const char *text, *msg;
    } bad[] = {
        {"a.jpg\tdog\t0.1,0.2,0.3\n", ":1: boxes"},
        {"# c\n\na.jpg\tdog\t0.3,0.2,0.1,0.4\n", ":3: boxes"},  /* x1 < x0; the line number counts blanks */
        {"a.jpg\tdog\t0,0,1.5,1\n", ":1: boxes"},             /* outside 0..1 */
        {"a.jpg\tdog\tnan,0,1,1\n", ":1: boxes"},
        {"a.jpg\tdog\n", ":1: expected"},
        {"a.jpg\t\t0,0,1,1\n", ":1: no words"},
        {"\tdog\t0,0,1,1\n", ":1: empty photo"},
        {"# only a comment\n", "no objects"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        CHECK(write_file(path, bad[i].text) == 0);
        CHECKF(ac_ground_load(path, &set, &err) == -1 && strstr(err.msg, bad[i].msg) && strstr(err.msg, path),
               "case %zu: %s", i, err.msg);
    }
    unlink(path);
    CHECK(ac_ground_load(path, &set, &err) == -1 && strstr(err.msg, path));
}

/* Teacher forcing the caption beam search returned gives beam search's attention, bit for bit. */
static void test_attend_matches_beam(void) {
    ac_decoder_config cfg = {.vocab = 40, .embed = 8, .hidden = 16, .att = 12, .dim = 10, .n_ann = 12,
                             .grid_h = 3, .grid_w = 4};
    ac_decoder dec;
    ac_err err;
    CHECKF(ac_decoder_init(&dec, &cfg, 7, &err) == 0, "%s", err.msg);
    for (int i = 0; i < cfg.embed * cfg.vocab; i++) dec.out_lo[i] *= 8;
    for (int i = 0; i < cfg.dim * cfg.att; i++) dec.att_wa[i] *= 4;
    float ann[12 * 10];
    for (int i = 0; i < 120; i++) ann[i] = (float)((i * 37) % 17) / 17.0f;
    ac_beam_opts o = ac_beam_defaults();
    o.max_len = 8;
    ac_caption cap;
    CHECKF(ac_beam_search(&dec, ann, &o, &cap, &err) == 0, "%s", err.msg);
    float alpha[9 * 12], beta[9];
    double lp = 0;
    int rc = ac_decoder_attend(&dec, ann, cap.words, cap.n, alpha, beta, &lp, &err);
    int same = rc == 0 && !memcmp(alpha, cap.alpha, (size_t)(cap.n + 1) * 12 * sizeof *alpha) &&
               !memcmp(beta, cap.beta, (size_t)(cap.n + 1) * sizeof *beta);
    double lp_beam = cap.logprob;
    int bad_id = cap.words[0];
    cap.words[0] = 40;
    int rc_bad = ac_decoder_attend(&dec, ann, cap.words, cap.n, alpha, NULL, NULL, &err);
    cap.words[0] = bad_id;
    int n = cap.n;
    ac_caption_free(&cap);
    ac_decoder_free(&dec);
    CHECK(n > 0);
    CHECK(same);
    CHECK_NEAR(lp, lp_beam, 1e-9 * fabs(lp_beam));
    CHECK(rc_bad == -1 && strstr(err.msg, "word id 40"));
}

int main(void) {
    RUN(test_area_matches_raster);
    RUN(test_mass_matches_raster);
    RUN(test_one_hot);
    RUN(test_box_file);
    RUN(test_attend_matches_beam);
    return TEST_EXIT();
}
