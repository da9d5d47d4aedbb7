/* tests/test_image.c: decoding, EXIF orientation and resizing against fixtures written by Pillow and
 * torch (tools/make_image_fixtures.py), and hostile images: truncated, corrupt, decompression bombs,
 * directories, missing files. */
#include "attncap/image.h"

#include <cjson/cJSON.h>
#include <dirent.h>
#include <stdint.h>
#include <unistd.h>

#include "test.h"

static cJSON *manifest;

static const char *fixture(const char *name) {
    char rel[512];
    snprintf(rel, sizeof rel, "img/%s", name);
    return test_fixture(rel);
}

static char *slurp(const char *path, size_t *n) {
    char *d;
    ac_err err;
    return ac_read_file(path, 1 << 24, &d, n, &err) ? NULL : d;
}

static int write_raw(const char *path, const void *p, size_t n) {
    FILE *f = fopen(path, "wb");
    if (!f) return -1;
    fwrite(p, 1, n, f);
    fclose(f);
    return 0;
}

static const char *tmp_path(const char *name) {
    static char b[4096];
    snprintf(b, sizeof b, "%s/%s", test_tmpdir(), name);
    return b;
}

/* Max abs difference between pixels and a JSON int array. */
static int max_diff(const uint8_t *px, const cJSON *arr, size_t n) {
    int m = 0;
    size_t i = 0;
    const cJSON *v;
    cJSON_ArrayForEach(v, arr) {
        if (i >= n) return 999;
        int d = abs((int)px[i++] - v->valueint);
        if (d > m) m = d;
    }
    return i == n ? m : 999;
}

static void test_decode_formats(void) {
    CHECK(manifest);
    const cJSON *e;
    int count = 0;
    cJSON_ArrayForEach(e, cJSON_GetObjectItem(manifest, "decode")) {
        const char *file = cJSON_GetObjectItem(e, "file")->valuestring;
        int w = cJSON_GetObjectItem(e, "w")->valueint, h = cJSON_GetObjectItem(e, "h")->valueint;
        int tol = cJSON_GetObjectItem(e, "tol")->valueint;
        ac_image img;
        ac_err err;
        CHECKF(ac_image_load(fixture(file), &img, &err) == 0, "%s", err.msg);
        CHECKF(img.w == w && img.h == h, "%s: %dx%d, want %dx%d", file, img.w, img.h, w, h);
        int d = max_diff(img.px, cJSON_GetObjectItem(e, "rgb"), (size_t)w * h * 3);
        ac_image_free(&img);
        CHECKF(d <= tol, "%s: max pixel difference %d > %d", file, d, tol);
        count++;
    }
    CHECK(count >= 12);
}

static void test_exif_orientation(void) {
    const cJSON *ex = cJSON_GetObjectItem(manifest, "exif"), *f;
    int w = cJSON_GetObjectItem(ex, "w")->valueint, h = cJSON_GetObjectItem(ex, "h")->valueint;
    const cJSON *want = cJSON_GetObjectItem(ex, "rgb");
    int seen = 0;
    cJSON_ArrayForEach(f, cJSON_GetObjectItem(ex, "files")) {
        const char *file = cJSON_GetObjectItem(f, "file")->valuestring;
        ac_image img;
        ac_err err;
        CHECKF(ac_image_load(fixture(file), &img, &err) == 0, "%s", err.msg);
        CHECKF(img.w == w && img.h == h, "%s: %dx%d, want %dx%d", file, img.w, img.h, w, h);
        /* JPEG is lossy: compare each 8x8 block's centre pixel; a wrong orientation swaps colours. */
        for (int by = 0; by < 3; by++)
            for (int bx = 0; bx < 2; bx++) {
                size_t i = ((size_t)(by * 8 + 4) * w + bx * 8 + 4) * 3;
                for (int c = 0; c < 3; c++)
                    CHECKF(abs(img.px[i + c] - cJSON_GetArrayItem(want, (int)(i + c))->valueint) <= 16,
                           "%s: block (%d,%d) channel %d is %d, want %d", file, bx, by, c, img.px[i + c],
                           cJSON_GetArrayItem(want, (int)(i + c))->valueint);
            }
        ac_image_free(&img);
        seen++;
    }
    CHECK(seen == 8);
}

