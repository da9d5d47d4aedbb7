/* tests/test_fuzz_regress.c: replays the committed fuzz corpora (fuzz/corpus/TARGET/) and crash
 * reproducers (fuzz/crashes/TARGET/) of every target through the same harness functions libFuzzer runs,
 * each under the limit its fuzzer sets (fuzz_NAME_limit, fuzz_main.h), so that under `make test-asan`
 * every input that once mattered is checked again: the harness aborts on a contract broken (an error of
 * more than one line, or not naming the file), ASan/UBSan on the rest. A folder of fuzz/crashes/ with no
 * target here fails the test. Add a target: include its fuzz/fuzz_NAME.c here and add a line to
 * `targets`. */
#define AC_FUZZ_NO_MAIN
#include "../fuzz/fuzz_features.c"
#include "../fuzz/fuzz_image.c"
#include "../fuzz/fuzz_safetensors.c"
#include "../fuzz/fuzz_dataset.c"
#include "../fuzz/fuzz_model.c"
#include "../fuzz/fuzz_results.c"
#include "../fuzz/fuzz_tokenize.c"
#include "../fuzz/fuzz_boxes.c"
#include "../fuzz/fuzz_tags.c"
#include "../fuzz/fuzz_detector.c"
#include "../fuzz/fuzz_model_meta.c"
#include "../fuzz/fuzz_tflite.c"
#include "../fuzz/fuzz_serve.c"

#include <dirent.h>
#include <sys/stat.h>

#include "test.h"

#define TARGET(name, corpus) {#name, fuzz_##name, fuzz_##name##_limit, corpus}
/* corpus: the seed folder under the repository when it is not fuzz/corpus/NAME (fuzz/run.sh seeds
 * tflite from the test fixtures) */
static const struct {
    const char *name;
    int (*fn)(const uint8_t *, size_t);
    const char *const *limit;
    const char *corpus;
} targets[] = {TARGET(safetensors, NULL), TARGET(image, NULL),     TARGET(features, NULL),
               TARGET(dataset, NULL),     TARGET(model, NULL),     TARGET(results, NULL),
               TARGET(tokenize, NULL),    TARGET(boxes, NULL),     TARGET(tags, NULL),
               TARGET(detector, NULL),    TARGET(model_meta, NULL), TARGET(tflite, "tests/fixtures/cnn"),
               TARGET(serve, NULL)};

static const char *root_dir(void) { return getenv("ATTNCAP_ROOT") ? getenv("ATTNCAP_ROOT") : "."; }

/* Runs fn on every file in ROOT/DIR; returns the count, -1 if the directory is missing. */
static int replay(const char *dir_rel, int (*fn)(const uint8_t *, size_t)) {
    char dir[4096];
    snprintf(dir, sizeof dir, "%s/%s", root_dir(), dir_rel);
    DIR *d = opendir(dir);
    if (!d) return -1;
    struct dirent *e;
    int n = 0;
    while ((e = readdir(d))) {
        if (e->d_name[0] == '.') continue;
        char p[8192];
        snprintf(p, sizeof p, "%s/%s", dir, e->d_name);
        struct stat st;
        if (stat(p, &st) || !S_ISREG(st.st_mode)) continue;
        char *data;
        size_t len;
        ac_err err;
        if (ac_read_file(p, 64u << 20, &data, &len, &err)) continue;
        uint8_t *exact = malloc(len + 1); /* exact size, so ASan catches overreads */
        memcpy(exact, data, len);
        free(data);
        fn(exact, len);
        free(exact);
        n++;
    }
    closedir(d);
    return n;
}

static void test_replay(void) {
    snprintf(fuzz_features_dir, sizeof fuzz_features_dir, "%s/features", test_tmpdir());
    mkdir(fuzz_features_dir, 0777);
    int total = 0;
    for (size_t i = 0; i < sizeof targets / sizeof *targets; i++) {
        const char *env = targets[i].limit[0];
        if (*env) setenv(env, targets[i].limit[1], 1);
        char dir[1024];
        snprintf(dir, sizeof dir, "fuzz/corpus/%s", targets[i].name);
        int c = replay(targets[i].corpus ? targets[i].corpus : dir, targets[i].fn);
        CHECKF(c > 0, "%s is missing or empty", targets[i].corpus ? targets[i].corpus : dir);
        snprintf(dir, sizeof dir, "fuzz/crashes/%s", targets[i].name);
        int k = replay(dir, targets[i].fn);
        printf("# %s: %d corpus files, %d crash reproducers\n", targets[i].name, c, k < 0 ? 0 : k);
        if (*env) unsetenv(env);
        total += c + (k > 0 ? k : 0);
    }
    CHECK(total > 0);
}

