/* tests/test_image_reduced.c: JPEGs decoded by libjpeg-turbo (ac_image_load, and ac_image_load_min's
 * DCT-scaled decode) against an independent reference, stb_image's full decode (made upright here),
 * both followed by the same ac_image_resize: within a stated tolerance on large JPEGs Pillow writes
 * in the test's temp dir (synthetic, with detail at every scale; 4:2:0, 4:4:4 progressive at an odd
 * size, grey, EXIF orientation 6) and on ../shared photos upscaled to 12 MP; whole photos within a
 * stated tolerance of stb's, pixel for pixel (the CMYK file, which stb decodes); the smallest factor
 * chosen, upright; the same errors either way. */
#include "attncap/image.h"

#include <stb_image.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "test.h"

/* The tolerance, per channel on 0..255, of reduced + resize vs whole + resize to the encoder's
 * input (each case prints what it measured as "# diff"). Real photos (../shared ones upscaled to
 * 12 MP, cat_720p halved): measured mean <= 0.37, max <= 7. The synthetic photos, with pixel-level
 * noise, hard edges and lines 1-2 pixels wide, the worst case for two different low-pass filters
 * (the DCT's truncation, then the triangle filter over 2.25x, vs the triangle filter over 9x):
 * measured mean <= 1.86, max <= 17. */
#define TOL_MEAN 0.5
#define TOL_MAX 8
#define TOL_SYN_MEAN 2.5
#define TOL_SYN_MAX 24
/* Whole photos, libjpeg-turbo's decode against stb_image's (two IDCTs' roundings, the same fancy
 * chroma upsampling): 1,437 ../shared JPEGs (COCO, Flickr8k, everyday, images/) measured mean <= 0.112,
 * max 4, 95-99 % of values equal; the synthetic ones <= 0.101 and 3. */
#define TOL_WHOLE_MEAN 0.25
#define TOL_WHOLE_MAX 6

static char dir[4096];
static int have_inputs = -1; /* -1 not tried, 0 no Pillow, 1 written */

/* Has Pillow write the JPEGs into the temp dir (once); 0 when Pillow is missing. */
static int inputs(void) {
    if (have_inputs >= 0) return have_inputs;
    snprintf(dir, sizeof dir, "%s/reduced", test_tmpdir());
    const char *root = getenv("ATTNCAP_ROOT");
    const char *s1 = test_shared("data/coco/images/000000000802.jpg"), *s2 = test_shared("images/parrot.jpg");
    char cmd[16384];
    snprintf(cmd, sizeof cmd, "/usr/bin/python3 '%s/tests/image_inputs.py' jpeg '%s' %s%s%s %s%s%s", root ? root : ".", dir,
             s1 ? "'" : "", s1 ? s1 : "", s1 ? "'" : "", s2 ? "'" : "", s2 ? s2 : "", s2 ? "'" : "");
    int rc = system(cmd);
    have_inputs = rc == 0;
    if (rc != 0 && !(WIFEXITED(rc) && WEXITSTATUS(rc) == 3)) printf("# image_inputs.py failed (%d)\n", rc);
    return have_inputs;
}

static const char *in(const char *name) {
    static char b[4][8192];
    static int k;
    char *p = b[k++ % 4];
    snprintf(p, 8192, "%s/%s", dir, name);
    return p;
}

typedef struct {
    double mean[3];
    int max[3];
} diff;

static diff compare(const ac_image *a, const ac_image *b) {
    diff d = {{0, 0, 0}, {0, 0, 0}};
    size_t n = (size_t)a->w * a->h;
    for (size_t i = 0; i < n; i++)
        for (int c = 0; c < 3; c++) {
            int v = abs((int)a->px[i * 3 + c] - (int)b->px[i * 3 + c]);
            d.mean[c] += v;
            if (v > d.max[c]) d.max[c] = v;
        }
    for (int c = 0; c < 3; c++) d.mean[c] /= (double)n;
    return d;
}

/* The reference: stb_image's decode of the whole file as RGB, turned upright for EXIF orientation 6
 * (the only one the inputs use; the "exif6" files) by rotating 90 degrees clockwise. */
static int stb_whole(const char *path, ac_image *out) {
    int w, h, c;
    uint8_t *s = stbi_load(path, &w, &h, &c, 3);
    if (!s) return printf("# stb_image cannot read %s\n", path), -1;
    out->w = w, out->h = h, out->px = malloc((size_t)w * h * 3);
    if (!strstr(path, "exif6")) {
        memcpy(out->px, s, (size_t)w * h * 3);
    } else { /* upright (x, y) <- stored (y, h - 1 - x) */
        out->w = h, out->h = w;
        for (int y = 0; y < w; y++)
            for (int x = 0; x < h; x++) memcpy(out->px + ((size_t)y * h + x) * 3, s + ((size_t)(h - 1 - x) * w + y) * 3, 3);
    }
    stbi_image_free(s);
    return 0;
}

