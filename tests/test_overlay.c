/* Overlays: the map peaks where alpha does, written PNGs read back with libpng have the expected
 * size, the hottest region of each written overlay lies in the attended cell, text leaves ink,
 * existing output directories are refused unless forced. */
#include <png.h>
#include <turbojpeg.h>
#include <sys/stat.h>
#include <unistd.h>

#include "attncap/overlay.h"
#include "overlay_internal.h" /* the sheet's layout */
#include "test.h"

static char tmp[4096];
static const char *tmpdir(void) {
    const char *t = getenv("ATTNCAP_TEST_TMP");
    snprintf(tmp, sizeof tmp, "%s", t && *t ? t : "/tmp");
    return tmp;
}

/* Reads an RGB PNG with libpng's simplified API (independent of our writer). */
static unsigned char *png_read_rgb(const char *path, int *w, int *h) {
    png_image im;
    memset(&im, 0, sizeof im);
    im.version = PNG_IMAGE_VERSION;
    if (!png_image_begin_read_from_file(&im, path)) return NULL;
    im.format = PNG_FORMAT_RGB;
    unsigned char *buf = malloc(PNG_IMAGE_SIZE(im));
    if (!buf || !png_image_finish_read(&im, NULL, buf, 0, NULL)) {
        free(buf);
        png_image_free(&im);
        return NULL;
    }
    *w = (int)im.width, *h = (int)im.height;
    return buf;
}

/* A textured photo: a gradient with stripes, so overlay colour is not trivially uniform. */
static ac_image photo(int w, int h) {
    ac_image im = {w, h, malloc((size_t)w * h * 3)};
    for (int y = 0; y < h; y++)
        for (int x = 0; x < w; x++) {
            uint8_t *p = im.px + ((size_t)y * w + x) * 3;
            p[0] = (uint8_t)(60 + 100 * x / w), p[1] = (uint8_t)(80 + ((x / 7 + y / 5) % 2) * 40), p[2] = (uint8_t)(140 - 60 * y / h);
        }
    return im;
}

/* Luminance argmax of an RGB buffer, with its value. */
static void brightest(const unsigned char *px, int w, int h, int *bx, int *by) {
    double best = -1;
    for (int y = 0; y < h; y++)
        for (int x = 0; x < w; x++) {
            const unsigned char *p = px + ((size_t)y * w + x) * 3;
            double l = 0.299 * p[0] + 0.587 * p[1] + 0.114 * p[2];
            if (l > best) best = l, *bx = x, *by = y;
        }
}

static void map_peaks_in_cell(void) {
    int gh = 4, gw = 5, w = 250, h = 160;
    float alpha[20], *map = malloc((size_t)w * h * sizeof *map);
    for (int cell = 0; cell < gh * gw; cell++) {
        memset(alpha, 0, sizeof alpha);
        alpha[cell] = 1;
        ac_attention_map(alpha, gh, gw, 0.6f, w, h, map);
        int ci = cell / gw, cj = cell % gw, bx = 0, by = 0;
        float mx = -1, mn = 2;
        for (int y = 0; y < h; y++)
            for (int x = 0; x < w; x++) {
                float v = map[y * w + x];
                if (v > mx) mx = v, bx = x, by = y;
                if (v < mn) mn = v;
            }
        CHECK_NEAR(mx, 1.0, 1e-5);
        CHECK(mn >= 0);
        CHECKF(bx * gw / w == cj && by * gh / h == ci, "cell %d: peak at (%d, %d)", cell, bx, by);
        /* far cells get (almost) nothing: the blur is about half a cell */
        int fx = ((cj + 2) % gw) * w / gw + w / (2 * gw), fy = ((ci + 2) % gh) * h / gh + h / (2 * gh);
        CHECKF(map[fy * w + fx] < 0.02f, "cell %d: %g two cells away", cell, map[fy * w + fx]);
        CHECK(mn == 0);
    }
    /* uniform attention: a flat map, nothing highlighted; 1% ripples are not stretched to full range */
    for (int i = 0; i < 20; i++) alpha[i] = 0.05f;
    ac_attention_map(alpha, gh, gw, 0.6f, w, h, map);
    for (int i = 0; i < w * h; i++) CHECK_NEAR(map[i], 0.0, 1e-3);
    alpha[7] = 0.0505f;
    ac_attention_map(alpha, gh, gw, 0.6f, w, h, map);
    float top = 0;
    for (int i = 0; i < w * h; i++) top = map[i] > top ? map[i] : top;
    CHECKF(top < 0.25f, "a 1%% ripple became %g", top);
    free(map);
}

