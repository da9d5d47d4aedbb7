/* Overlays: the map peaks where alpha does, written PNGs read back with libpng have the expected
 * size, the hottest region of each written overlay lies in the attended cell, text leaves ink,
 * existing output directories are refused unless forced. */
#include <png.h>
#include <sys/stat.h>
#include <unistd.h>

#include "attncap/overlay.h"
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
            CHECKF(w == 300 && h == 200, "%s: %dx%d", paths[t], w, h);
            brightest(px, w, h, &bx, &by);
            CHECKF(by * gh / h == cells[t] / gw && bx * gw / w == cells[t] % gw,
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
    CHECK(strstr(err.msg, "exists") && err.code == AC_ERR_EXISTS); /* the CLI adds "--force" (messages.c) */
    /* a small photo is not enlarged; long side limit obeyed for a big one */
    ac_image small = photo(64, 48);
    CHECKF(ac_overlays_write(dir, "small", &small, &cap, v, gh, gw, &o, NULL, NULL, NULL, &err) == 0, "%s", err.msg);
    char p[4300];
    int w, h;
    snprintf(p, sizeof p, "%s/small/02_dog.png", dir);
    unsigned char *px = png_read_rgb(p, &w, &h);
    CHECK(px && w == 64 && h == 48);
    free(px);
    snprintf(p, sizeof p, "%s/big", dir);
    ac_image big = photo(1600, 1200);
    CHECKF(ac_overlays_write(dir, "big", &big, &cap, v, gh, gw, &o, NULL, NULL, NULL, &err) == 0, "%s", err.msg);
    snprintf(p, sizeof p, "%s/big/04_grass.png", dir);
    px = png_read_rgb(p, &w, &h);
    CHECK(px && w == 1024 && h == 768);
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

int main(void) {
    RUN(map_peaks_in_cell);
    RUN(font_ink);
    RUN(png_roundtrip);
    RUN(overlays_written);
    return TEST_EXIT();
}
