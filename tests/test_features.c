/* tests/test_features.c: the feature cache with a fake encoder (cell means of the resized photo):
 * sharding, F16/F32, resume (only missing keys are encoded), --flip keys, bad and duplicate photos,
 * refusal of another encoder's shards, loading and lookup. */
#include "attncap/features.h"

#include <dirent.h>
#include <fcntl.h>
#include <sys/file.h>
#include <stb_image_write.h>
#include <sys/stat.h>
#include <unistd.h>

#include "attncap/safetensors.h"
#include "test.h"

#define GH 2
#define GW 3
#define DIM 4
#define SIZE 12

static int n_calls;

/* Per cell: mean R, G, B of the cell, and the cell index. */
static void fake_features(const ac_image *img, float *out) {
    for (int gy = 0; gy < GH; gy++)
        for (int gx = 0; gx < GW; gx++) {
            float *o = out + (gy * GW + gx) * DIM;
            double s[3] = {0};
            int cnt = 0;
            for (int y = gy * img->h / GH; y < (gy + 1) * img->h / GH; y++)
                for (int x = gx * img->w / GW; x < (gx + 1) * img->w / GW; x++, cnt++)
                    for (int c = 0; c < 3; c++) s[c] += img->px[(y * img->w + x) * 3 + c];
            for (int c = 0; c < 3; c++) o[c] = (float)(s[c] / cnt) / 7.0f;
            o[3] = (float)(gy * GW + gx);
        }
}

static int fake_encode(void *ctx, const ac_image *img, float *out, int *gh, int *gw, ac_err *err) {
    (void)ctx, (void)gh, (void)gw;
    if (img->w != SIZE || img->h != SIZE) return ac_errf(err, "fake encoder: got %dx%d", img->w, img->h);
    n_calls++;
    fake_features(img, out);
    return 0;
}

static ac_feature_source fake_source(const char *sha) {
    static char id[2][256];
    static int slot;
    char *s = id[slot++ % 2];
    snprintf(s, 256, "{\"file\":\"fake.tflite\",\"sha256\":\"%s\",\"layer\":\"L\",\"size\":%d,\"grid_h\":%d,\"grid_w\":%d,\"dim\":%d}",
             sha, SIZE, GH, GW, DIM);
    ac_feature_source src = {NULL, fake_encode, SIZE, GH, GW, DIM, s};
    return src;
}

static int n_errors;
static char last_error[1024];
static void on_error(void *ctx, const char *msg) {
    (void)ctx;
    n_errors++;
    snprintf(last_error, sizeof last_error, "%s", msg);
}

#define NPHOTO 7
static char photos[NPHOTO][4096];
static const char *photo_ptrs[NPHOTO + 2];

static void make_photos(void) {
    char dir[2048];
    snprintf(dir, sizeof dir, "%s/photos", test_tmpdir());
    mkdir(dir, 0777);
    for (int i = 0; i < NPHOTO; i++) {
        int w = 10 + 3 * i, h = 8 + 2 * i;
        uint8_t *px = malloc((size_t)w * h * 3);
        for (int k = 0; k < w * h * 3; k++) px[k] = (uint8_t)((k * (i + 3) * 37 + i * 11) & 255);
        snprintf(photos[i], sizeof photos[i], "%s/p%d.png", dir, i);
        stbi_write_png(photos[i], w, h, 3, px, w * 3);
        free(px);
        photo_ptrs[i] = photos[i];
    }
}

/* Expected features of photo i (optionally mirrored), computed directly. */
static void expected(int i, int flip, float *out) {
    ac_image img, r;
    ac_err err;
    ac_image_load(photos[i], &img, &err);
    ac_image_resize(&img, SIZE, SIZE, &r, &err);
    if (flip) ac_image_flip_h(&r);
    fake_features(&r, out);
    ac_image_free(&img);
    ac_image_free(&r);
}

static int count_shards(const char *dir) {
    DIR *d = opendir(dir);
    if (!d) return -1;
    struct dirent *e;
    int n = 0;
    while ((e = readdir(d))) n += strncmp(e->d_name, "shard-", 6) == 0;
    closedir(d);
    return n;
}