/* Decodes path whole with stb_image and with the hint min_w x min_h, resizes both to out_w x out_h,
 * and checks the difference against the tolerance; *got (may be NULL) gets the reduced decode's size. */
static int reduced_vs_full(const char *path, int min_w, int min_h, int out_w, int out_h, int got[2], diff *dd) {
    ac_image full, red, a, b;
    ac_err err;
    if (stb_whole(path, &full)) return -1;
    if (ac_image_load_min(path, min_w, min_h, &red, &err)) return ac_image_free(&full), printf("# %s\n", err.msg), -1;
    if (got) got[0] = red.w, got[1] = red.h;
    int rc = ac_image_resize(&full, out_w, out_h, &a, &err) || ac_image_resize(&red, out_w, out_h, &b, &err) ? -1 : 0;
    if (!rc) *dd = compare(&a, &b), ac_image_free(&a), ac_image_free(&b);
    const char *base = strrchr(path, '/');
    if (!rc)
        printf("# diff %-22s %dx%d -> %dx%d -> %dx%d: mean %.3f %.3f %.3f  max %d %d %d\n", base ? base + 1 : path, full.w,
               full.h, red.w, red.h, out_w, out_h, dd->mean[0], dd->mean[1], dd->mean[2], dd->max[0], dd->max[1], dd->max[2]);
    ac_image_free(&full), ac_image_free(&red);
    return rc;
}

static int within(const diff *d, double mean, int max) {
    for (int c = 0; c < 3; c++)
        if (d->mean[c] > mean || d->max[c] > max) return 0;
    return 1;
}

/* The encoder's 448x448 and 224x224 inputs from 12 MP JPEGs: reduced by 1/4 and 1/8. */
static void test_tolerance_synthetic(void) {
    if (!inputs()) SKIP("Pillow (python3-pil) or numpy missing for /usr/bin/python3: cannot write the test JPEGs");
    static const struct {
        const char *file;
        int min, w, h; /* hint (square) and the size the reduced decode must have */
    } cases[] = {{"syn_420.jpg", 448, 1008, 756},          {"syn_420.jpg", 224, 504, 378},
                 {"syn_444_odd_prog.jpg", 448, 1008, 756}, {"syn_444_odd_prog.jpg", 224, 504, 378},
                 {"syn_gray.jpg", 448, 1000, 750},          {"syn_exif6.jpg", 448, 756, 1008}};
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        int got[2];
        diff d;
        CHECKF(reduced_vs_full(in(cases[i].file), cases[i].min, cases[i].min, cases[i].min, cases[i].min, got, &d) == 0,
               "%s", cases[i].file);
        CHECKF(got[0] == cases[i].w && got[1] == cases[i].h, "%s at %d: decoded %dx%d, want %dx%d", cases[i].file,
               cases[i].min, got[0], got[1], cases[i].w, cases[i].h);
        CHECKF(within(&d, TOL_SYN_MEAN, TOL_SYN_MAX), "%s at %d: mean %.3f/%.3f/%.3f max %d/%d/%d over %.1f/%d",
               cases[i].file, cases[i].min, d.mean[0], d.mean[1], d.mean[2], d.max[0], d.max[1], d.max[2], TOL_SYN_MEAN,
               TOL_SYN_MAX);
    }
}

/* Real photos: ../shared ones upscaled to 12 MP, and cat_720p at 224 (1/2). */
static void test_tolerance_shared(void) {
    if (!test_data_dir()) SKIP("../shared not found (ATTNCAP_DATA)");
    if (!inputs()) SKIP("Pillow (python3-pil) or numpy missing for /usr/bin/python3: cannot write the test JPEGs");
    const char *files[] = {in("shared0_12mp.jpg"), in("shared1_12mp.jpg"), test_shared("images/cat_720p.jpg")};
    const int mins[] = {448, 448, 224};
    for (int i = 0; i < 3; i++) {
        if (!files[i]) continue;
        int got[2];
        diff d;
        CHECKF(reduced_vs_full(files[i], mins[i], mins[i], mins[i], mins[i], got, &d) == 0, "%s", files[i]);
        CHECKF(got[0] < 1280, "%s: not reduced (%dx%d)", files[i], got[0], got[1]);
        CHECKF(within(&d, TOL_MEAN, TOL_MAX), "%s: mean %.3f/%.3f/%.3f max %d/%d/%d", files[i], d.mean[0], d.mean[1], d.mean[2], d.max[0],
               d.max[1], d.max[2]);
    }
}