/* The same JPEG with its APP1 segment damaged in various ways decodes without rotation, no crash. */
static void test_exif_hostile(void) {
    size_t n;
    char *d = slurp(fixture("exif6.jpg"), &n);
    CHECK(d);
    /* Find "Exif\0\0"; its TIFF header follows. */
    char *ex = memmem(d, n, "Exif\0\0", 6);
    CHECK(ex);
    size_t t = (size_t)(ex - d) + 6;
    for (size_t i = t; i < t + 40 && i < n; i++)
        for (int v = 0; v < 256; v += 51) {
            char *c = malloc(n);
            memcpy(c, d, n);
            c[i] = (char)v;
            ac_image img;
            ac_err err;
            if (ac_image_load_mem(c, n, "x.jpg", &img, &err) == 0) {
                CHECK((img.w == 16 && img.h == 24) || (img.w == 24 && img.h == 16));
                ac_image_free(&img);
            }
            free(c);
        }
    /* The APP1 length pointing past the end of the file. */
    d[t - 8] = (char)0xFF, d[t - 7] = (char)0xF0;
    ac_image img;
    ac_err err;
    if (ac_image_load_mem(d, n, "x.jpg", &img, &err) == 0) ac_image_free(&img);
    free(d);
}

static void test_resize_vs_torch(void) {
    const cJSON *r, *c;
    int cases = 0;
    cJSON_ArrayForEach(r, cJSON_GetObjectItem(manifest, "resize")) {
        ac_image src = {cJSON_GetObjectItem(r, "w")->valueint, cJSON_GetObjectItem(r, "h")->valueint, NULL};
        size_t n = (size_t)src.w * src.h * 3, i = 0;
        src.px = malloc(n);
        const cJSON *v;
        cJSON_ArrayForEach(v, cJSON_GetObjectItem(r, "src")) src.px[i++] = (uint8_t)v->valueint;
        CHECK(i == n);
        cJSON_ArrayForEach(c, cJSON_GetObjectItem(r, "cases")) {
            int w = cJSON_GetObjectItem(c, "w")->valueint, h = cJSON_GetObjectItem(c, "h")->valueint;
            int aa = !strcmp(cJSON_GetObjectItem(c, "mode")->valuestring, "aa");
            ac_image out;
            ac_err err;
            CHECK((aa ? ac_image_resize(&src, w, h, &out, &err) : ac_image_resize_bilinear(&src, w, h, &out, &err)) == 0);
            CHECK(out.w == w && out.h == h);
            size_t k = 0;
            double worst = 0;
            cJSON_ArrayForEach(v, cJSON_GetObjectItem(c, "out")) {
                double ref = v->valuedouble < 0 ? 0 : v->valuedouble > 255 ? 255 : v->valuedouble;
                double dd = fabs(out.px[k++] - ref);
                if (dd > worst) worst = dd;
            }
            ac_image_free(&out);
            CHECK(k == (size_t)w * h * 3);
            /* Ours rounds to uint8 once: within 0.5 of torch's float result (+ float slack). */
            CHECKF(worst <= 0.5 + 2e-3, "%dx%d -> %dx%d %s: max |ours - torch| = %g", src.w, src.h, w, h,
                   aa ? "antialiased" : "bilinear", worst);
            cases++;
        }
        free(src.px);
    }
    CHECK(cases == 16);
}

static void test_resize_errors_flip_float(void) {
    uint8_t px[2 * 1 * 3] = {10, 20, 30, 40, 50, 60};
    ac_image a = {2, 1, px}, out;
    ac_err err;
    CHECK(ac_image_resize(&a, 0, 5, &out, &err) != 0);
    CHECK(ac_image_resize(&a, 100000, 100000, &out, &err) != 0 && strstr(err.msg, "ATTNCAP_MAX_IMAGE_PIXELS"));
    ac_image flip = {2, 1, malloc(6)};
    memcpy(flip.px, px, 6);
    ac_image_flip_h(&flip);
    CHECK(flip.px[0] == 40 && flip.px[2] == 60 && flip.px[3] == 10 && flip.px[5] == 30);
    ac_image_free(&flip);
    float f[6];
    ac_image_to_float(&a, 127.5f, 1 / 127.5f, f);
    CHECK_NEAR(f[0], (10 - 127.5) / 127.5, 1e-6);
    CHECK_NEAR(f[5], (60 - 127.5) / 127.5, 1e-6);
}