static void font_ink(void) {
    ac_font *f;
    ac_err err;
    if (!ac_is_file(AC_DEFAULT_FONT)) SKIP("needs %s (fonts-dejavu-core)", AC_DEFAULT_FONT);
    CHECKF(ac_font_load(NULL, &f, &err) == 0, "%s", err.msg);
    ac_image im = {120, 40, malloc(120 * 40 * 3)};
    memset(im.px, 255, 120 * 40 * 3);
    static const uint8_t black[3] = {0, 0, 0};
    int wd = ac_font_width(f, 20, "dog");
    CHECK(wd > 20 && wd < 60);
    CHECK(ac_font_width(f, 40, "dog") > wd * 3 / 2);
    CHECK(ac_font_width(f, 20, "") == 0);
    CHECK(ac_font_draw(f, &im, 5, 5, 20, "dog", black) == wd);
    int ink = 0, minx = 999, maxx = -1;
    for (int y = 0; y < 40; y++)
        for (int x = 0; x < 120; x++)
            if (im.px[(y * 120 + x) * 3] < 128) ink++, minx = x < minx ? x : minx, maxx = x > maxx ? x : maxx;
    CHECKF(ink > 60, "only %d inked pixels", ink);
    CHECK(minx >= 5 && maxx <= 5 + wd + 1);
    /* UTF-8 (Vietnamese) and invalid bytes render without crashing */
    CHECK(ac_font_width(f, 20, "con ch\xc3\xb3 \xc4\x91i") > 0);
    CHECK(ac_font_width(f, 20, "\xff\xc3") > 0);
    ac_font_draw(f, &im, 100, 30, 30, "clipped at the edge", black);
    free(im.px);
    ac_font_free(f);
    CHECK(ac_font_load("/nonexistent/font.ttf", &f, &err) == -1 && strstr(err.msg, "fonts-dejavu-core"));
    char p[4200];
    snprintf(p, sizeof p, "%s/notafont.ttf", tmpdir());
    CHECK(ac_write_file_atomic(p, "hello world, not a font", 23, &err) == 0);
    CHECK(ac_font_load(p, &f, &err) == -1 && strstr(err.msg, "TrueType"));
}

static void png_roundtrip(void) {
    ac_image im = photo(37, 23);
    ac_err err;
    char p[4200];
    snprintf(p, sizeof p, "%s/rt.png", tmpdir());
    CHECKF(ac_png_write(p, &im, &err) == 0, "%s", err.msg);
    int w, h;
    unsigned char *px = png_read_rgb(p, &w, &h);
    CHECK(px && w == 37 && h == 23);
    CHECK(!memcmp(px, im.px, 37 * 23 * 3));
    free(px);
    free(im.px);
    CHECK(ac_png_write("/nonexistent-dir/x.png", &im, &err) == -1 && strstr(err.msg, "/nonexistent-dir/x.png"));
}