/* A whole photo (no factor below 1 fits: every COCO photo at 448, as 640x480 halves to 320x240) is
 * libjpeg-turbo's decode, within the tolerance of stb_image's, and the same as ac_image_load's; a CMYK
 * file, which turbo cannot turn into RGB, is stb_image's, pixel for pixel. */
static void test_whole_vs_stb(void) {
    const char *real[] = {test_shared("data/coco/images/000000000802.jpg"), test_shared("data/coco/images/000000001000.jpg"),
                          test_shared("data/coco/images/000000001584.jpg"), test_shared("images/parrot.jpg"),
                          test_shared("images/cat_720p.jpg")};
    const int have_syn = inputs();
    const char *syn[] = {"syn_420.jpg", "syn_444_odd_prog.jpg", "syn_gray.jpg", "syn_exif6.jpg"};
    int n = 0;
    for (int i = 0; i < 5 + (have_syn ? 4 : 0); i++) {
        const char *path = i < 5 ? real[i] : in(syn[i - 5]);
        if (!path) continue;
        ac_image a, b, ref;
        ac_err err;
        CHECKF(ac_image_load(path, &a, &err) == 0, "%s", err.msg);
        if (i < 5) { /* no factor below 1 fits these at 448 */
            CHECKF(ac_image_load_min(path, 448, 448, &b, &err) == 0, "%s", err.msg);
            CHECKF(a.w == b.w && a.h == b.h && !memcmp(a.px, b.px, (size_t)a.w * a.h * 3), "%s: hinted differs", path);
            ac_image_free(&b);
        }
        CHECK(stb_whole(path, &ref) == 0);
        CHECKF(a.w == ref.w && a.h == ref.h, "%s: %dx%d vs stb %dx%d", path, a.w, a.h, ref.w, ref.h);
        diff d = compare(&a, &ref);
        printf("# whole %-22s %dx%d: mean %.3f %.3f %.3f  max %d %d %d\n", strrchr(path, '/') + 1, a.w, a.h, d.mean[0],
               d.mean[1], d.mean[2], d.max[0], d.max[1], d.max[2]);
        CHECKF(within(&d, TOL_WHOLE_MEAN, TOL_WHOLE_MAX),
               "%s: mean %.3f/%.3f/%.3f max %d/%d/%d", path, d.mean[0], d.mean[1], d.mean[2], d.max[0], d.max[1], d.max[2]);
        ac_image_free(&a), ac_image_free(&ref);
        n++;
    }
    if (have_syn) {
        ac_image a, b, ref;
        ac_err err;
        CHECKF(ac_image_load(in("syn_cmyk.jpg"), &a, &err) == 0, "%s", err.msg);
        CHECKF(ac_image_load_min(in("syn_cmyk.jpg"), 64, 64, &b, &err) == 0, "%s", err.msg);
        CHECK(stb_whole(in("syn_cmyk.jpg"), &ref) == 0);
        CHECK(a.w == b.w && a.h == b.h && !memcmp(a.px, b.px, (size_t)a.w * a.h * 3));
        CHECK(a.w == ref.w && a.h == ref.h && !memcmp(a.px, ref.px, (size_t)a.w * a.h * 3));
        ac_image_free(&a), ac_image_free(&b), ac_image_free(&ref);
    }
    if (!n) SKIP("neither ../shared nor Pillow available");
}

/* The hint is upright: a photo stored 4032x3024 with orientation 6 is 3024x4032 upright, and asking
 * for width >= 1000 needs 1/2 (1512x2016), where reading the hint in stored orientation would take
 * 1/4 (756x1008 upright: too narrow). 0 on a side: the whole photo. */
