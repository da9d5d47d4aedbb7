/* tests/test_features_grid.c: feature caches of photos that keep their aspect ratio (features.h,
 * encoder.h AC_RESIZE_ASPECT), with a fake encoder (cell means of the prepared photo on its own grid):
 * each photo's grid is stored ("grids") and read back by every loader, its cells come first and zeros
 * after, mirrored copies keep the shape, a merge writes what one extraction writes, squashing caches
 * have no grids, and hostile grids are refused in one line. */
#include "attncap/encoder.h"
#include "attncap/features.h"

#include <stb_image_write.h>
#include <sys/stat.h>
#include <unistd.h>

#include "attncap/safetensors.h"
#include "test.h"

#define G 3      /* the padded grid: 3 x 3 */
#define SIZE 12  /* stride 4 */
#define DIM 4
#define L (G * G)

/* The photo's own grid (prepared h / 4 x w / 4), per cell its mean R, G, B / 7 and its index; zeros
 * after. */
static int fake_encode(void *ctx, const ac_image *img, float *out, int *gh, int *gw, ac_err *err) {
    (void)ctx;
    if (img->w % 4 || img->h % 4 || img->w > SIZE || img->h > SIZE || (img->w != SIZE && img->h != SIZE))
        return ac_errf(err, "fake encoder: got %dx%d", img->w, img->h);
    *gh = img->h / 4, *gw = img->w / 4;
    memset(out, 0, sizeof(float) * L * DIM);
    for (int gy = 0; gy < *gh; gy++)
        for (int gx = 0; gx < *gw; gx++) {
            float *o = out + (gy * *gw + gx) * DIM;
            double s[3] = {0};
            for (int y = 4 * gy; y < 4 * gy + 4; y++)
                for (int x = 4 * gx; x < 4 * gx + 4; x++)
                    for (int c = 0; c < 3; c++) s[c] += img->px[(y * img->w + x) * 3 + c];
            for (int c = 0; c < 3; c++) o[c] = (float)(s[c] / 16) / 7.0f;
            o[3] = (float)(gy * *gw + gx);
        }
    return 0;
}

static const char *aspect_id = "{\"file\":\"fake.tflite\",\"sha256\":\"dddd\",\"layer\":\"L\",\"size\":12,\"grid_h\":3,"
                               "\"grid_w\":3,\"dim\":4,\"resize\":\"" AC_ENCODER_ASPECT_TEXT "\"}";
static const char *squash_id = "{\"file\":\"fake.tflite\",\"sha256\":\"dddd\",\"layer\":\"L\",\"size\":12,\"grid_h\":3,"
                               "\"grid_w\":3,\"dim\":4}";

/* Photos of 24x12 (2:1), 12x24, 20x20, 40x4 (10:1) and 30x20 (3:2): grids 2x3, 3x2, 3x3, 1x3, 2x3. */
#define NPHOTO 5
static const int dims[NPHOTO][2] = {{24, 12}, {12, 24}, {20, 20}, {40, 4}, {30, 20}};
static const int grids[NPHOTO][2] = {{2, 3}, {3, 2}, {3, 3}, {1, 3}, {2, 3}};
static char photos[NPHOTO][4096];
static const char *paths[NPHOTO];

static void make_photos(void) {
    char dir[2048];
    snprintf(dir, sizeof dir, "%s/photos", test_tmpdir());
    mkdir(dir, 0777);
    for (int i = 0; i < NPHOTO; i++) {
        const int w = dims[i][0], h = dims[i][1];
        uint8_t *px = malloc((size_t)w * h * 3);
        for (int k = 0; k < w * h * 3; k++) px[k] = (uint8_t)((k * (i + 3) * 37 + i * 11) & 255);
        snprintf(photos[i], sizeof photos[i], "%s/q%d.png", dir, i);
        stbi_write_png(photos[i], w, h, 3, px, w * 3);
        free(px);
        paths[i] = photos[i];
    }
}

static void extract(const char *out, const char *id, const char *const *list, int n, int fp16, int flip) {
    ac_feature_source src = {NULL, fake_encode, SIZE, G, G, DIM, id};
    ac_features_opts o = {out, 2, fp16, flip, NULL, NULL, NULL};
    ac_features_stats st;
    ac_err err;
    CHECKF(ac_features_extract(&src, list, n, &o, &st, &err) == 0 && st.failed == 0, "%s", err.msg);
}

/* Row k of fc is photo i (mirrored if flip) on its own grid: the fake features of the photo prepared
 * by the policy, exactly; zeros after. */