static void overlays_written(void) {
    if (!ac_is_file(AC_DEFAULT_FONT)) SKIP("needs %s (fonts-dejavu-core)", AC_DEFAULT_FONT);
    ac_vocab *v;
    ac_err err;
    CHECKF(ac_vocab_from_json("[\"<pad>\",\"<start>\",\"<end>\",\"<unk>\",\"a\",\"dog\",\"on/off\",\"grass\"]", &v, &err) == 0,
           "%s", err.msg);
    int gh = 3, gw = 4, L = 12, words[] = {4, 5, 6, 7}, cells[] = {0, 6, 11, 5, 3};
    float alpha[5 * 12] = {0};
    for (int t = 0; t < 5; t++) {
        for (int i = 0; i < L; i++) alpha[t * L + i] = 0.01f;
        alpha[t * L + cells[t]] = 0.89f;
    }
    ac_caption cap = {.n = 4, .words = words, .alpha = alpha};
    ac_image im = photo(600, 400);
    char dir[4200];
    snprintf(dir, sizeof dir, "%s/ov", tmpdir());
    for (int style = 0; style < 2; style++) {
        ac_overlay_opts o = ac_overlay_defaults();
        o.max_side = 300, o.style = (ac_overlay_style)style, o.force = style == 1;
        char **paths;
        int n;
        CHECKF(ac_overlays_write(dir, "photo", &im, &cap, v, gh, gw, &o, NULL, &paths, &n, &err) == 0, "%s", err.msg);
        CHECK(n == 5);
        CHECK(strstr(paths[0], "/photo/01_a.png") && strstr(paths[2], "/photo/03_on_off.png"));
        CHECK(strstr(paths[4], "/photo/sheet.png"));
        for (int t = 0; t < 4; t++) {
            int w, h, bx = 0, by = 0;
            unsigned char *px = png_read_rgb(paths[t], &w, &h);
            CHECKF(px, "%s: not a readable PNG", paths[t]);
            /* the photo's 200 rows, then the label band */
            CHECKF(w == 300 && h > 200 + AC_FONT_MIN_PX && h < 200 + 4 * AC_FONT_MIN_PX, "%s: %dx%d", paths[t], w, h);
            brightest(px, w, 200, &bx, &by);
            CHECKF(by * gh / 200 == cells[t] / gw && bx * gw / w == cells[t] % gw,
                   "style %d word %d: brightest pixel (%d, %d) outside cell %d", style, t, bx, by, cells[t]);
            free(px);
        }
        int w, h;
        unsigned char *px = png_read_rgb(paths[4], &w, &h);
        CHECK(px && (w == 300 || h == 300) && w <= 300 && h <= 300);
        free(px);
        for (int i = 0; i < n; i++) free(paths[i]);
        free(paths);
    }
    /* exists: refused without force, nothing written */
    ac_overlay_opts o = ac_overlay_defaults();
    CHECK(ac_overlays_write(dir, "photo", &im, &cap, v, gh, gw, &o, NULL, NULL, NULL, &err) == -1);
    CHECK(strstr(err.msg, "exists") && err.code == AC_ERR_EXISTS && !strstr(err.msg, "--")); /* the CLI names the flag */
    /* a small photo is not enlarged; long side limit obeyed for a big one */
    ac_image small = photo(64, 48);
    CHECKF(ac_overlays_write(dir, "small", &small, &cap, v, gh, gw, &o, NULL, NULL, NULL, &err) == 0, "%s", err.msg);
    char p[4300];
    int w, h;
    snprintf(p, sizeof p, "%s/small/02_dog.png", dir);
    unsigned char *px = png_read_rgb(p, &w, &h);
    CHECK(px && w == 64 && h > 48 && h < 48 + 4 * AC_FONT_MIN_PX);
    free(px);
    snprintf(p, sizeof p, "%s/big", dir);
    ac_image big = photo(1600, 1200);
    CHECKF(ac_overlays_write(dir, "big", &big, &cap, v, gh, gw, &o, NULL, NULL, NULL, &err) == 0, "%s", err.msg);
    snprintf(p, sizeof p, "%s/big/04_grass.png", dir);
    px = png_read_rgb(p, &w, &h);
    CHECK(px && w == 1024 && h > 768 && h < 768 + 200);
    free(px);
    /* an empty caption: just the sheet with the photo */
    ac_caption empty = {.n = 0, .words = words, .alpha = alpha};
    char **ps;
    int np;
    CHECKF(ac_overlays_write(dir, "empty", &small, &empty, v, gh, gw, &o, NULL, &ps, &np, &err) == 0, "%s", err.msg);
    CHECK(np == 1 && strstr(ps[0], "empty/sheet.png"));
    free(ps[0]), free(ps);
    /* unwritable output directory: one error, naming it */
    chmod(dir, 0500);
    int root = access(dir, W_OK) == 0; /* root ignores permissions */
    int rc = ac_overlays_write(dir, "denied", &small, &cap, v, gh, gw, &o, NULL, NULL, NULL, &err);
    chmod(dir, 0700);
    if (!root) CHECK(rc == -1 && strstr(err.msg, "denied"));
    free(im.px), free(small.px), free(big.px);
    ac_vocab_free(v);
}

/* Inked (dark) pixels of rows [y0, y1) of an RGB buffer. */
static int ink_in_rows(const unsigned char *px, int w, int y0, int y1) {
    int n = 0;
    for (int y = y0; y < y1; y++)
        for (int x = 0; x < w; x++) n += px[((size_t)y * w + x) * 3] < 100;
    return n;
}

/* One word, "dog", attending to cell 0 of a 1x2 grid; word_logp may be NULL. */
static ac_caption dog_caption(int *words, float *alpha, float *logp) {
    words[0] = 5;
    alpha[0] = 0.9f, alpha[1] = 0.1f, alpha[2] = 0.5f, alpha[3] = 0.5f;
    return (ac_caption){.n = 1, .words = words, .alpha = alpha, .word_logp = logp};
}