static void test_hint_upright(void) {
    if (!inputs()) SKIP("Pillow (python3-pil) or numpy missing for /usr/bin/python3");
    ac_image img;
    ac_err err;
    CHECKF(ac_image_load_min(in("syn_exif6.jpg"), 1000, 100, &img, &err) == 0, "%s", err.msg);
    CHECKF(img.w == 1512 && img.h == 2016, "got %dx%d", img.w, img.h);
    ac_image_free(&img);
    CHECKF(ac_image_load_min(in("syn_exif6.jpg"), 100, 1000, &img, &err) == 0, "%s", err.msg);
    CHECKF(img.w == 756 && img.h == 1008, "got %dx%d", img.w, img.h);
    ac_image_free(&img);
    CHECKF(ac_image_load_min(in("syn_420.jpg"), 0, 448, &img, &err) == 0, "%s", err.msg);
    CHECKF(img.w == 4032 && img.h == 3024, "got %dx%d", img.w, img.h);
    ac_image_free(&img);
    CHECKF(ac_image_load_min(in("syn_420.jpg"), 5000, 10, &img, &err) == 0, "%s", err.msg); /* wider than the photo */
    CHECKF(img.w == 4032 && img.h == 3024, "got %dx%d", img.w, img.h);
    ac_image_free(&img);
}

/* A truncated or corrupted large JPEG: the same one-line error with a hint as without (the checks
 * before decoding are shared), and a corrupted entropy stream is an error, not grey padding. */
static void test_errors_same(void) {
    if (!inputs()) SKIP("Pillow (python3-pil) or numpy missing for /usr/bin/python3");
    char *d;
    size_t n;
    ac_err err, e2;
    CHECKF(ac_read_file(in("syn_420.jpg"), 1 << 26, &d, &n, &err) == 0, "%s", err.msg);
    ac_image img;
    const size_t cuts[] = {n / 2, n - 2, 700};
    for (int i = 0; i < 3; i++) {
        int a = ac_image_load_mem(d, cuts[i], "cut.jpg", &img, &err), b = ac_image_load_mem_min(d, cuts[i], "cut.jpg", 448, 448, &img, &e2);
        CHECKF(a != 0 && b != 0 && !strcmp(err.msg, e2.msg) && strstr(err.msg, "cut.jpg") && !strchr(err.msg, '\n'),
               "cut at %zu: %d '%s' vs %d '%s'", cuts[i], a, err.msg, b, e2.msg);
    }
    /* Restart markers and garbage in the middle of the entropy-coded data: libjpeg-turbo warns (it
     * would pad with grey), and the file goes to stb whole: loaded, or refused with the same message,
     * as without a hint. */
    char *c = malloc(n);
    for (int v = 0; v < 2; v++) {
        memcpy(c, d, n);
        for (size_t k = n / 2; k < n / 2 + 4096; k += 64) c[k] = (char)0xFF, c[k + 1] = (char)(v ? 0x5A : 0xD3);
        ac_image full, red;
        int a = ac_image_load_mem(c, n, "bad.jpg", &full, &err), b = ac_image_load_mem_min(c, n, "bad.jpg", 448, 448, &red, &e2);
        printf("# corrupt stream %d: whole %s, hinted %s\n", v, a ? err.msg : "decoded", b ? e2.msg : "decoded");
        int same = a == b && (a ? !strcmp(err.msg, e2.msg) : full.w == red.w && !memcmp(full.px, red.px, (size_t)full.w * full.h * 3));
        if (!a) ac_image_free(&full);
        if (!b) ac_image_free(&red);
        CHECKF(same, "corrupt stream %d: whole rc %d, hinted rc %d", v, a, b);
    }
    free(c);
    /* Four stray bytes before the frame header: stb skips them, libjpeg-turbo warns ("extraneous
     * bytes before marker"): decoded whole by stb, the same pixels as without a hint. */
    size_t sof = 2;
    while (sof + 1 < n && !((uint8_t)d[sof] == 0xFF && (uint8_t)d[sof + 1] == 0xC0)) sof++;
    CHECK(sof + 1 < n);
    c = malloc(n + 4);
    memcpy(c, d, sof), memset(c + sof, 0, 4), memcpy(c + sof + 4, d + sof, n - sof);
    ac_image full, red;
    CHECKF(ac_image_load_mem(c, n + 4, "stray.jpg", &full, &err) == 0, "%s", err.msg);
    CHECKF(ac_image_load_mem_min(c, n + 4, "stray.jpg", 448, 448, &red, &e2) == 0, "%s", e2.msg);
    CHECKF(full.w == red.w && full.h == red.h && !memcmp(full.px, red.px, (size_t)full.w * full.h * 3),
           "stray bytes: whole %dx%d, hinted %dx%d", full.w, full.h, red.w, red.h);
    ac_image_free(&full), ac_image_free(&red);
    free(c);
    free(d);
}

int main(void) {
    RUN(test_tolerance_synthetic);
    RUN(test_tolerance_shared);
    RUN(test_whole_vs_stb);
    RUN(test_hint_upright);
    RUN(test_errors_same);
    return TEST_EXIT();
}
