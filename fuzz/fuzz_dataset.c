/* fuzz/fuzz_dataset.c: libFuzzer target for the caption dataset readers. The first byte picks the
 * reader (mod 5): 0 a .json file (COCO captions or Karpathy, told apart by content), 1 a .tsv file,
 * 2 a .csv file, 3 Flickr8k.token.txt alone in a directory, 4 a Flickr8k directory whose token file
 * is the rest of the input up to the first NUL byte and Flickr_8k.trainImages.txt what follows it.
 * Whatever loads must be self-consistent. Seeds: fuzz/corpus/dataset. Replayed by
 * tests/test_fuzz_regress.c. */
#include "fuzz_main.h"
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "attncap/dataset.h"

static char fuzz_dataset_dir[4096];

static void fuzz_dataset_write(const char *path, const uint8_t *data, size_t size) {
    FILE *f = fopen(path, "wb");
    if (!f) abort();
    fwrite(data, 1, size, f);
    fclose(f);
}

static int fuzz_dataset(const uint8_t *data, size_t size) {
    if (size < 1) return 0;
    if (!fuzz_dataset_dir[0]) {
        snprintf(fuzz_dataset_dir, sizeof fuzz_dataset_dir, "%s/fuzz-dataset-XXXXXX", getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp");
        if (!mkdtemp(fuzz_dataset_dir)) abort();
    }
    static const char *names[] = {"d.json", "d.tsv", "d.csv", "Flickr8k.token.txt", "Flickr8k.token.txt"};
    int mode = data[0] % 5;
    data++, size--;
    char path[4200], split[4200];
    snprintf(split, sizeof split, "%s/Flickr_8k.trainImages.txt", fuzz_dataset_dir);
    unlink(split);
    snprintf(path, sizeof path, "%s/%s", fuzz_dataset_dir, names[mode]);
    size_t head = size;
    if (mode == 4) {
        const uint8_t *z = memchr(data, 0, size);
        if (z) {
            head = (size_t)(z - data);
            fuzz_dataset_write(split, z + 1, size - head - 1);
        }
    }
    fuzz_dataset_write(path, data, head);
    ac_dataset ds;
    ac_err err;
    int rc = ac_dataset_load(mode == 4 ? fuzz_dataset_dir : path, NULL, &ds, &err);
    unlink(path);
    if (rc != 0) {
        if (strchr(err.msg, '\n')) abort();
        return 0;
    }
    if (!ds.format || !ds.image_dir) abort();
    for (int i = 0; i < ds.n; i++) {
        const ac_ds_image *im = &ds.images[i];
        if (!im->key || !im->path || !im->id || im->split < AC_SPLIT_TRAIN || im->split > AC_SPLIT_NONE || im->n_caps < 0) abort();
        for (int k = 0; k < im->n_caps; k++)
            if (!im->caps[k]) abort();
    }
    ac_dataset_free(&ds);
    return 0;
}

AC_FUZZ_MAIN(fuzz_dataset, "ATTNCAP_MAX_FILE_BYTES", "1000000")