/* The vectorised loops (AVX-512, AVX2) against their scalar tails: the same operations in the same order,
 * so the same bits wherever a value falls. The conversion to float against its formula, over every byte
 * value and a tail; the vertical pass of a resize on rows of one colour each, 37 pixels wide (111
 * values a row: vectors, then a tail), where every column must come out the same (a lane or a pack
 * mixed up shows at once; a sum rounded otherwise only where it lands next to a half). */
static void test_vector_paths_exact(void) {
    enum { W = 37, H = 23 };
    ac_image a = {W, H, malloc(W * H * 3)}, out;
    ac_err err;
    unsigned seed = 5;
    float *f = malloc(sizeof *f * W * H * 3);
    for (int i = 0; i < W * H * 3; i++) a.px[i] = (uint8_t)((i * 7) % 256); /* every byte value */
    ac_image_to_float(&a, 127.5f, 1 / 127.5f, f);
    int bad = 0;
    for (int i = 0; i < W * H * 3; i++) bad += f[i] != ((float)a.px[i] - 127.5f) * (1 / 127.5f);
    CHECKF(!bad, "%d values differ from (v - mean) * scale", bad);
    for (int y = 0; y < H; y++) /* rows of one colour */
        for (int c = 0; c < 3; c++) {
            seed = seed * 1103515245u + 12345u;
            for (int x = 0; x < W; x++) a.px[(y * W + x) * 3 + c] = (uint8_t)(seed >> 16);
        }
    const int heights[] = {11, 5, 40, 23};
    for (int k = 0; k < 4; k++)
        for (int aa = 0; aa < 2; aa++) {
            CHECK((aa ? ac_image_resize(&a, W, heights[k], &out, &err) : ac_image_resize_bilinear(&a, W, heights[k], &out, &err)) == 0);
            for (int i = 0; i < W * heights[k] * 3; i++) bad += out.px[i] != out.px[i / (W * 3) * W * 3 + i % 3];
            ac_image_free(&out);
            CHECKF(!bad, "%d x %d -> %d x %d: %d values differ from their row's first pixel", W, H, W, heights[k], bad);
        }
    free(a.px), free(f);
}

/* Each load must fail with one line naming the file and containing `want`. */
static int expect_error(const char *path, const char *want) {
    ac_image img;
    ac_err err;
    if (ac_image_load(path, &img, &err) == 0) {
        ac_image_free(&img);
        printf("# %s: loaded, expected an error\n", path);
        return 0;
    }
    if (!strstr(err.msg, path) || strchr(err.msg, '\n') || (want && !strstr(err.msg, want))) {
        printf("# %s: bad message: %s\n", path, err.msg);
        return 0;
    }
    return 1;
}

static uint32_t crc32_png(const uint8_t *p, size_t n) {
    uint32_t c = 0xFFFFFFFFu;
    for (size_t i = 0; i < n; i++) {
        c ^= p[i];
        for (int k = 0; k < 8; k++) c = c & 1 ? 0xEDB88320u ^ (c >> 1) : c >> 1;
    }
    return ~c;
}

static void put32be(uint8_t *p, uint32_t v) { p[0] = (uint8_t)(v >> 24), p[1] = (uint8_t)(v >> 16), p[2] = (uint8_t)(v >> 8), p[3] = (uint8_t)v; }

