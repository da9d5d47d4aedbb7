/* Grounding: the exact union-of-boxes geometry against a fine raster of the same boxes, the
 * pointing game on hand-made maps, the box-file reader's errors, a regions model's rows (cells, then
 * regions) against a raster of their density, detections as objects, and teacher-forced attention
 * against beam search's own attention for the caption it produced. */
#include <unistd.h>

#include "attncap/beam.h"
#include "attncap/grounding.h"
#include "attncap/objects.h"
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

/* A row over 7x7 cells then 3 regions: its mass against a raster of the density (a cell's weight spread
 * over the cell, a region's over its box), on the second of two rows (the stride). */
static void test_row_mass_regions(void) {
    enum { GH = 7, GW = 7, G = GH * GW, NR = 3 };
    const ac_region reg[NR] = {{0.12f, 0.25f, 0.50f, 0.55f, 0.9f, 17}, /* inside box 0 of `three`, */
                               {0.30f, 0.40f, 0.80f, 0.70f, 0.5f, 0},  /* across its edges, */
                               {0.70f, 0.02f, 0.95f, 0.15f, 0.4f, 5}}; /* outside */
    float rows[2 * (G + NR)] = {0};
    unsigned s = 777;
    double sum = 0;
    float *row = rows + G + NR;
    for (int i = 0; i < G + NR; i++) {
        s = s * 1103515245u + 12345u;
        row[i] = (float)((s >> 8) & 0xffff) / 65536.0f;
        if (i >= G) row[i] *= 6; /* regions carry as much as a few cells */
        sum += row[i];
    }
    for (int i = 0; i < G + NR; i++) row[i] = (float)(row[i] / sum);
    double want = 0;
    for (int py = 0; py < R; py++)
        for (int px = 0; px < R; px++) {
            double x = (px + 0.5) / R, y = (py + 0.5) / R;
            if (!inside(three, 3, x, y)) continue;
            double d = row[(int)(y * GH) * GW + (int)(x * GW)] * G;
            for (int r = 0; r < NR; r++)
                if (x > reg[r].x0 && x < reg[r].x1 && y > reg[r].y0 && y < reg[r].y1)
                    d += row[G + r] / ((double)(reg[r].x1 - reg[r].x0) * (reg[r].y1 - reg[r].y0));
            want += d / ((double)R * R);
        }
    const ac_ground_attention att = {rows, GH, GW, NR, reg};
    CHECK_NEAR(ac_ground_row_mass(&att, 1, three, 3), want, 2e-3);
    /* against the first box alone: all of the first region's weight, a third of the second's, none of the third's */
    CHECK_NEAR(ac_ground_row_mass(&att, 1, three, 1) - ac_ground_mass(row, GH, GW, three, 1),
               row[G] + row[G + 1] * (0.25 * 0.20) / (0.50 * 0.30), 1e-5); /* the second: a third of its box */
    /* the pointing game: a region with the largest weight hits when its box overlaps the union */
    float peak[G + NR] = {0};
    peak[G + 2] = 1;
    const ac_ground_attention one = {peak, GH, GW, NR, reg};
    CHECK(ac_ground_row_hit(&one, 0, three, 3) == 0);
    peak[G + 2] = 0, peak[G + 1] = 1;
    CHECK(ac_ground_row_hit(&one, 0, three, 3) == 1);
    peak[G + 1] = 0.5f, peak[6] = 0.7f; /* cell (0, 6): x 6/7..1, y 0..1/7: outside the union */
    CHECK(!ac_ground_row_hit(&one, 0, three, 3) && !ac_ground_hit(peak, GH, GW, three, 3));
}

/* Detections become one object per COCO category, boxes as fractions of the photo, words matched by
 * category; a label COCO has not is left out, a category not found has no boxes. */
static void test_detected_objects(void) {
    const char *labels[] = {"person", "horse", "unicorn", "dining table"};
    ac_detection items[] = {{20, 10, 120, 90, 0.9f, 1}, {150, 0, 260, 50, 0.8f, 1}, /* horses, one past the edge */
                            {0, 0, 100, 100, 0.7f, 2},                          /* no COCO category */
                            {50, 40, 90, 100, 0.6f, 0}, {10, 10, 30, 30, 0.5f, 3}};
    ac_detections d = {5, items, 200, 100};
    ac_ground_set set = {0};
    ac_err err;
    CHECKF(ac_ground_add_detected(&set, "p.jpg", &d, labels, 4, &err) == 0, "%s", err.msg);
    CHECK(set.n == 80);
    const int horse = ac_object_index("horse"), dog = ac_object_index("dog"), table = ac_object_index("dining table");
    int boxes = 0;
    for (int k = 0; k < set.n; k++) {
        boxes += set.obj[k].n_boxes;
        CHECK(set.obj[k].category == k && !strcmp(set.obj[k].photo, "p.jpg"));
    }
    CHECK(boxes == 4);
    const ac_ground_object *h = &set.obj[horse];
    CHECK(h->n_boxes == 2 && !strcmp(h->words[0], "horse"));
    CHECK_NEAR(h->boxes[0].x0, 0.1, 1e-6);
    CHECK_NEAR(h->boxes[0].y1, 0.9, 1e-6);
    CHECK_NEAR(h->boxes[1].x0, 0.75, 1e-6);
    CHECK_NEAR(h->boxes[1].x1, 1.0, 0); /* clipped */
    CHECK(set.obj[dog].n_boxes == 0 && set.obj[table].n_boxes == 1 && set.obj[0].n_boxes == 1);
    CHECK(ac_ground_names(h, "horses") && ac_ground_names(h, "horse") && !ac_ground_names(h, "dog"));
    CHECK(ac_ground_names(&set.obj[0], "man") && ac_ground_names(&set.obj[0], "people"));
    CHECK(ac_ground_names(&set.obj[table], "table") && !ac_ground_names(&set.obj[table], "a"));
    CHECK(ac_ground_word_category("giraffes") == ac_object_index("giraffe") && ac_ground_word_category("the") == -1);
    CHECK(ac_ground_first_of_photo(&set, 0) && !ac_ground_first_of_photo(&set, 1));
    CHECK(!ac_ground_first_of_photo(&set, 79));
    ac_ground_free(&set);
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
    RUN(test_row_mass_regions);
    RUN(test_detected_objects);
    RUN(test_attend_matches_beam);
    return TEST_EXIT();
}