/* Each per-word PNG names its word under the photo; with the search's log-probability, its
 * probability too (more ink); --sheet-only writes the sheet alone; upscale enlarges small photos. */
static void word_labels_sheet_only_upscale(void) {
    if (!ac_is_file(AC_DEFAULT_FONT)) SKIP("needs %s (fonts-dejavu-core)", AC_DEFAULT_FONT);
    ac_vocab *v;
    ac_err err;
    CHECKF(ac_vocab_from_json("[\"<pad>\",\"<start>\",\"<end>\",\"<unk>\",\"a\",\"dog\"]", &v, &err) == 0, "%s", err.msg);
    int words[1];
    float alpha[4], logp[2] = {logf(0.83f), logf(0.9f)};
    ac_image im = photo(64, 48);
    char dir[4200], p[4400];
    snprintf(dir, sizeof dir, "%s/labels", tmpdir());
    int ink[2] = {0, 0};
    for (int with_p = 0; with_p < 2; with_p++) {
        ac_caption cap = dog_caption(words, alpha, with_p ? logp : NULL);
        ac_overlay_opts o = ac_overlay_defaults();
        o.max_side = 300, o.upscale = 1, o.force = 1;
        CHECKF(ac_overlays_write(dir, "up", &im, &cap, v, 1, 2, &o, NULL, NULL, NULL, &err) == 0, "%s", err.msg);
        snprintf(p, sizeof p, "%s/up/01_dog.png", dir);
        int w, h;
        unsigned char *px = png_read_rgb(p, &w, &h);
        CHECKF(px && w == 300 && h > 225, "upscaled to %dx%d, want 300 wide, 225 rows of photo", px ? w : 0, px ? h : 0);
        if (px) {
            for (int x = 0; x < w; x++) CHECK(px[((size_t)(h - 1) * w + x) * 3] == 255); /* the band is white... */
            ink[with_p] = ink_in_rows(px, w, 226, h);                                   /* ...with text in it */
        }
        free(px);
    }
    /* both say the attention's peak and entropy; the probability adds "p 0.83" */
    CHECKF(ink[0] > 30 && ink[1] > ink[0] + 15, "label ink %d, with the probability %d", ink[0], ink[1]);
    ac_caption cap = dog_caption(words, alpha, logp);
    ac_overlay_opts o = ac_overlay_defaults();
    o.sheet_only = 1;
    char **paths;
    int n;
    CHECKF(ac_overlays_write(dir, "only", &im, &cap, v, 1, 2, &o, NULL, &paths, &n, &err) == 0, "%s", err.msg);
    CHECK(n == 1 && strstr(paths[0], "/only/sheet.png"));
    for (int i = 0; i < n; i++) free(paths[i]);
    free(paths);
    snprintf(p, sizeof p, "%s/only/01_dog.png", dir);
    CHECK(!ac_is_file(p));
    free(im.px);
    ac_vocab_free(v);
}

/* A word the naming forced (a tag with forced = 1, naming.h) is marked on its panel: "(forced by
 * naming)" in its per-word file's band (more ink than the same word unforced) and "dog*" with a
 * legend on the sheet (a different sheet); a tag that was not forced marks nothing. */
static void forced_word_marked(void) {
    if (!ac_is_file(AC_DEFAULT_FONT)) SKIP("needs %s (fonts-dejavu-core)", AC_DEFAULT_FONT);
    ac_vocab *v;
    ac_err err;
    CHECKF(ac_vocab_from_json("[\"<pad>\",\"<start>\",\"<end>\",\"<unk>\",\"a\",\"dog\"]", &v, &err) == 0, "%s", err.msg);
    int words[1];
    float alpha[4];
    ac_image im = photo(64, 48);
    char dir[4200], p[4400];
    snprintf(dir, sizeof dir, "%s/forced", tmpdir());
    int ink[3];
    size_t sheet_bytes[3];
    for (int forced = 0; forced < 3; forced++) { /* 0: no tag; 1: the tag "dog" forced; 2: the tag, not forced */
        ac_caption cap = dog_caption(words, alpha, NULL);
        ac_caption_tag tag = {.word = "dog", .forced = forced == 1, .named = 1};
        if (forced) cap.n_tags = 1, cap.tags = &tag;
        ac_overlay_opts o = ac_overlay_defaults();
        o.max_side = 300, o.upscale = 1, o.force = 1;
        CHECKF(ac_overlays_write(dir, "f", &im, &cap, v, 1, 2, &o, NULL, NULL, NULL, &err) == 0, "%s", err.msg);
        snprintf(p, sizeof p, "%s/f/01_dog.png", dir);
        int w, h;
        unsigned char *px = png_read_rgb(p, &w, &h);
        CHECK(px != NULL);
        ink[forced] = ink_in_rows(px, w, 226, h);
        free(px);
        snprintf(p, sizeof p, "%s/f/sheet.png", dir);
        px = png_read_rgb(p, &w, &h);
        CHECK(px != NULL);
        sheet_bytes[forced] = (size_t)w * h;
        unsigned long sum = 0;
        for (size_t i = 0; i < (size_t)w * h * 3; i++) sum += px[i];
        sheet_bytes[forced] = sheet_bytes[forced] * 1000003u + sum;
        free(px);
    }
    CHECKF(ink[1] > ink[0] + 30 && ink[2] == ink[0], "band ink: unforced %d, forced %d, tag not forced %d", ink[0], ink[1], ink[2]);
    CHECKF(sheet_bytes[1] != sheet_bytes[0] && sheet_bytes[2] == sheet_bytes[0], "the sheet does not mark the forced word alone");
    free(im.px);
    ac_vocab_free(v);
}