static void test_hostile_files(void) {
    CHECK(expect_error(test_tmpdir(), "directory"));
    CHECK(expect_error(tmp_path("missing.jpg"), "no such file"));
    const char *p = tmp_path("bad.jpg");
    CHECK(write_raw(p, "", 0) == 0 && expect_error(p, "not an image"));
    CHECK(write_raw(p, "hello, world\n", 13) == 0 && expect_error(p, "not an image"));
    uint8_t rnd[4096];
    uint32_t s = 12345;
    for (size_t i = 0; i < sizeof rnd; i++) s = s * 1103515245u + 12345u, rnd[i] = (uint8_t)(s >> 16);
    CHECK(write_raw(p, rnd, sizeof rnd) == 0 && expect_error(p, "not an image"));
    /* Magic bytes followed by garbage. */
    memcpy(rnd, "\xFF\xD8\xFF", 3);
    CHECK(write_raw(p, rnd, sizeof rnd) == 0 && expect_error(p, NULL));
    memcpy(rnd, "\x89PNG\r\n\x1a\n", 8);
    CHECK(write_raw(p, rnd, sizeof rnd) == 0 && expect_error(p, NULL));
    memcpy(rnd, "GIF89a", 6);
    CHECK(write_raw(p, rnd, sizeof rnd) == 0 && expect_error(p, NULL));

    /* Decompression bomb: a valid PNG header claiming 100000 x 100000, refused before decoding. */
    uint8_t png[8 + 25 + 12 + 12];
    memcpy(png, "\x89PNG\r\n\x1a\n", 8);
    uint8_t *ih = png + 8;
    put32be(ih, 13);
    memcpy(ih + 4, "IHDR", 4);
    put32be(ih + 8, 100000), put32be(ih + 12, 100000);
    ih[16] = 8, ih[17] = 2, ih[18] = ih[19] = ih[20] = 0;
    put32be(ih + 21, crc32_png(ih + 4, 17));
    uint8_t *id = ih + 25; /* empty IDAT, IEND */
    put32be(id, 0), memcpy(id + 4, "IDAT", 4), put32be(id + 8, crc32_png(id + 4, 4));
    put32be(id + 12, 0), memcpy(id + 16, "IEND", 4), put32be(id + 20, crc32_png(id + 16, 4));
    const char *bomb = tmp_path("bomb.png");
    CHECK(write_raw(bomb, png, sizeof png) == 0);
    double t0 = ac_now();
    CHECK(expect_error(bomb, "ATTNCAP_MAX_IMAGE_PIXELS"));
    CHECK(ac_now() - t0 < 1.0);
    /* A zlib bomb: 1x1 header, IDAT inflating to 8 MB (stb would keep growing its buffer). */
    CHECK(expect_error(fixture("zbomb.png"), "decompression bomb"));
    /* A CPU bomb: the same scan repeated 300 times (each would revisit every block). */
    {
        size_t jn;
        char *jp = slurp(fixture("smooth.jpg"), &jn);
        CHECK(jp);
        size_t sos = 0, eoi = jn - 2;
        for (size_t i = 2; i + 1 < jn; i++)
            if ((uint8_t)jp[i] == 0xFF && (uint8_t)jp[i + 1] == 0xDA) {
                sos = i;
                break;
            }
        CHECK(sos && (uint8_t)jp[eoi] == 0xFF && (uint8_t)jp[eoi + 1] == 0xD9);
        size_t scan = eoi - sos, bn = sos + 300 * scan + 2;
        char *bomb = malloc(bn);
        memcpy(bomb, jp, sos);
        for (int k = 0; k < 300; k++) memcpy(bomb + sos + k * scan, jp + sos, scan);
        memcpy(bomb + bn - 2, "\xFF\xD9", 2);
        const char *sp = tmp_path("scans.jpg");
        CHECK(write_raw(sp, bomb, bn) == 0 && expect_error(sp, "scans"));
        free(bomb);
        free(jp);
    }
    /* A JPEG whose SOF claims 65000 x 65000: splice the size into a real one. */
    size_t n;
    char *j = slurp(fixture("smooth.jpg"), &n);
    CHECK(j);
    for (size_t i = 2; i + 9 < n; i++)
        if ((uint8_t)j[i] == 0xFF && ((uint8_t)j[i + 1] == 0xC0 || (uint8_t)j[i + 1] == 0xC2)) {
            j[i + 5] = (char)0xFD, j[i + 6] = (char)0xE8, j[i + 7] = (char)0xFD, j[i + 8] = (char)0xE8;
            break;
        }
    const char *jb = tmp_path("bomb.jpg");
    CHECK(write_raw(jb, j, n) == 0 && expect_error(jb, "too large"));
    free(j);
    /* The limit is configurable and named. */
    setenv("ATTNCAP_MAX_IMAGE_PIXELS", "34", 1);
    CHECK(expect_error(fixture("rgb.png"), "ATTNCAP_MAX_IMAGE_PIXELS")); /* 7x5 = 35 */
    setenv("ATTNCAP_MAX_IMAGE_PIXELS", "35", 1);
    ac_image img;
    ac_err err;
    CHECK(ac_image_load(fixture("rgb.png"), &img, &err) == 0);
    ac_image_free(&img);
    unsetenv("ATTNCAP_MAX_IMAGE_PIXELS");
}