static int row_is(const ac_feature_cache *fc, int k, int i, int flip) {
    ac_image img, r;
    ac_err err;
    float want[L * DIM], scratch[L * DIM];
    int gh, gw, ok = ac_image_load(photos[i], &img, &err) == 0 &&
                     ac_resize_photo(&img, SIZE, SIZE / G, AC_RESIZE_ASPECT, &r, &err) == 0;
    if (ok && flip) ac_image_flip_h(&r);
    ok = ok && fake_encode(NULL, &r, want, &gh, &gw, &err) == 0;
    int fh, fw;
    ac_features_grid(fc, k, &fh, &fw);
    ok = ok && fh == grids[i][0] && fw == grids[i][1] && gh == fh && gw == fw;
    const float *row = ac_features_row(fc, k, scratch);
    for (int j = 0; ok && j < L * DIM; j++) ok = j < gh * gw * DIM ? fabsf(row[j] - want[j]) <= 1e-3f * fabsf(want[j]) : row[j] == 0;
    ac_image_free(&img), ac_image_free(&r);
    return ok;
}

static void test_aspect_cache(void) {
    make_photos();
    char out[4096];
    snprintf(out, sizeof out, "%s/aspect", test_tmpdir());
    extract(out, aspect_id, paths, NPHOTO, 0, 1);
    ac_feature_cache fc[4];
    ac_err err;
    CHECKF(ac_features_load(out, &fc[0], &err) == 0, "%s", err.msg);
    CHECKF(ac_features_load_compact(out, &fc[1], &err) == 0, "%s", err.msg);
    CHECKF(ac_features_open(out, 0, &fc[2], &err) == 0 && fc[2].mapped_row, "%s", err.msg); /* mapped */
    const char *some[] = {"q3.png#flip", "q1.png"};
    CHECKF(ac_features_load_keys(out, some, 2, &fc[3], &err) == 0 && fc[3].n == 2, "%s", err.msg);
    for (int v = 0; v < 4; v++) {
        int ok = fc[v].grids != NULL;
        for (int i = 0; ok && i < NPHOTO; i++)
            for (int flip = 0; ok && flip < 2; flip++) {
                char key[32];
                snprintf(key, sizeof key, "q%d.png%s", i, flip ? "#flip" : "");
                const int k = ac_features_find(&fc[v], key);
                ok = v == 3 && k < 0 ? 1 : k >= 0 && row_is(&fc[v], k, i, flip);
            }
        CHECKF(ok, "loader %d", v);
        ac_features_free(&fc[v]);
    }
    /* F16 rows: the same grids */
    snprintf(out, sizeof out, "%s/aspect16", test_tmpdir());
    extract(out, aspect_id, paths, NPHOTO, 1, 0);
    CHECKF(ac_features_open(out, 0, &fc[0], &err) == 0, "%s", err.msg);
    int ok = 1;
    for (int i = 0; i < NPHOTO; i++) ok &= row_is(&fc[0], ac_features_find(&fc[0], paths[i] + strlen(paths[i]) - 6), i, 0);
    CHECK(ok);
    ac_features_free(&fc[0]);
    /* a squashing cache of the same encoder is another encoder: it neither has grids nor mixes in */
    snprintf(out, sizeof out, "%s/squash", test_tmpdir());
    extract(out, squash_id, paths, 2, 0, 0);
    char sh[4200];
    snprintf(sh, sizeof sh, "%s/shard-00000.safetensors", out);
    ac_st_file f;
    CHECKF(ac_st_read(sh, &f, &err) == 0, "%s", err.msg);
    CHECK(ac_st_find(&f, "grids") == NULL && ac_st_find(&f, "features"));
    ac_st_free(&f);
    CHECK(ac_features_load(out, &fc[0], &err) == 0 && fc[0].grids == NULL);
    int gh, gw;
    ac_features_grid(&fc[0], 0, &gh, &gw);
    CHECK(gh == G && gw == G);
    ac_features_free(&fc[0]);
    ac_feature_source src = {NULL, fake_encode, SIZE, G, G, DIM, aspect_id};
    ac_features_opts o = {out, 2, 0, 0, NULL, NULL, NULL};
    ac_features_stats st;
    CHECK(ac_features_extract(&src, paths, NPHOTO, &o, &st, &err) == -1 && strstr(err.msg, "different encoder") &&
          strstr(err.msg, "aspect kept"));
}

