/* tests/test_fuzz_regress.c: replays the committed fuzz corpora (fuzz/corpus/TARGET/) and crash
 * reproducers (fuzz/crashes/TARGET/) through the same harness functions libFuzzer runs, so that under
 * `make test-asan` every input that once mattered is checked again. Add a target: include its
 * fuzz/fuzz_NAME.c here and add a line to `targets`. */
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

#include <dirent.h>
#include <sys/stat.h>

#include "test.h"

static const struct {
    const char *name;
    int (*fn)(const uint8_t *, size_t);
} targets[] = {{"safetensors", fuzz_safetensors}, {"image", fuzz_image}, {"features", fuzz_features},
                 {"dataset", fuzz_dataset}, {"model", fuzz_model}, {"results", fuzz_results}, {"tokenize", fuzz_tokenize},
                 {"boxes", fuzz_boxes}, {"tags", fuzz_tags}, {"detector", fuzz_detector}, {"model_meta", fuzz_model_meta}};

/* Runs fn on every file in ROOT/fuzz/SUB/NAME; returns the count, -1 if the directory is missing. */
static int replay(const char *sub, const char *name, int (*fn)(const uint8_t *, size_t)) {
    const char *root = getenv("ATTNCAP_ROOT");
    char dir[4096];
    snprintf(dir, sizeof dir, "%s/fuzz/%s/%s", root ? root : ".", sub, name);
    DIR *d = opendir(dir);
    if (!d) return -1;
    struct dirent *e;
    int n = 0;
    while ((e = readdir(d))) {
        if (e->d_name[0] == '.') continue;
        char p[8192];
        snprintf(p, sizeof p, "%s/%s", dir, e->d_name);
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
    setenv("ATTNCAP_MAX_IMAGE_PIXELS", "1000000", 1); /* as in the fuzzers */
    setenv("ATTNCAP_MAX_TENSOR_ELEMS", "16777216", 1);
    int total = 0;
    for (size_t i = 0; i < sizeof targets / sizeof *targets; i++) {
        int c = replay("corpus", targets[i].name, targets[i].fn);
        CHECKF(c > 0, "fuzz/corpus/%s is missing or empty", targets[i].name);
        int k = replay("crashes", targets[i].name, targets[i].fn);
        printf("# %s: %d corpus files, %d crash reproducers\n", targets[i].name, c, k < 0 ? 0 : k);
        total += c;
    }
    unsetenv("ATTNCAP_MAX_IMAGE_PIXELS");
    unsetenv("ATTNCAP_MAX_TENSOR_ELEMS");
    CHECK(total > 0);
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
    RUN(test_stb_gaps);
    RUN(test_palette_past_end);
    return TEST_EXIT();
}
