/* attncap detect: the COCO detector (detect.h) on photos: one JSON line per photo, and with --draw
 * the photo with its boxes drawn. */
#include <cjson/cJSON.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "attncap/detect.h"
#include "attncap/detect_draw.h"
#include "attncap/locate.h"
#include "attncap/png.h"
#include "commands.h"
#include "inputs.h"
#include "options.h"

static void usage(FILE *f) {
    fprintf(f, "usage: attncap detect [--detector M.tflite] [--labels L.txt] [--min-score S] [--draw DIR] [--threads N] PHOTO...|-\n\n"
               "Finds COCO's 80 kinds of object in each photo with the YOLOX-nano detector run by our engine\n"
               "(letterboxed to 416x416; per-class non-maximum suppression at IoU 0.45) and prints one JSON line\n"
               "per photo: {\"image\": PATH, \"width\": W, \"height\": H, \"detections\": [{\"label\": L, \"score\": S,\n"
               "\"box\": [x0, y0, x1, y1]}, ...]}, boxes in the photo's pixels, best first. A directory is walked;\n"
               "- reads paths from stdin, one a line.\n\n"
               "  --detector M.tflite  the detector (default: $ATTNCAP_DETECTOR, else yolox_nano.tflite in models/,\n"
               "                       the installed data directories or <data>/encoders)\n"
               "  --labels L.txt       class names, one a line (default: coco_labels.txt beside the detector)\n"
               "  --min-score S        keep detections scored at least S (objectness x class; default 0.3)\n"
               "  --draw DIR           also write DIR/<name>.png: the photo with its boxes, labels and scores\n"
               "  --threads N          threads (default: $ATTNCAP_THREADS or all cores)\n\n"
               "A photo that cannot be read gets one error line on stderr; the others are still done and the\n"
               "exit code is 1.\n");
}

static cJSON *detections_json(const char *path, const ac_detector *det, const ac_detections *d) {
    cJSON *o = cJSON_CreateObject(), *arr = cJSON_CreateArray();
    cJSON_AddStringToObject(o, "image", path);
    cJSON_AddNumberToObject(o, "width", d->width);
    cJSON_AddNumberToObject(o, "height", d->height);
    for (int i = 0; i < d->n; i++) {
        const ac_detection *b = &d->items[i];
        cJSON *e = cJSON_CreateObject();
        cJSON_AddStringToObject(e, "label", ac_detector_label(det, b->label));
        cJSON_AddNumberToObject(e, "score", (double)(int)(b->score * 10000.0f + 0.5f) / 10000.0);
        const double box[4] = {b->x0, b->y0, b->x1, b->y1};
        cJSON *bx = cJSON_CreateArray();
        for (int k = 0; k < 4; k++) cJSON_AddItemToArray(bx, cJSON_CreateNumber((double)(long)(box[k] * 10.0 + 0.5) / 10.0));
        cJSON_AddItemToObject(e, "box", bx);
        cJSON_AddItemToArray(arr, e);
    }
    cJSON_AddItemToObject(o, "detections", arr);
    return o;
}

/* DIR/<file name without its extension>.png */
static int draw(const char *dir, const char *photo_path, const ac_image *img, const char *const *labels, int n,
                const ac_detections *d, const ac_font *font, ac_err *err) {
    const char *base = strrchr(photo_path, '/');
    base = base ? base + 1 : photo_path;
    const char *dot = strrchr(base, '.');
    int stem = dot && dot > base ? (int)(dot - base) : (int)strlen(base);
    char path[4096];
    if (snprintf(path, sizeof path, "%s/%.*s.png", dir, stem, base) >= (int)sizeof path) return ac_errf(err, "%s: path too long", dir);
    ac_image out = {0};
    int rc = ac_detections_draw(img, d, labels, n, font, &out, err);
    if (rc == 0) rc = ac_png_write(path, &out, err);
    ac_image_free(&out);
    return rc;
}

int cmd_detect(int argc, char **argv) {
    const char *det_flag = NULL, *labels = NULL, *draw_dir = NULL;
    float min_score = 0.3f;
    int threads = 0;
    const cli_opt opts[] = {
        OPT_STR("--detector", &det_flag), OPT_STR("--labels", &labels), OPT_STR("--draw", &draw_dir),
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
                : ac_is_dir(argv[i])   ? cli_walk_photos(argv[i], &photos, &err)
                                       : cli_strv_push(&photos, argv[i]);
        if (r < 0) {
            fprintf(stderr, "attncap detect: %s\n", err.msg);
            cli_strv_free(&photos);
            return 1;
        }
    }
    char *det_path = NULL;
    ac_detector *det = NULL;
    ac_font *font = NULL;
    const char **labels_v = NULL;
    int rc = 0;
    if (ac_find_companion(det_flag, "ATTNCAP_DETECTOR", NULL, "yolox_nano.tflite", &det_path, &err) < 0 ||
        ac_detector_open(det_path, labels, threads, &det, &err) < 0 || (draw_dir && ac_mkdirs(draw_dir, &err) < 0)) {
        fprintf(stderr, "attncap detect: %s\n", err.msg);
        rc = 1;
        goto done;
    }
    if (draw_dir && ac_font_load(NULL, &font, &err) < 0) font = NULL; /* boxes without text */
    const int n_labels = ac_detector_n_labels(det); /* the names, once for every drawing */
    if (!(labels_v = malloc(sizeof *labels_v * (size_t)n_labels))) {
        fprintf(stderr, "attncap detect: out of memory\n");
        rc = 1;
        goto done;
    }
    for (int i = 0; i < n_labels; i++) labels_v[i] = ac_detector_label(det, i);
    ac_detect_options o = ac_detect_options_default();
    o.min_score = min_score;
    for (int k = 0; k < photos.n; k++) {
        ac_image img = {0};
        ac_detections d = {0};
        if (ac_image_load(photos.v[k], &img, &err) < 0 || ac_detector_detect(det, &img, &o, &d, &err) < 0 ||
            (draw_dir && draw(draw_dir, photos.v[k], &img, labels_v, n_labels, &d, font, &err) < 0)) {
            fflush(stdout);
            fprintf(stderr, "attncap detect: %s\n", err.msg);
            rc = 1;
        } else {
            cJSON *j = detections_json(photos.v[k], det, &d);
            char *s = j ? cJSON_PrintUnformatted(j) : NULL;
            if (s) printf("%s\n", s);
            free(s);
            cJSON_Delete(j);
        }
        ac_detections_free(&d);
        ac_image_free(&img);
    }
done:
    free(labels_v);
    ac_font_free(font);
    ac_detector_close(det);
    free(det_path);
    cli_strv_free(&photos);
    return rc;
}