static void test_extract_load_resume(void) {
    make_photos();
    char out[4096];
    snprintf(out, sizeof out, "%s/cache32", test_tmpdir());
    ac_feature_source src = fake_source("aaaa");
    ac_features_opts o = {out, 3, 0, 0, on_error, NULL, NULL};
    ac_features_stats st;
    ac_err err;
    n_calls = 0;
    /* First only photos 0..4. */
    CHECKF(ac_features_extract(&src, photo_ptrs, 5, &o, &st, &err) == 0, "%s", err.msg);
    CHECK(st.encoded == 5 && st.skipped == 0 && st.failed == 0 && st.shards == 2 && n_calls == 5);
    CHECK(count_shards(out) == 2);
    /* Then all: 0..4 skipped, 5 and 6 encoded into a new shard. */
    n_calls = 0;
    CHECKF(ac_features_extract(&src, photo_ptrs, NPHOTO, &o, &st, &err) == 0, "%s", err.msg);
    CHECK(st.encoded == 2 && st.skipped == 5 && st.shards == 1 && n_calls == 2);
    CHECK(count_shards(out) == 3);
    /* Nothing left to do. */
    n_calls = 0;
    CHECK(ac_features_extract(&src, photo_ptrs, NPHOTO, &o, &st, &err) == 0 && st.skipped == NPHOTO && n_calls == 0 && st.shards == 0);

    ac_feature_cache fc;
    CHECKF(ac_features_load(out, &fc, &err) == 0, "%s", err.msg);
    CHECK(fc.n == NPHOTO && fc.grid_h == GH && fc.grid_w == GW && fc.dim == DIM);
    CHECK(strstr(fc.encoder_json, "\"aaaa\""));
    for (int i = 1; i < fc.n; i++) CHECK(strcmp(fc.keys[i - 1], fc.keys[i]) < 0);
    for (int i = 0; i < NPHOTO; i++) {
        char key[32];
        snprintf(key, sizeof key, "p%d.png", i);
        int k = ac_features_find(&fc, key);
        CHECK(k >= 0);
        float want[GH * GW * DIM];
        expected(i, 0, want);
        CHECK(memcmp(want, fc.data + (size_t)k * GH * GW * DIM, sizeof want) == 0); /* F32: exact */
    }
    CHECK(ac_features_find(&fc, "nope.png") == -1);
    /* Mapped (budget 0): F32 rows read from the three shard files, the same keys and bits. */
    ac_feature_cache mapped;
    CHECKF(ac_features_open(out, 0, &mapped, &err) == 0, "%s", err.msg);
    int map_ok = mapped.n == fc.n && mapped.mapped_row && !mapped.data && !mapped.half && mapped.n_maps == 3;
    float mrow[GH * GW * DIM];
    for (int k = 0; map_ok && k < fc.n; k++)
        map_ok = !strcmp(mapped.keys[k], fc.keys[k]) && !mapped.mapped_f16[k] &&
                 !memcmp(ac_features_row(&mapped, k, mrow), fc.data + (size_t)k * GH * GW * DIM, sizeof mrow);
    ac_features_free(&mapped);
    CHECK(map_ok);
    ac_features_free(&fc);

    /* A different encoder must not add to this cache. */
    ac_feature_source other = fake_source("bbbb");
    CHECK(ac_features_extract(&other, photo_ptrs, NPHOTO, &o, &st, &err) != 0);
    CHECKF(strstr(err.msg, "different encoder") && strstr(err.msg, "shard-00000.safetensors"), "%s", err.msg);

    /* A second writer on the same cache is refused while the first holds the lock. */
    char lock[4200];
    snprintf(lock, sizeof lock, "%s/.lock", out);
    int fd = open(lock, O_RDWR);
    CHECK(fd >= 0 && flock(fd, LOCK_EX | LOCK_NB) == 0);
    int rc_locked = ac_features_extract(&src, photo_ptrs, NPHOTO, &o, &st, &err);
    close(fd);
    CHECKF(rc_locked != 0 && strstr(err.msg, "another attncap features run"), "%s", err.msg);
    /* Deleting a shard and rerunning recomputes exactly its keys, to the same bytes. */
    char p1[4200], saved[4200];
    snprintf(p1, sizeof p1, "%s/shard-00001.safetensors", out);
    snprintf(saved, sizeof saved, "%s/saved.safetensors", test_tmpdir());
    CHECK(rename(p1, saved) == 0);
    n_calls = 0;
    CHECK(ac_features_extract(&src, photo_ptrs, NPHOTO, &o, &st, &err) == 0);
    CHECK(n_calls == 2 && st.encoded == 2 && st.skipped == 5);
    CHECK(count_shards(out) == 3);
    snprintf(p1, sizeof p1, "%s/shard-00003.safetensors", out);
    ac_st_file a, b;
    CHECK(ac_st_read(p1, &a, &err) == 0 && ac_st_read(saved, &b, &err) == 0);
    CHECK(a.buf_len == b.buf_len && memcmp(a.buf, b.buf, a.buf_len) == 0);
    ac_st_free(&a);
    ac_st_free(&b);
    /* A stale temp file of a killed run is ignored and cleaned up. */
    char tmp[4200];
    snprintf(tmp, sizeof tmp, "%s/shard-00009.safetensors.tmp.999999", out);
    FILE *f = fopen(tmp, "wb");
    fputs("partial", f);
    fclose(f);
    CHECK(ac_features_load(out, &fc, &err) == 0 && fc.n == NPHOTO);
    ac_features_free(&fc);
    CHECK(ac_features_extract(&src, photo_ptrs, NPHOTO, &o, &st, &err) == 0);
    CHECK(access(tmp, F_OK) != 0);
}

