/* bench/latency: one photo captioned in process, again and again, as `attncap caption PHOTO` does it
 * (read as large as the encoder needs, squash, the CNN on all the threads, the search with the
 * model's settings: naming, beam), after loading the model once: best, median and worst
 * milliseconds, the CPU time of all the threads per run (best, median: what a loaded machine changes
 * least), and the best time of each stage (read = decode + squash, CNN, search; with the model's detector
 * the squash is in CNN, done while the detector starts beside, as the CLI does it). Run from the
 * repository (the model is found as the CLI finds it).
 * usage: latency [PHOTO]   (default: the first 640x480 photo of $ATTNCAP_DATA/data/coco/images)
 * The COCO detector: the model's own when it has regions (the captioner runs it, inside "CNN"); else,
 * with BENCH_DETECTOR=1, $ATTNCAP_DATA/encoders/yolox_nano.tflite run beside the caption on the same
 * photo as read, as `attncap detect` would (counted in the total, its best time printed apart).
 * env: BENCH_RUNS (20), BENCH_THREADS (2), BENCH_DETECTOR (0), BENCH_PAUSE_MS (0: ms idle between runs, as a
 * server's photos come; a pool's threads fall asleep between them), BENCH_MODEL (the model, as --model; default:
 * found as the CLI finds it), ATTNCAP_PRECISION (auto, as the CLI).
 * bench/vs_main.sh builds this against another tree's library too (05a555b and later), so what a
 * tree lacks (the reduced read, naming, precision, the detector) is left out there, and said. */
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "attncap/captioner.h"
#if defined(__has_include)
#if __has_include("attncap/attncap.h") /* the captioner's in-place open/close were renamed with the core API */
#define LAT_INIT ac_captioner_init
#define LAT_FREE ac_captioner_free
#else
#define LAT_INIT ac_captioner_open
#define LAT_FREE ac_captioner_close
#endif
#if __has_include("attncap/naming.h")
#define HAVE_NAMING 1
#endif
#if __has_include("attncap/detect.h") && __has_include("attncap/regions.h")
#include "attncap/detect.h"
#define HAVE_DETECTOR 1
#endif
#endif

/* CPU seconds of every thread of the process (steadier than the wall clock on a shared machine). */
static double cpu_now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
    return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

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

