/* attncap detect: the core API's detector (attncap.h) on photos: one JSON line per photo, and with --draw
 * the photo with its boxes drawn. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "attncap/attncap.h"
#include "commands.h"
#include "inputs.h"
#include "options.h"

static void usage(FILE *f) {
    fprintf(f, "usage: attncap detect [--detector M.tflite] [--labels L.txt] [--min-score S] [--draw DIR] [--threads N]\n"
               "                      [--precision P] PHOTO...|-\n\n"
               "Finds COCO's 80 kinds of object in each photo with the YOLOX-nano detector run by our engine\n"
               "(the photo scaled to fit 416x416, fed at its own aspect in multiples of 32: 640x480 as 416x320;\n"
               "per-class non-maximum suppression at IoU 0.45) and prints one JSON line\n"
               "per photo: {\"image\": PATH, \"width\": W, \"height\": H, \"detections\": [{\"label\": L, \"score\": S,\n"
               "\"box\": [x0, y0, x1, y1]}, ...]}, boxes in the photo's pixels, best first. A directory is walked;\n"
               "- reads paths from stdin, one a line.\n\n"
               "  --detector M.tflite  the detector (default: $ATTNCAP_DETECTOR, else yolox_nano.tflite in models/,\n"
               "                       the installed data directories or <data>/encoders)\n"
               "  --labels L.txt       class names, one a line (default: coco_labels.txt beside the detector)\n"
               "  --min-score S        keep detections scored at least S (objectness x class; default 0.3)\n"
               "  --draw DIR           also write DIR/<name>.png: the photo with its boxes, labels and scores\n"
               "  --threads N          threads (default: $ATTNCAP_THREADS or all cores)\n"
               "  --precision P        f32 (float32, the default: the same bits on every CPU; also auto, bf16x2) or int8\n"
               "                       (the convolutions' products on integers: each filter per channel and each\n"
               "                       input per photo quantized to 8 bits; ~20 %% less time, scores ~0.01 from\n"
               "                       float32's) (default: $ATTNCAP_PRECISION or auto)\n\n"
               "A photo that cannot be read gets one error line on stderr; the others are still done and the\n"
               "exit code is 1.\n");
}

/* DIR/<file name without its extension>.png into path[n]; -1 when it does not fit. */
static int draw_path(const char *dir, const char *photo_path, char *path, size_t n) {
    const char *base = strrchr(photo_path, '/');
    base = base ? base + 1 : photo_path;
    const char *dot = strrchr(base, '.');
    int stem = dot && dot > base ? (int)(dot - base) : (int)strlen(base);
    return snprintf(path, n, "%s/%.*s.png", dir, stem, base) >= (int)n ? -1 : 0;
}

int cmd_detect(int argc, char **argv) {
    const char *det_flag = NULL, *labels = NULL, *draw_dir = NULL, *precision = NULL;
    float min_score = 0.3f;
    int threads = 0;
    const cli_opt opts[] = {
        OPT_STR("--detector", &det_flag), OPT_STR("--labels", &labels), OPT_STR("--draw", &draw_dir), OPT_STR("--precision", &precision),
        OPT_FLOAT("--min-score", &min_score, 0.0, 1.0), OPT_INT("--threads", &threads, 1, 256), OPT_END,
    };
    const int n_pos = cli_parse("detect", argc, argv, opts, -1, usage);
    if (n_pos < 0) return n_pos == CLI_HELP ? 0 : 2;
    if (n_pos == 0) {
        fprintf(stderr, "attncap detect: no photo given (try --help)\n");
        return 2;
    }
    ac_err err;
    cli_strv photos = {0};
    for (int i = 1; i <= n_pos; i++) {
        int r = !strcmp(argv[i], "-") ? cli_read_list(stdin, "stdin", NULL, &photos, &err)
                : cli_is_dir(argv[i])   ? cli_walk_photos(argv[i], &photos, &err)
                                       : cli_strv_push(&photos, argv[i]);
        if (r < 0) {
            fprintf(stderr, "attncap detect: %s\n", err.msg);
            cli_strv_free(&photos);
            return 1;
        }
    }
    ac_detector *det = NULL;
    ac_detector_opts o;
    ac_detector_opts_init(&o);
    o.labels = labels, o.threads = threads, o.min_score = min_score;
    int rc = 0;
    if (ac_detector_open(det_flag, &o, &det, &err) < 0 || ac_detector_set_precision(det, precision, &err) < 0 ||
        (draw_dir && cli_mkdirs(draw_dir, &err) < 0)) {
        fprintf(stderr, "attncap detect: %s\n", err.msg);
        rc = 1;
        goto done;
    }
    for (int k = 0; k < photos.n; k++) {
        ac_detect_result *r = NULL;
        char path[4096];
        int ok = ac_detect_file(det, photos.v[k], draw_dir ? AC_KEEP_PHOTO : 0, &r, &err) == 0;
        if (ok && draw_dir && draw_path(draw_dir, photos.v[k], path, sizeof path) < 0)
            ok = 0, snprintf(err.msg, sizeof err.msg, "%s: path too long", draw_dir);
        else if (ok && draw_dir) ok = ac_detect_result_draw(det, r, path, &err) == 0;
        if (!ok) {
            fflush(stdout);
            fprintf(stderr, "attncap detect: %s\n", err.msg);
            rc = 1;
        } else {
            char *s = ac_detect_result_json(r, photos.v[k]);
            if (s) printf("%s\n", s);
            ac_free(s);
        }
        ac_detect_result_free(r);
    }
done:
    ac_detector_close(det);
    cli_strv_free(&photos);
    return rc;
}