static void test_fp16_flip_errors(void) {
    char out[4096], bad[4096], dup[4096];
    snprintf(out, sizeof out, "%s/cache16", test_tmpdir());
    snprintf(bad, sizeof bad, "%s/broken.jpg", test_tmpdir());
    FILE *f = fopen(bad, "wb");
    fputs("not a jpeg", f);
    fclose(f);
    snprintf(dup, sizeof dup, "%s/photos/../photos/p1.png", test_tmpdir()); /* same key as photos[1] */
    const char *list[] = {photos[0], bad, photos[1], dup, photos[2]};
    ac_feature_source src = fake_source("cccc");
    ac_features_opts o = {out, 4, 1, 1, on_error, NULL, NULL};
    ac_features_stats st;
    ac_err err;
    n_errors = 0;
    CHECKF(ac_features_extract(&src, list, 5, &o, &st, &err) == 0, "%s", err.msg);
    CHECK(st.failed == 2 && n_errors == 2 && st.encoded == 6);
    CHECKF(strstr(last_error, "duplicate") && strstr(last_error, dup), "%s", last_error);
    ac_feature_cache fc;
    CHECK(ac_features_load(out, &fc, &err) == 0);
    CHECK(fc.n == 6);
    for (int i = 0; i < 3; i++)
        for (int flip = 0; flip < 2; flip++) {
            char key[32];
            snprintf(key, sizeof key, "p%d.png%s", i, flip ? "#flip" : "");
            int k = ac_features_find(&fc, key);
            CHECKF(k >= 0, "missing %s", key);
            float want[GH * GW * DIM];
            expected(i, flip, want);
            for (int j = 0; j < GH * GW * DIM; j++) CHECK_NEAR(fc.data[(size_t)k * GH * GW * DIM + j], want[j], fabs(want[j]) * 1e-3 + 1e-6);
        }
    /* Flipped features differ from the plain ones (the photos are not symmetric). */
    int a = ac_features_find(&fc, "p0.png"), b = ac_features_find(&fc, "p0.png#flip");
    CHECK(memcmp(fc.data + (size_t)a * GH * GW * DIM, fc.data + (size_t)b * GH * GW * DIM, GH * GW * DIM * sizeof(float)) != 0);
    /* Compact loading keeps the F16 rows and converts them to the same float32 bits on demand. */
    ac_feature_cache half;
    CHECKF(ac_features_load_compact(out, &half, &err) == 0, "%s", err.msg);
    int same = half.n == fc.n && half.half && !half.data;
    float row[GH * GW * DIM];
    for (int k = 0; same && k < fc.n; k++)
        same = !strcmp(half.keys[k], fc.keys[k]) &&
               !memcmp(ac_features_row(&half, k, row), ac_features_row(&fc, k, NULL), sizeof row);
    ac_features_free(&half);
    /* ac_features_open: within its budget it loads compact; over it, the F16 rows stay in the two
     * mapped shards and convert to the same bits. */
    ac_feature_cache fit, mapped;
    CHECKF(ac_features_open(out, SIZE_MAX, &fit, &err) == 0, "%s", err.msg);
    CHECKF(ac_features_open(out, sizeof row / 2 * 6 - 1, &mapped, &err) == 0, "%s", err.msg);
    int map_ok = fit.half && !fit.mapped_row && mapped.mapped_row && !mapped.half && mapped.n_maps == 2 &&
                 mapped.n == fc.n;
    for (int k = 0; map_ok && k < fc.n; k++)
        map_ok = mapped.mapped_f16[k] && !strcmp(mapped.keys[k], fc.keys[k]) &&
                 !memcmp(ac_features_row(&mapped, k, row), ac_features_row(&fc, k, NULL), sizeof row);
    ac_features_free(&fit);
    ac_features_free(&mapped);
    CHECK(map_ok);
    /* A subset: only the wanted keys (unknown ones ignored), the same rows. */
    const char *wanted[] = {"p2.png#flip", "not-in-cache.png", "p0.png"};
    ac_feature_cache sub;
    CHECKF(ac_features_load_keys(out, wanted, 3, &sub, &err) == 0, "%s", err.msg);
    int sub_ok = sub.n == 2 && !strcmp(sub.keys[0], "p0.png") && !strcmp(sub.keys[1], "p2.png#flip");
    for (int k = 0; sub_ok && k < sub.n; k++)
        sub_ok = !memcmp(ac_features_row(&sub, k, row), ac_features_row(&fc, ac_features_find(&fc, sub.keys[k]), NULL),
                         sizeof row);
    ac_features_free(&sub);
    ac_features_free(&fc);
    CHECK(same);
    CHECK(sub_ok);
    /* Loading errors: missing dir, empty dir, a corrupt shard. */
    char empty[4096];
    snprintf(empty, sizeof empty, "%s/empty", test_tmpdir());
    mkdir(empty, 0777);
    CHECK(ac_features_load(empty, &fc, &err) != 0 && strstr(err.msg, "no feature shards"));
    CHECK(ac_features_load("/nonexistent/cache", &fc, &err) != 0 && strstr(err.msg, "/nonexistent/cache"));
    char sh[4200];
    snprintf(sh, sizeof sh, "%s/shard-00000.safetensors", out);
    f = fopen(sh, "r+b");
    fseek(f, 0, SEEK_END);
    long len = ftell(f);
    fclose(f);
    CHECK(truncate(sh, len - 5) == 0);
    CHECK(ac_features_load(out, &fc, &err) != 0 && strstr(err.msg, "shard-00000.safetensors"));
    CHECK(ac_features_extract(&src, list, 5, &o, &st, &err) != 0 && strstr(err.msg, "shard-00000.safetensors"));
    /* An unwritable output directory is an error, not a silent loss. */
    ac_features_opts o2 = {"/proc/attncap-cannot-write", 4, 0, 0, on_error, NULL, NULL};
    CHECK(ac_features_extract(&src, list, 1, &o2, &st, &err) != 0);
}