/* A caption on its photo's own grid (a photo that kept its aspect ratio: 1 x 2 cells of a model's
 * 2 x 2, the right one attended) is drawn on that grid over the whole photo: the right half hot from
 * top to bottom, not the top-right quarter of the model's grid. */
static void own_grid_covers_the_photo(void) {
    if (!ac_is_file(AC_DEFAULT_FONT)) SKIP("needs %s (fonts-dejavu-core)", AC_DEFAULT_FONT);
    ac_vocab *v;
    ac_err err;
    CHECKF(ac_vocab_from_json("[\"<pad>\",\"<start>\",\"<end>\",\"<unk>\",\"a\",\"dog\"]", &v, &err) == 0, "%s", err.msg);
    int words[1] = {5};
    float alpha[4] = {0.02f, 0.98f, 0.5f, 0.5f};
    ac_caption cap = {.n = 1, .words = words, .alpha = alpha, .grid_h = 1, .grid_w = 2};
    ac_image im = photo(240, 80);
    char dir[4200], p[4400];
    snprintf(dir, sizeof dir, "%s/owngrid", tmpdir());
    ac_overlay_opts o = ac_overlay_defaults();
    o.max_side = 240, o.style = AC_OVERLAY_SPOT;
    CHECKF(ac_overlays_write(dir, "wide", &im, &cap, v, 2, 2, &o, NULL, NULL, NULL, &err) == 0, "%s", err.msg);
    snprintf(p, sizeof p, "%s/wide/01_dog.png", dir);
    int w, h;
    unsigned char *px = png_read_rgb(p, &w, &h);
    CHECKF(px && w == 240 && h > 80, "%dx%d", px ? w : 0, px ? h : 0);
    if (px) { /* mean luminance of the four quarters of the photo (rows 0..79) */
        double q[2][2] = {{0}};
        for (int y = 0; y < 80; y++)
            for (int x = 0; x < 240; x++) {
                const unsigned char *c = px + ((size_t)y * w + x) * 3;
                q[y / 40][x / 120] += (0.299 * c[0] + 0.587 * c[1] + 0.114 * c[2]) / (40 * 120);
            }
        CHECKF(q[0][1] > q[0][0] + 30 && q[1][1] > q[1][0] + 30 && fabs(q[1][1] - q[0][1]) < 25,
               "quarters: top %.0f %.0f, bottom %.0f %.0f", q[0][0], q[0][1], q[1][0], q[1][1]);
    }
    free(px);
    free(im.px);
    ac_vocab_free(v);
}

/* The heat map over the photo in grey (default) or in its own colours: where attention is faint,
 * a red photo stays red under --base colour (hand-computed: 0.9 x the pixel) and turns grey else. */
static void base_colour_or_grey(void) {
    ac_image red = {4, 1, (uint8_t[12]){200, 0, 0, 200, 0, 0, 200, 0, 0, 200, 0, 0}};
    uint8_t out_px[12];
    ac_image out = {4, 1, out_px};
    float map[4] = {0, 0, 0, 0};
    ac_overlay_blend(&red, map, AC_OVERLAY_HEAT, AC_OVERLAY_COLOUR, &out);
    CHECKF(out_px[0] == 180 && out_px[1] == 0 && out_px[2] == 0, "colour: %d %d %d", out_px[0], out_px[1], out_px[2]);
    ac_overlay_blend(&red, map, AC_OVERLAY_HEAT, AC_OVERLAY_GREY, &out);
    CHECKF(out_px[0] == 54 && out_px[1] == 54 && out_px[2] == 54, "grey: %d %d %d", out_px[0], out_px[1], out_px[2]);
}