/* Every truncation of every fixture fails cleanly, or (when only trailing bytes that carry no pixels
 * were cut) decodes to the very same pixels. */
static void test_truncations(void) {
    const char *files[] = {"rgb.png", "rgb.bmp", "gray.bmp", "rgba.png", "palette.gif", "palette.png",
                           "rgb16.png", "interlaced.png", "smooth.jpg", "exif6.jpg"};
    int errors = 0, same = 0;
    for (size_t f = 0; f < sizeof files / sizeof *files; f++) {
        size_t n;
        char *d = slurp(fixture(files[f]), &n);
        CHECK(d);
        ac_image full;
        ac_err err;
        CHECK(ac_image_load_mem(d, n, files[f], &full, &err) == 0);
        for (size_t len = 0; len < n; len++) {
            ac_image img;
            char *c = malloc(len + 1); /* exact-size copy so ASan sees overreads */
            memcpy(c, d, len);
            if (ac_image_load_mem(c, len, files[f], &img, &err) == 0) {
                int ok = img.w == full.w && img.h == full.h && !memcmp(img.px, full.px, (size_t)img.w * img.h * 3);
                ac_image_free(&img);
                free(c);
                CHECKF(ok, "%s truncated to %zu of %zu bytes decoded to different pixels", files[f], len, n);
                same++;
            } else {
                free(c);
                CHECKF(strchr(err.msg, '\n') == NULL && strstr(err.msg, files[f]), "bad message: %s", err.msg);
                errors++;
            }
        }
        ac_image_free(&full);
        free(d);
    }
    printf("# truncations: %d errors, %d decoded identically (trailer bytes only)\n", errors, same);
}

/* Real photos from ../shared decode upright to plausible sizes. */
static void test_shared_photos(void) {
    const char *dir = test_data_dir();
    if (!dir) SKIP("needs ../shared (ATTNCAP_DATA)");
    char p[4096];
    snprintf(p, sizeof p, "%s/images", dir);
    DIR *d = opendir(p);
    if (!d) SKIP("needs ../shared/images");
    struct dirent *e;
    int n = 0;
    while ((e = readdir(d))) {
        if (e->d_name[0] == '.') continue;
        const char *ext = strrchr(e->d_name, '.');
        if (!ext || (strcasecmp(ext, ".jpg") && strcasecmp(ext, ".png") && strcasecmp(ext, ".bmp"))) continue;
        snprintf(p, sizeof p, "%s/images/%s", dir, e->d_name);
        ac_image img;
        ac_err err;
        int rc = ac_image_load(p, &img, &err);
        if (rc) closedir(d);
        CHECKF(rc == 0, "%s", err.msg);
        CHECK(img.w >= 16 && img.h >= 16);
        ac_image small;
        CHECK(ac_image_resize(&img, 224, 224, &small, &err) == 0);
        ac_image_free(&small);
        ac_image_free(&img);
        n++;
    }
    closedir(d);
    CHECK(n > 0);
}

int main(void) {
    size_t n;
    char *m = slurp(fixture("manifest.json"), &n);
    manifest = m ? cJSON_Parse(m) : NULL;
    free(m);
    RUN(test_decode_formats);
    RUN(test_exif_orientation);
    RUN(test_exif_hostile);
    RUN(test_resize_vs_torch);
    RUN(test_resize_errors_flip_float);
    RUN(test_vector_paths_exact);
    RUN(test_hostile_files);
    RUN(test_truncations);
    RUN(test_shared_photos);
    cJSON_Delete(manifest);
    return TEST_EXIT();
}