/* The photo as `attncap caption` reads it: no larger than the encoder needs, where the tree can. */
static int read_photo(const ac_captioner *c, const char *path, ac_image *im, ac_err *err) {
#if defined(AC_HAVE_IMAGE_LOAD_MIN)
    int mw, mh;
    ac_encoder_min_photo(&c->enc, &mw, &mh);
    return ac_image_load_min(path, mw, mh, im, err);
#else
    (void)c;
    return ac_image_load(path, im, err);
#endif
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
    const int beside = getenv("BENCH_DETECTOR") && atoi(getenv("BENCH_DETECTOR")) > 0;
    const long pause_ms = getenv("BENCH_PAUSE_MS") ? atol(getenv("BENCH_PAUSE_MS")) : 0;
    if (runs < 1 || threads < 1) {
        fprintf(stderr, "latency: BENCH_RUNS and BENCH_THREADS must be positive\n");
        return 1;
    }
    ac_captioner c;
    ac_err err;
    memset(&err, 0, sizeof err); /* its fields differ between trees */
    if (LAT_INIT(&c, getenv("BENCH_MODEL"), NULL, threads, &err)) {
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
    const char *naming_note = "no naming in this tree";
#if defined(HAVE_NAMING) /* as the CLI without flags: the model's naming (ac_captioner_init starts with it off) */
    ac_naming_opts no = ac_naming_opts_for_model(&c.model);
    if (ac_captioner_set_naming(&c, &no, NULL, &err)) {
        fprintf(stderr, "latency: %s\n", err.msg);
        return 1;
    }
    c.beam.allow_unk = 0;
    naming_note = no.mode == AC_TAGS_AUTO ? "naming auto" : no.mode == AC_TAGS_OFF ? "naming off" : "naming given";
#endif
    const char *read_note = "read whole";
#if defined(AC_HAVE_IMAGE_LOAD_MIN)
    read_note = "read reduced to the encoder's need";
#endif
    const char *det_note = "no detector in this tree";
#if defined(HAVE_DETECTOR)
    ac_detector *det = NULL; /* the one run beside the caption, when asked and the model has none */
    char det_path[4096];
    snprintf(det_path, sizeof det_path, "%s/encoders/yolox_nano.tflite", data);
    if (c.det) det_note = "detector: the model's own (regions)";
    else if (!beside) det_note = "detector: none (the model has no regions; BENCH_DETECTOR=1 runs one beside)";
#if defined(AC_VERSION_MINOR) && AC_VERSION_MAJOR * 100 + AC_VERSION_MINOR >= 101 /* the core's since 1.1 */
    else if (ac_detector_open(det_path, &(ac_detector_opts){.threads = threads}, &det, &err) == 0)
#else
    else if (ac_detector_open(det_path, NULL, threads, &det, &err) == 0)
#endif
        det_note = "detector: run beside (the model has no regions)";
    else det_note = "detector: none (no yolox_nano.tflite)";
#else
    (void)beside;
#endif
    double *t = malloc(sizeof *t * (size_t)runs), *cpu = malloc(sizeof *cpu * (size_t)runs), best_read = 1e30, best_cnn = 1e30, best_dec = 1e30, best_det = 1e30;
    double first[4] = {0}; /* the first run after loading (cold): total, read, CNN, search ms */
    char *text = NULL;
    int w = 0, h = 0;
    for (int r = -2; r < runs; r++) { /* two warm-up runs */
        ac_image im, sq;
        ac_caption cap;
        double t0 = ac_now(), c0 = cpu_now(), tc = 0, td = 0;
        int squash_later = 0; /* as the CLI: with the model's detector beside, the captioner squashes */
#if defined(HAVE_DETECTOR)
        squash_later = c.det != NULL;
#endif
        memset(&sq, 0, sizeof sq);
        if (read_photo(&c, photo, &im, &err) || (!squash_later && ac_captioner_prepare(&c, &im, &sq, &err))) {
            fprintf(stderr, "latency: %s\n", err.msg);
            return 1;
        }
        const double tr = ac_now() - t0;
        if (ac_captioner_run(&c, squash_later ? &im : &sq, &cap, &tc, &td, &err)) {
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
        if (r == -2) first[0] = (ac_now() - t0) * 1e3, first[1] = tr * 1e3, first[2] = tc * 1e3, first[3] = td * 1e3;
        if (r >= 0) {
            t[r] = (ac_now() - t0) * 1e3, cpu[r] = (cpu_now() - c0) * 1e3;
            best_read = tr < best_read ? tr : best_read;
            best_cnn = tc < best_cnn ? tc : best_cnn, best_dec = td < best_dec ? td : best_dec;
        }
        w = im.w, h = im.h;
        free(text);
        text = ac_caption_text(&cap, c.model.vocab);
        ac_caption_free(&cap);
        ac_image_free(&sq), ac_image_free(&im);
        if (pause_ms > 0) nanosleep(&(struct timespec){pause_ms / 1000, pause_ms % 1000 * 1000000}, NULL);
    }
    qsort(t, (size_t)runs, sizeof *t, cmp_d);
    qsort(cpu, (size_t)runs, sizeof *cpu, cmp_d);
    printf("latency: %s (read %dx%d) at %d, beam %d, %d threads, %d runs: best %.1f median %.1f worst %.1f ms "
           "(best read %.1f, CNN %.1f, search %.1f ms", photo, w, h, c.enc.size, c.beam.beam, threads, runs, t[0],
           t[runs / 2], t[runs - 1], best_read * 1e3, best_cnn * 1e3, best_dec * 1e3);
    if (best_det < 1e30) printf(", detector beside %.1f ms", best_det * 1e3);
    printf("; CPU (all threads) best %.1f median %.1f ms", cpu[0], cpu[runs / 2]);
    printf("; the first after loading %.1f: read %.1f, CNN %.1f, search %.1f ms", first[0], first[1], first[2], first[3]);
    printf("; %s; %s; %s): %s\n", read_note, naming_note, det_note, text ? text : "");
#if defined(HAVE_DETECTOR)
    ac_detector_close(det);
#endif
    free(text), free(t), free(cpu);
    LAT_FREE(&c);
    return 0;
}