/* Tall, narrow, wide and tiny photos: every label fits its cell at a legible size, the sheet within
 * its size; a tall photo gets cells wider than its panels rather than smaller text. */
static void sheet_layout_legible(void) {
    if (!ac_is_file(AC_DEFAULT_FONT)) SKIP("needs %s (fonts-dejavu-core)", AC_DEFAULT_FONT);
    ac_font *f;
    ac_err err;
    CHECKF(ac_font_load(NULL, &f, &err) == 0, "%s", err.msg);
    const char *labels[] = {"", "a", "skateboarder", "is", "doing", "a", "trick", "on", "a", "ramp", "outdoors", "x"};
    const int shapes[][3] = {{60, 600, 1024}, {1200, 100, 1024}, {640, 480, 1024}, {30, 900, 400}, {640, 480, 300}};
    for (int s = 0; s < 5; s++) {
        ac_sheet_layout l;
        ac_sheet_plan(f, shapes[s][0], shapes[s][1], labels, 12, 1, "a skateboarder is doing a trick", shapes[s][2], 1, &l);
        CHECKF(l.word_px >= AC_FONT_MIN_PX && l.prob_px >= AC_FONT_MIN_PX, "shape %d: font %.1f", s, l.word_px);
        CHECKF(l.w <= shapes[s][2] && l.h <= shapes[s][2], "shape %d: %dx%d over %d", s, l.w, l.h, shapes[s][2]);
        CHECKF(l.cols * l.rows >= 12 && l.pw >= 1 && l.ph >= 8, "shape %d: %dx%d cells of %dx%d", s, l.cols, l.rows, l.pw, l.ph);
        for (int k = 0; k < 12; k++)
            CHECKF(ac_font_width(f, l.word_px, labels[k]) <= l.cell_w, "shape %d: '%s' wider than its cell", s, labels[k]);
        /* the panels keep the photo's shape */
        CHECKF(fabs((double)l.pw / l.ph - (double)shapes[s][0] / shapes[s][1]) < 0.1 * shapes[s][0] / shapes[s][1] + 2.0 / l.ph,
               "shape %d: panel %dx%d", s, l.pw, l.ph);
    }
    ac_font_free(f);
}

/* The sheet: a colour scale under the title (grey where attention is least, the map's yellow where
 * it is most) and each word's probability under its panel. */
static void sheet_scale_and_probabilities(void) {
    if (!ac_is_file(AC_DEFAULT_FONT)) SKIP("needs %s (fonts-dejavu-core)", AC_DEFAULT_FONT);
    ac_vocab *v;
    ac_err err;
    ac_font *f;
    CHECKF(ac_vocab_from_json("[\"<pad>\",\"<start>\",\"<end>\",\"<unk>\",\"a\",\"dog\"]", &v, &err) == 0, "%s", err.msg);
    CHECKF(ac_font_load(NULL, &f, &err) == 0, "%s", err.msg);
    int words[1];
    float alpha[4], logp[2] = {logf(0.83f), logf(0.9f)};
    ac_image im = photo(400, 300);
    char dir[4200], p[4400];
    snprintf(dir, sizeof dir, "%s/sheets", tmpdir());
    int slot_ink[2][2] = {{0, 0}, {0, 0}};
    for (int with_p = 0; with_p < 2; with_p++) {
        ac_caption cap = dog_caption(words, alpha, with_p ? logp : NULL);
        ac_overlay_opts o = ac_overlay_defaults();
        o.sheet_only = 1, o.force = 1, o.max_side = 600;
        CHECKF(ac_overlays_write(dir, "s", &im, &cap, v, 1, 2, &o, f, NULL, NULL, &err) == 0, "%s", err.msg);
        snprintf(p, sizeof p, "%s/s/sheet.png", dir);
        int w, h;
        unsigned char *px = png_read_rgb(p, &w, &h);
        const char *labels[] = {"", "dog"};
        ac_sheet_layout l;
        ac_sheet_plan(f, 400, 300, labels, 2, with_p, "dog", 600, 0, &l);
        CHECKF(px && w == l.w && h == l.h, "sheet %dx%d, planned %dx%d", w, h, l.w, l.h);
        if (!px) continue;
        int grey = 0, yellow = 0; /* along the middle row of the scale band */
        for (int x = 0, y = l.title_h + l.scale_h / 2; x < w; x++) {
            const unsigned char *q = px + ((size_t)y * w + x) * 3;
            grey += q[0] > 120 && q[0] < 200 && abs(q[0] - q[1]) < 4 && abs(q[1] - q[2]) < 4;
            yellow += q[0] > 200 && q[1] > 180 && q[2] < 170;
        }
        CHECKF(grey > 3 && yellow > 3, "scale: %d grey and %d yellow pixels", grey, yellow);
        /* the probability line: under the word line of panel 1 (the second cell) */
        int x0 = l.pad + (1 % l.cols) * (l.cell_w + l.pad), y0 = l.title_h + l.scale_h + (1 / l.cols) * (l.ph + l.lab + l.pad);
        int y_prob = y0 + l.ph + l.pad / 4 + (int)ceilf(l.word_px * 1.3f), lh = (int)ceilf(l.prob_px * 1.3f);
        CHECKF(l.stats, "no line for the attention's peak and entropy on a roomy sheet");
        for (int y = y_prob; y < y_prob + 2 * lh && y < h; y++) /* the line slot under the word, and the next */
            for (int x = x0; x < x0 + l.cell_w; x++) slot_ink[with_p][(y - y_prob) / lh] += px[((size_t)y * w + x) * 3] < 180;
        free(px);
    }
    /* without the probability: the stats line right under the word, nothing below it; with it: the
     * probability there, the stats under it */
    CHECKF(slot_ink[0][0] > 20 && slot_ink[0][1] == 0 && slot_ink[1][0] > 20 && slot_ink[1][1] > 20,
           "label lines' ink: %d %d without the probability, %d %d with", slot_ink[0][0], slot_ink[0][1],
           slot_ink[1][0], slot_ink[1][1]);
    free(im.px);
    ac_font_free(f);
    ac_vocab_free(v);
}

