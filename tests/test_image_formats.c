/* tests/test_image_formats.c: WebP (libwebp) and TIFF (libtiff) input against the same pixels Pillow
 * saved as PNG (decoded by stb_image, the reference), written by tests/image_inputs.py into the test's
 * temp dir; truncated and corrupted files give one line naming the file, never a crash; the pixel
 * limit is checked before decoding. Skips when /usr/bin/python3 has no Pillow. */
#include "attncap/image.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "test.h"

static char dir[4096];
static int have_inputs = -1;

static int inputs(void) {
    if (have_inputs >= 0) return have_inputs;
    snprintf(dir, sizeof dir, "%s/formats", test_tmpdir());
    const char *root = getenv("ATTNCAP_ROOT");
    char cmd[8192];
    snprintf(cmd, sizeof cmd, "/usr/bin/python3 '%s/tests/image_inputs.py' formats '%s'", root ? root : ".", dir);
    int rc = system(cmd);
    if (rc != 0 && !(WIFEXITED(rc) && WEXITSTATUS(rc) == 3)) printf("# image_inputs.py failed (%d)\n", rc);
    return have_inputs = rc == 0;
}

static const char *in(const char *name) {
    static char b[4][8192];
    static int k;
    char *p = b[k++ % 4];
    snprintf(p, 8192, "%s/%s", dir, name);
    return p;
}

/* Largest per-byte difference between file and ref (decoded), or -1 on a failed load / size mismatch. */
static int max_diff(const char *file, const char *ref) {
    ac_image a, b;
    ac_err err;
    if (ac_image_load(in(file), &a, &err)) return printf("# %s\n", err.msg), -1;
    if (ac_image_load(in(ref), &b, &err)) return ac_image_free(&a), printf("# %s\n", err.msg), -1;
    int m = -1;
    if (a.w == b.w && a.h == b.h) {
        m = 0;
        for (size_t i = 0; i < (size_t)a.w * a.h * 3; i++) {
            int d = abs((int)a.px[i] - (int)b.px[i]);
            if (d > m) m = d;
        }
    }
    printf("# %-20s vs %-18s %dx%d max diff %d\n", file, ref, a.w, a.h, m);
    ac_image_free(&a), ac_image_free(&b);
    return m;
}

static void test_webp_tiff_pixels(void) {
    if (!inputs()) SKIP("Pillow (python3-pil) or numpy missing for /usr/bin/python3: cannot write the test files");
    static const struct {
        const char *file, *ref;
        int tol;
    } cases[] = {
        {"rgb_lossless.webp", "rgb.png", 0},  {"gray_lossless.webp", "gray.png", 0},
        {"rgba_lossless.webp", "rgba.png", 0}, /* alpha over white, the same rounding as stb's path */
        {"rgb_lossy.webp", "rgb_lossy_pil.png", 0}, /* Pillow decodes it with the same libwebp */
        {"rgb_raw.tif", "rgb.png", 0},        {"rgb_lzw.tif", "rgb.png", 0},
        {"rgb_deflate.tif", "rgb.png", 0},    {"gray.tif", "gray.png", 0},
        {"rgba.tif", "rgba.png", 1}, /* libtiff premultiplies (rounded), then over white */
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        int m = max_diff(cases[i].file, cases[i].ref);
        CHECKF(m >= 0 && m <= cases[i].tol, "%s: max diff %d over %d", cases[i].file, m, cases[i].tol);
    }
}

/* Every cut of a file, and bytes flipped in its middle: an error naming the file on one line, or
 * (a flip in lossy data) an image of the right size; never a crash (ASan/valgrind runs check that). */
static void test_hostile(void) {
    if (!inputs()) SKIP("Pillow (python3-pil) or numpy missing for /usr/bin/python3");
    const char *files[] = {"rgb_lossless.webp", "rgb_lossy.webp", "rgba_lossless.webp", "rgb_raw.tif", "rgb_lzw.tif",
                           "rgb_deflate.tif", "gray.tif"};
    for (size_t f = 0; f < sizeof files / sizeof *files; f++) {
        char *d;
        size_t n;
        ac_err err;
        CHECKF(ac_read_file(in(files[f]), 1 << 24, &d, &n, &err) == 0, "%s", err.msg);
        int refused = 0, tried = 0;
        for (size_t cut = 1; cut < n; cut += cut < 64 ? 1 : n / 97 + 1) {
            uint8_t *c = malloc(cut); /* exact size: ASan sees an over-read */
            memcpy(c, d, cut);
            ac_image img;
            int rc = ac_image_load_mem(c, cut, files[f], &img, &err);
            free(c);
            tried++;
            if (rc == 0) { /* a TIFF whose pixels all come before its directory may read whole */
                ac_image_free(&img);
                continue;
            }
            refused++;
            CHECKF(strstr(err.msg, files[f]) && !strchr(err.msg, '\n'), "%s cut at %zu: '%s'", files[f], cut, err.msg);
        }
        uint8_t *c = malloc(n);
        memcpy(c, d, n);
        for (size_t k = n / 2; k < n / 2 + 16 && k < n; k++) c[k] ^= 0x5A;
        ac_image img;
        if (ac_image_load_mem(c, n, files[f], &img, &err) == 0) ac_image_free(&img);
        else CHECKF(strstr(err.msg, files[f]) && !strchr(err.msg, '\n'), "%s flipped: '%s'", files[f], err.msg);
        free(c);
        free(d);
        printf("# %s: %d of %d cuts refused\n", files[f], refused, tried);
        CHECKF(refused * 2 > tried, "%s: only %d of %d truncated copies refused", files[f], refused, tried);
    }
}

static void test_pixel_limit(void) {
    if (!inputs()) SKIP("Pillow (python3-pil) or numpy missing for /usr/bin/python3");
    setenv("ATTNCAP_MAX_IMAGE_PIXELS", "1000", 1); /* the files are 97x61 */
    const char *files[] = {"rgb_lossless.webp", "rgb_lzw.tif"};
    int ok = 1;
    for (int f = 0; f < 2 && ok; f++) {
        ac_image img;
        ac_err err;
        int rc = ac_image_load(in(files[f]), &img, &err);
        if (!rc) ac_image_free(&img);
        ok = rc != 0 && strstr(err.msg, "ATTNCAP_MAX_IMAGE_PIXELS") && strstr(err.msg, "97x61");
        if (!ok) printf("# %s: rc %d, %s\n", files[f], rc, rc ? err.msg : "decoded");
    }
    unsetenv("ATTNCAP_MAX_IMAGE_PIXELS");
    CHECK(ok);
}

int main(void) {
    RUN(test_webp_tiff_pixels);
    RUN(test_hostile);
    RUN(test_pixel_limit);
    return TEST_EXIT();
}
