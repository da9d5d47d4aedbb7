/* bench/latency: one photo captioned in process, again and again, as `attncap caption PHOTO` does it
 * (read and decode, squash, the CNN on all the threads, the search with the model's settings: tags
 * and beam), after loading the model once: best, median and worst milliseconds, and the best CNN and
 * search times. Run from the repository (the model is found as the CLI finds it).
 * usage: latency [PHOTO]   (default: the first 640x480 photo of $ATTNCAP_DATA/data/coco/images)
 * The COCO detector is part of every run: the model's own when it has regions (the captioner runs it),
 * else $ATTNCAP_DATA/encoders/yolox_nano.tflite run beside the caption on the same decoded photo, as
 * `attncap detect` would (its best time is printed apart; absent: skipped, and said).
 * env: BENCH_RUNS (20), BENCH_THREADS (2), ATTNCAP_PRECISION (auto, as the CLI). bench/vs_main.sh builds this against another tree's
 * library too, so it uses only the public API that has not changed (the detector where the tree has it). */
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "attncap/captioner.h"
#if defined(__has_include)
#if __has_include("attncap/detect.h") && __has_include("attncap/regions.h")
#include "attncap/detect.h"
#define HAVE_DETECTOR 1
#endif
#endif

static int cmp_d(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

/* The first photo (by name) of dir that is 640x480, into out. */
static int find_640x480(const char *dir, char *out, size_t cap) { /* cap: room for dir/name */
    DIR *d = opendir(dir);
    if (!d) return -1;
    struct dirent *e;
    int found = 0;
    char best[256] = "";
    while ((e = readdir(d))) {
        if (!strstr(e->d_name, ".jpg") || (*best && strcmp(e->d_name, best) >= 0)) continue;
        char path[4096 + 260];
        snprintf(path, sizeof path, "%.4095s/%.255s", dir, e->d_name);
        ac_image im;
        ac_err err;
        if (ac_image_load(path, &im, &err)) continue;
        if (im.w == 640 && im.h == 480) snprintf(best, sizeof best, "%s", e->d_name), found = 1;
        ac_image_free(&im);
    }
    closedir(d);
    if (found) snprintf(out, cap, "%.3800s/%.255s", dir, best);
    return found ? 0 : -1;
}

int main(int argc, char **argv) {
    char photo[4096];
    const char *data = getenv("ATTNCAP_DATA") ? getenv("ATTNCAP_DATA") : "../shared";
    if (argc > 1) snprintf(photo, sizeof photo, "%s", argv[1]);
    else {
        char dir[4096];
        snprintf(dir, sizeof dir, "%s/data/coco/images", data);
        if (find_640x480(dir, photo, sizeof photo)) {
            printf("skip latency: no 640x480 photo in %s (give one)\n", dir);
            return 0;
        }
    }
    const int runs = getenv("BENCH_RUNS") ? atoi(getenv("BENCH_RUNS")) : 20;
    const int threads = getenv("BENCH_THREADS") ? atoi(getenv("BENCH_THREADS")) : 2;
    if (runs < 1 || threads < 1) {
        fprintf(stderr, "latency: BENCH_RUNS and BENCH_THREADS must be positive\n");
        return 1;
    }
    ac_captioner c;
    ac_err err = {{0}, 0};
    if (ac_captioner_init(&c, NULL, NULL, threads, &err)) {
        if (argc > 1) {
            fprintf(stderr, "latency: %s\n", err.msg);
            return 1;
        }
        printf("skip latency: %s\n", err.msg);
        return 0;
    }
#if defined(AC_HAVE_PRECISION) /* as the CLI: bf16x2 where the CPU has AMX (trees before it have no choice) */
    ac_precision precision = AC_PRECISION_AUTO;
    const char *env = getenv("ATTNCAP_PRECISION");
    if ((env && *env && ac_precision_parse(env, &precision, &err)) || ac_encoder_set_precision(&c.enc, precision, &err)) {
        fprintf(stderr, "latency: %s\n", err.msg);
        return 1;
    }
#endif
    const char *det_note = "no detector in this tree";
#if defined(HAVE_DETECTOR)
    ac_detector *det = NULL; /* the one run beside the caption, when the model has none */
    char det_path[4096];
    snprintf(det_path, sizeof det_path, "%s/encoders/yolox_nano.tflite", data);
    if (c.det) det_note = "detector: the model's own (regions)";
    else if (ac_detector_open(det_path, NULL, threads, &det, &err) == 0) det_note = "detector: run beside (the model has no regions)";
    else det_note = "detector: none (no yolox_nano.tflite)";
#endif
    double *t = malloc(sizeof *t * (size_t)runs), best_cnn = 1e30, best_dec = 1e30, best_det = 1e30;
    char *text = NULL;
    for (int r = -2; r < runs; r++) { /* two warm-up runs */
        ac_image im;
        ac_caption cap;
        double t0 = ac_now(), tc = 0, td = 0;
        if (ac_image_load(photo, &im, &err) || ac_captioner_run(&c, &im, &cap, &tc, &td, &err)) {
            fprintf(stderr, "latency: %s\n", err.msg);
            return 1;
        }
#if defined(HAVE_DETECTOR)
        if (det) {
            ac_detections d;
            const double t1 = ac_now();
            if (ac_detector_detect(det, &im, NULL, &d, &err)) {
                fprintf(stderr, "latency: %s\n", err.msg);
                return 1;
            }
            const double td1 = ac_now() - t1;
            if (r >= 0 && td1 < best_det) best_det = td1;
            ac_detections_free(&d);
        }
#endif
        if (r >= 0) {
            t[r] = (ac_now() - t0) * 1e3;
            best_cnn = tc < best_cnn ? tc : best_cnn, best_dec = td < best_dec ? td : best_dec;
        }
        free(text);
        text = ac_caption_text(&cap, c.model.vocab);
        ac_caption_free(&cap);
        ac_image_free(&im);
    }
    qsort(t, (size_t)runs, sizeof *t, cmp_d);
    printf("latency: %s at %d, beam %d, %d threads, %d runs: best %.1f median %.1f worst %.1f ms "
           "(best CNN %.1f, best search %.1f ms", photo, c.enc.size, c.beam.beam, threads, runs, t[0], t[runs / 2],
           t[runs - 1], best_cnn * 1e3, best_dec * 1e3);
    if (best_det < 1e30) printf(", best detector beside %.1f ms", best_det * 1e3);
    printf("; %s): %s\n", det_note, text ? text : "");
#if defined(HAVE_DETECTOR)
    ac_detector_close(det);
#endif
    free(text), free(t);
    ac_captioner_free(&c);
    return 0;
}