/* --scale absolute (issue #32, 3): the map is the blurred weights as they are: uniform attention is
 * 1/cells everywhere (faint), a one-hot cell is 1 inside it (no blur), half the weights give half
 * the map; the per-panel map stretches both alike. The stats: peak and normalised entropy of known
 * weights (uniform: 1/n and 1; one-hot: 1 and 0; two equal cells of four: 0.5 and ln 2 / ln 4). */
static void absolute_scale_and_stats(void) {
    enum { GH = 4, GW = 4, L = GH * GW, W = 64, H = 48 };
    float uni[L], one[L], half[L], map[W * H], map2[W * H];
    for (int i = 0; i < L; i++) uni[i] = 1.0f / L, one[i] = i == 5, half[i] = i == 5 ? 0.5f : 0.5f / (L - 1);
    ac_attention_map_scaled(uni, GH, GW, 0.6f, W, H, 1, map);
    for (int k = 0; k < W * H; k++) CHECKF(fabsf(map[k] - 1.0f / L) < 1e-5f, "uniform: map[%d] = %g", k, map[k]);
    ac_attention_map_scaled(one, GH, GW, 0.0f, W, H, 1, map);
    for (int y = 0; y < H; y++)
        for (int x = 0; x < W; x++) {
            const int in = y * GH / H == 1 && x * GW / W == 1; /* cell 5: row 1, column 1 */
            CHECKF(fabsf(map[y * W + x] - (float)in) < 1e-5f, "one-hot: (%d, %d) = %g", x, y, map[y * W + x]);
        }
    /* scaling the weights scales the absolute map; the per-panel map does not change */
    float scaled[L];
    for (int i = 0; i < L; i++) scaled[i] = 0.5f * half[i];
    ac_attention_map_scaled(half, GH, GW, 0.6f, W, H, 1, map);
    ac_attention_map_scaled(scaled, GH, GW, 0.6f, W, H, 1, map2);
    for (int k = 0; k < W * H; k++) CHECKF(fabsf(map2[k] - 0.5f * map[k]) < 1e-6f, "absolute not linear at %d", k);
    ac_attention_map_scaled(half, GH, GW, 0.6f, W, H, 0, map);
    ac_attention_map_scaled(scaled, GH, GW, 0.6f, W, H, 0, map2);
    for (int k = 0; k < W * H; k++) CHECKF(fabsf(map2[k] - map[k]) < 1e-5f, "per panel changed at %d", k);
    float peak, ent;
    ac_attention_stats(uni, L, &peak, &ent);
    CHECK_NEAR(peak, 1.0 / L, 1e-7);
    CHECK_NEAR(ent, 1.0, 1e-6);
    ac_attention_stats(one, L, &peak, &ent);
    CHECK_NEAR(peak, 1.0, 0);
    CHECK_NEAR(ent, 0.0, 0);
    const float two[4] = {0.5f, 0, 0.5f, 0};
    ac_attention_stats(two, 4, &peak, &ent);
    CHECK_NEAR(peak, 0.5, 0);
    CHECK_NEAR(ent, log(2.0) / log(4.0), 1e-6);
}