/* Every one of the 65536 half values loads as ac_f16_to_f32 says (the loader's F16C path). */
static void test_f16_all_values(void) {
    char dir[4096], path[4200];
    snprintf(dir, sizeof dir, "%s/allf16", test_tmpdir());
    mkdir(dir, 0777);
    snprintf(path, sizeof path, "%s/shard-00000.safetensors", dir);
    uint16_t *h = malloc(65536 * 2 + 6);
    for (int i = 0; i < 65536 + 3; i++) h[i] = (uint16_t)(i * 40503u); /* 65539: a tail beyond the 8-wide loop */
    for (int i = 0; i < 65536; i++) h[i] = (uint16_t)i;
    ac_st_writer w;
    ac_st_writer_init(&w);
    ac_err err;
    int64_t shape[3] = {1, 1, 65539};
    CHECK(ac_st_writer_add(&w, "features", AC_ST_F16, 3, shape, h, &err) == 0);
    CHECK(ac_st_writer_meta(&w, "images", "[\"all.png\"]", &err) == 0);
    CHECK(ac_st_writer_meta(&w, "encoder", "{\"sha256\":\"x\",\"layer\":\"L\",\"size\":1,\"grid_h\":1,\"grid_w\":1,\"dim\":65539}", &err) == 0);
    CHECK(ac_st_write(&w, path, &err) == 0);
    ac_st_writer_free(&w);
    ac_feature_cache fc;
    CHECKF(ac_features_load(dir, &fc, &err) == 0, "%s", err.msg);
    int bad = 0;
    for (int i = 0; i < 65539; i++) {
        float want = ac_f16_to_f32(h[i]), got = fc.data[i];
        if (isnan(want) ? !isnan(got) : memcmp(&want, &got, 4) != 0) bad++;
    }
    ac_features_free(&fc);
    free(h);
    CHECKF(bad == 0, "%d half values converted differently", bad);
}

int main(void) {
    RUN(test_f16_all_values);
    RUN(test_extract_load_resume);
    RUN(test_fp16_flip_errors);
    return TEST_EXIT();
}