/* Two shares merged: the bytes one extraction over the photos in sorted order writes. */
static void test_merge_keeps_grids(void) {
    char a[4096], b[4096], one[4096], merged[4096];
    snprintf(a, sizeof a, "%s/share_a", test_tmpdir());
    snprintf(b, sizeof b, "%s/share_b", test_tmpdir());
    snprintf(one, sizeof one, "%s/one", test_tmpdir());
    snprintf(merged, sizeof merged, "%s/merged", test_tmpdir());
    const char *pa[3] = {paths[0], paths[2], paths[4]}, *pb[2] = {paths[1], paths[3]};
    extract(a, aspect_id, pa, 3, 0, 0);
    extract(b, aspect_id, pb, 2, 0, 0);
    extract(one, aspect_id, paths, NPHOTO, 0, 0); /* q0..q4: sorted already */
    const char *dirs[2] = {a, b};
    ac_features_merge_stats ms;
    ac_err err;
    CHECKF(ac_features_merge(merged, dirs, 2, 2, &ms, &err) == 0 && ms.keys == NPHOTO && ms.shards == 3, "%s", err.msg);
    for (int s = 0; s < 3; s++) {
        char p1[4200], p2[4200];
        snprintf(p1, sizeof p1, "%s/shard-%05d.safetensors", one, s);
        snprintf(p2, sizeof p2, "%s/shard-%05d.safetensors", merged, s);
        ac_st_file x, y;
        CHECK(ac_st_read(p1, &x, &err) == 0 && ac_st_read(p2, &y, &err) == 0);
        CHECKF(x.buf_len == y.buf_len && !memcmp(x.buf, y.buf, x.buf_len), "shard %d differs", s);
        ac_st_free(&x), ac_st_free(&y);
    }
}

/* A shard whose grids are hostile: refused in one line, naming the file (and the photo). */
static int write_shard(const char *dir, const int32_t *g, ac_st_dtype gtype, int grows, int gcols) {
    mkdir(dir, 0777);
    char path[4200];
    snprintf(path, sizeof path, "%s/shard-00000.safetensors", dir);
    float feat[L * DIM] = {0};
    ac_st_writer w;
    ac_st_writer_init(&w);
    ac_err err;
    const int64_t fs[3] = {1, L, DIM}, gs[2] = {grows, gcols};
    int rc = ac_st_writer_add(&w, "features", AC_ST_F32, 3, fs, feat, &err) ||
             ac_st_writer_add(&w, "grids", gtype, 2, gs, g, &err) || ac_st_writer_meta(&w, "images", "[\"x.png\"]", &err) ||
             ac_st_writer_meta(&w, "encoder", aspect_id, &err) || ac_st_write(&w, path, &err);
    ac_st_writer_free(&w);
    return rc;
}

static void test_hostile_grids(void) {
    const int32_t bad[][2] = {{0, 3}, {3, 0}, {-1, -9}, {4, 3}, {1, 10}, {2147483647, 2}};
    for (size_t k = 0; k < sizeof bad / sizeof *bad; k++) {
        char dir[4096];
        snprintf(dir, sizeof dir, "%s/hostile%zu", test_tmpdir(), k);
        CHECK(write_shard(dir, bad[k], AC_ST_I32, 1, 2) == 0);
        for (int map = 0; map < 2; map++) {
            ac_feature_cache fc;
            ac_err err;
            const int rc = map ? ac_features_open(dir, 0, &fc, &err) : ac_features_load(dir, &fc, &err);
            CHECKF(rc == -1 && strstr(err.msg, "shard-00000.safetensors") && strstr(err.msg, "x.png") &&
                       strstr(err.msg, "grid") && !strchr(err.msg, '\n'),
                   "%dx%d: %s", bad[k][0], bad[k][1], rc ? err.msg : "loaded");
        }
    }
    /* the wrong type or shape */
    const int32_t g3[3] = {1, 1, 1};
    const struct { ac_st_dtype t; int r, c; } shapes[] = {{AC_ST_U8, 1, 2}, {AC_ST_I32, 1, 3}, {AC_ST_I32, 2, 2}};
    for (size_t k = 0; k < sizeof shapes / sizeof *shapes; k++) {
        char dir[4096];
        snprintf(dir, sizeof dir, "%s/badshape%zu", test_tmpdir(), k);
        int32_t g[4] = {1, 1, 1, 1};
        CHECK(write_shard(dir, shapes[k].t == AC_ST_U8 ? g3 : g, shapes[k].t, shapes[k].r, shapes[k].c) == 0);
        ac_feature_cache fc;
        ac_err err;
        CHECKF(ac_features_load(dir, &fc, &err) == -1 && strstr(err.msg, "\"grids\"") && !strchr(err.msg, '\n'), "%s",
               err.msg);
    }
}

int main(void) {
    RUN(test_aspect_cache);
    RUN(test_merge_keeps_grids);
    RUN(test_hostile_grids);
    return TEST_EXIT();
}