/* --format jpg (issue #32, 3): the same overlays and sheet as the PNGs, as .jpg files that
 * libturbojpeg's decoder reads back at the PNG's size and within a JPEG's error of its pixels (mean
 * absolute difference under 3 levels, read with libpng). */
static void jpeg_overlays(void) {
    if (!ac_is_file(AC_DEFAULT_FONT)) SKIP("needs %s (fonts-dejavu-core)", AC_DEFAULT_FONT);
    ac_vocab *v;
    ac_err err;
    CHECKF(ac_vocab_from_json("[\"<pad>\",\"<start>\",\"<end>\",\"<unk>\",\"a\",\"dog\"]", &v, &err) == 0, "%s", err.msg);
    int words[1];
    float alpha[4], logp[2] = {logf(0.83f), logf(0.9f)};
    ac_caption cap = dog_caption(words, alpha, logp);
    ac_image im = photo(400, 300);
    char dir[4200];
    snprintf(dir, sizeof dir, "%s/jpeg", tmpdir());
    char **paths[2] = {NULL, NULL};
    int n[2] = {0, 0};
    for (int jpeg = 0; jpeg < 2; jpeg++) {
        ac_overlay_opts o = ac_overlay_defaults();
        o.force = 1, o.max_side = 400, o.jpeg = jpeg;
        CHECKF(ac_overlays_write(dir, jpeg ? "j" : "p", &im, &cap, v, 1, 2, &o, NULL, &paths[jpeg], &n[jpeg], &err) == 0,
               "%s", err.msg);
    }
    CHECK(n[0] == 2 && n[1] == 2);
    for (int i = 0; i < 2; i++) {
        const char *jp = paths[1][i];
        CHECKF(strlen(jp) > 4 && !strcmp(jp + strlen(jp) - 4, ".jpg"), "%s", jp);
        int pw, ph;
        unsigned char *ppx = png_read_rgb(paths[0][i], &pw, &ph);
        char *data = NULL;
        size_t len = 0;
        CHECK(ppx && ac_read_file(jp, 1 << 26, &data, &len, &err) == 0);
        tjhandle tj = tjInitDecompress();
        int jw = 0, jh = 0, sub, cs;
        const int hdr = tjDecompressHeader3(tj, (unsigned char *)data, len, &jw, &jh, &sub, &cs);
        unsigned char *jpx = malloc((size_t)(jw > 0 ? jw : 1) * (jh > 0 ? jh : 1) * 3);
        const int dec = hdr == 0 && jpx ? tjDecompress2(tj, (unsigned char *)data, len, jpx, jw, 0, jh, TJPF_RGB, 0) : -1;
        tjDestroy(tj);
        double diff = 0;
        if (dec == 0 && jw == pw && jh == ph)
            for (size_t k = 0; k < (size_t)pw * ph * 3; k++) diff += abs((int)jpx[k] - (int)ppx[k]);
        diff /= (double)pw * ph * 3;
        free(jpx), free(ppx), free(data);
        CHECKF(dec == 0 && jw == pw && jh == ph, "%s: %dx%d, the PNG %dx%d", jp, jw, jh, pw, ph);
        CHECKF(diff < 3, "%s: mean difference %.2f from the PNG", jp, diff);
    }
    for (int f = 0; f < 2; f++) {
        for (int i = 0; i < n[f]; i++) free(paths[f][i]);
        free(paths[f]);
    }
    free(im.px);
    ac_vocab_free(v);
}

int main(void) {
    RUN(map_peaks_in_cell);
    RUN(font_ink);
    RUN(png_roundtrip);
    RUN(overlays_written);
    RUN(forced_word_marked);
    RUN(word_labels_sheet_only_upscale);
    RUN(own_grid_covers_the_photo);
    RUN(base_colour_or_grey);
    RUN(sheet_layout_legible);
    RUN(sheet_scale_and_probabilities);
    RUN(absolute_scale_and_stats);
    RUN(jpeg_overlays);
    return TEST_EXIT();
}