/* Every folder of fuzz/crashes/ is a target's, so none is left unreplayed. */
static void test_every_crash_folder_replayed(void) {
    char dir[4096];
    snprintf(dir, sizeof dir, "%s/fuzz/crashes", root_dir());
    DIR *d = opendir(dir);
    CHECKF(d != NULL, "%s missing", dir);
    if (!d) return;
    struct dirent *e;
    int folders = 0;
    while ((e = readdir(d))) {
        if (e->d_name[0] == '.') continue;
        int known = 0;
        for (size_t i = 0; i < sizeof targets / sizeof *targets; i++) known |= !strcmp(targets[i].name, e->d_name);
        CHECKF(known, "fuzz/crashes/%s: no target in test_fuzz_regress replays it", e->d_name);
        folders++;
    }
    closedir(d);
    CHECK(folders > 0);
}

/* Debian's stb_image 2.27 decodes these from uninitialised memory without failing (valgrind saw it in
 * the fuzz corpus), or for the PNG allocates 2 GB before failing (fuzz_image); src/image/image.c must
 * refuse them by name, and still decode the valid restart-marker file to flat grey (Pillow agrees:
 * fuzz/make_stb_cases.py). */
static void test_stb_gaps(void) {
    static const struct {
        const char *file, *why;
    } bad[] = {{"jpeg-undefined-dqt", "undefined quantization or Huffman table"},
               {"jpeg-restart-missing", "restart markers missing"},
               {"jpeg-component-never-coded", "component is never coded"},
               {"bmp-palette-missing", "no room for its palette"},
               {"png-idat-length-past-end", "chunk runs past the end"}}; /* stb allocated 2 GB for it */
    const char *root = getenv("ATTNCAP_ROOT");
    char p[4096];
    ac_image img;
    ac_err err;
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        snprintf(p, sizeof p, "%s/fuzz/crashes/image/%s", root ? root : ".", bad[i].file);
        CHECKF(ac_image_load(p, &img, &err) != 0, "%s decoded", bad[i].file);
        CHECKF(strstr(err.msg, bad[i].why) && strstr(err.msg, bad[i].file), "%s: %s", bad[i].file, err.msg);
    }
    snprintf(p, sizeof p, "%s/fuzz/corpus/image/jpeg-restart-markers.jpg", root ? root : ".");
    int rc = ac_image_load(p, &img, &err);
    CHECKF(rc == 0, "%s", err.msg);
    if (rc) return;
    CHECK(img.w == 16 && img.h == 8);
    int flat = 1;
    for (int i = 0; i < img.w * img.h * 3; i++) flat &= img.px[i] == 128;
    CHECK(flat);
    ac_image_free(&img);
}

/* A palette index past the palette's end: black (as libpng decodes it), not stb's stack garbage.
 * And an OS/2 v1 BMP's small palette, which stb counts 4 entries short: the colours Pillow gives. */
static void test_palette_past_end(void) {
    static const uint8_t past[8][3] = {{255, 0, 0}, {0, 255, 0}, {0, 0, 0}, {0, 255, 0},
                                       {255, 0, 0}, {0, 255, 0}, {0, 0, 0}, {0, 255, 0}};
    static const uint8_t os2[8][3] = {{255, 0, 0}, {0, 255, 0}, {255, 0, 0}, {0, 255, 0},
                                      {255, 0, 0}, {0, 255, 0}, {255, 0, 0}, {0, 255, 0}};
    static const struct {
        const char *file;
        const uint8_t (*want)[3];
    } cases[] = {{"bmp-palette-index-past-end", past}, {"png-palette-index-past-end", past}, {"bmp-os2-small-palette", os2}};
    const char *root = getenv("ATTNCAP_ROOT");
    for (size_t f = 0; f < sizeof cases / sizeof *cases; f++) {
        char p[4096];
        snprintf(p, sizeof p, "%s/fuzz/crashes/image/%s", root ? root : ".", cases[f].file);
        ac_image img;
        ac_err err;
        int rc = ac_image_load(p, &img, &err);
        CHECKF(rc == 0, "%s", err.msg);
        if (rc) continue;
        CHECK(img.w == 4 && img.h == 2);
        CHECKF(!memcmp(img.px, cases[f].want, 8 * 3), "%s: pixel 2 is %d,%d,%d", cases[f].file, img.px[6], img.px[7], img.px[8]);
        ac_image_free(&img);
    }
}

int main(void) {
    RUN(test_replay);
    RUN(test_every_crash_folder_replayed);
    RUN(test_stb_gaps);
    RUN(test_palette_past_end);
    return TEST_EXIT();
}
