/* detections.c: the core API's detecting calls and results (attncap.h) over the detector of detect.h,
 * the path `attncap detect` takes: a photo read whole (ac_image_load), the detector's options as
 * opened. A result is the public ac_detect_result followed by what it points into: the boxes, the path
 * and, with AC_KEEP_PHOTO, the photo as read. */
#include "attncap/attncap.h"

#include <cjson/cJSON.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "attncap/detect.h"
#include "attncap/detect_draw.h"
#include "attncap/png.h"
#include "alloc_internal.h"

typedef struct detect_result {
    ac_detect_result pub; /* first: the caller's pointer is this */
    ac_detect_box *boxes;
    char *image;
    ac_image photo; /* with AC_KEEP_PHOTO */
} detect_result;

void ac_detect_result_free(ac_detect_result *pub) {
    detect_result *r = (detect_result *)pub;
    if (!r) return;
    free(r->boxes);
    free(r->image);
    ac_image_free(&r->photo);
    free(r);
}

/* Detects in img (moved into the result with AC_KEEP_PHOTO, else freed) into *out. */
static int detect(ac_detector *d, ac_image *img, const char *path, unsigned flags, ac_detect_result **out, ac_err *err) {
    const ac_detect_options o = ac_detector_options(d);
    ac_detections dets = {0};
    detect_result *r = NULL;
    int rc = ac_detector_detect(d, img, &o, &dets, err);
    if (rc == 0 && (!(r = ac_calloc(1, sizeof *r)) || (path && !(r->image = ac_strdup(path))) ||
                    (dets.n && !(r->boxes = ac_calloc((size_t)dets.n, sizeof *r->boxes)))))
        rc = ac_errf(err, "out of memory");
    if (rc == 0) {
        for (int i = 0; i < dets.n; i++) {
            const ac_detection *b = &dets.items[i];
            r->boxes[i] = (ac_detect_box){b->x0, b->y0, b->x1, b->y1, b->score, b->label, ac_detector_label(d, b->label)};
        }
        r->pub = (ac_detect_result){r->image, img->w, img->h, dets.n, r->boxes};
        if (flags & AC_KEEP_PHOTO) r->photo = *img, memset(img, 0, sizeof *img);
        *out = &r->pub;
    } else {
        ac_detect_result_free((ac_detect_result *)r);
    }
    ac_detections_free(&dets);
    ac_image_free(img);
    return rc;
}

int ac_detector_set_precision(ac_detector *d, const char *precision, ac_err *err) {
    ac_precision p;
    if (ac_precision_parse(precision ? precision : ac_default_precision(), &p, err)) return -1;
    return ac_detector_use_precision(d, p, err);
}

int ac_detect_file(ac_detector *d, const char *path, unsigned flags, ac_detect_result **out, ac_err *err) {
    *out = NULL;
    ac_image img = {0};
    if (!path) return ac_errc(err, AC_ERR_BAD_IMAGE, "no photo path given");
    if (ac_image_load(path, &img, err)) {
        if (err) err->code = AC_ERR_BAD_IMAGE;
        return -1;
    }
    return detect(d, &img, path, flags, out, err);
}

int ac_detect_bytes(ac_detector *d, const void *data, size_t size, unsigned flags, ac_detect_result **out, ac_err *err) {
    *out = NULL;
    ac_image img = {0};
    if (!data || !size) return ac_errc(err, AC_ERR_BAD_IMAGE, "photo in memory: no bytes given");
    char name[64];
    snprintf(name, sizeof name, "photo of %zu bytes", size);
    if (ac_image_load_mem(data, size, name, &img, err)) {
        if (err) err->code = AC_ERR_BAD_IMAGE;
        return -1;
    }
    return detect(d, &img, NULL, flags, out, err);
}

int ac_detect_rgb(ac_detector *d, const unsigned char *rgb, int height, int width, unsigned flags,
                  ac_detect_result **out, ac_err *err) {
    *out = NULL;
    if (!rgb) return ac_errc(err, AC_ERR_BAD_IMAGE, "pixels: none given");
    const unsigned long long max = (unsigned long long)ac_limits_get().max_image_pixels;
    if (width <= 0 || height <= 0) return ac_errc(err, AC_ERR_BAD_IMAGE, "pixels: bad size %d x %d (width x height)", width, height);
    if ((unsigned long long)width * (unsigned long long)height > max)
        return ac_errc(err, AC_ERR_BAD_IMAGE, "pixels: %d x %d is over the limit of %llu pixels (ATTNCAP_MAX_IMAGE_PIXELS)",
                       width, height, max);
    const size_t bytes = (size_t)width * (size_t)height * 3;
    ac_image img = {width, height, ac_malloc(bytes)};
    if (!img.px) return ac_errf(err, "out of memory");
    memcpy(img.px, rgb, bytes);
    return detect(d, &img, NULL, flags, out, err);
}

int ac_detect_result_draw(ac_detector *d, const ac_detect_result *pub, const char *path, ac_err *err) {
    const detect_result *r = (const detect_result *)pub;
    if (!r->photo.px) return ac_errf(err, "drawing boxes: the result keeps no photo (detect it with AC_KEEP_PHOTO)");
    if (!path) return ac_errf(err, "drawing boxes: no file given");
    const int n_labels = ac_detector_labels(d);
    const char **labels = ac_malloc(sizeof *labels * (size_t)n_labels);
    ac_detection *items = pub->n_boxes ? ac_malloc(sizeof *items * (size_t)pub->n_boxes) : NULL;
    if (!labels || (pub->n_boxes && !items)) {
        free(labels), free(items);
        return ac_errf(err, "out of memory");
    }
    for (int i = 0; i < n_labels; i++) labels[i] = ac_detector_label(d, i);
    for (int i = 0; i < pub->n_boxes; i++) {
        const ac_detect_box *b = &pub->boxes[i];
        items[i] = (ac_detection){b->x0, b->y0, b->x1, b->y1, b->score, b->label};
    }
    const ac_detections dets = {pub->n_boxes, items, pub->width, pub->height};
    ac_font *font = NULL;
    if (ac_font_load(NULL, &font, NULL) < 0) font = NULL; /* no font: the boxes without their text */
    ac_image out = {0};
    int rc = ac_detections_draw(&r->photo, &dets, labels, n_labels, font, &out, err);
    if (rc == 0) rc = ac_png_write(path, &out, err);
    ac_image_free(&out);
    ac_font_free(font);
    free(items), free(labels);
    return rc;
}

char *ac_detect_result_json(const ac_detect_result *r, const char *image) {
    cJSON *o = cJSON_CreateObject(), *arr = cJSON_CreateArray();
    char *s = NULL;
    if (!o || !arr) goto done;
    cJSON_AddStringToObject(o, "image", image ? image : r->image ? r->image : "");
    cJSON_AddNumberToObject(o, "width", r->width);
    cJSON_AddNumberToObject(o, "height", r->height);
    for (int i = 0; i < r->n_boxes; i++) {
        const ac_detect_box *b = &r->boxes[i];
        cJSON *e = cJSON_CreateObject(), *bx = cJSON_CreateArray();
        if (!e || !bx) {
            cJSON_Delete(e), cJSON_Delete(bx);
            goto done;
        }
        cJSON_AddStringToObject(e, "label", b->name);
        /* scores to 4 decimals, pixels to 1, rounded half up as the detector's first JSON did */
        cJSON_AddNumberToObject(e, "score", (double)(int)(b->score * 10000.0f + 0.5f) / 10000.0);
        const double box[4] = {b->x0, b->y0, b->x1, b->y1};
        for (int k = 0; k < 4; k++) cJSON_AddItemToArray(bx, cJSON_CreateNumber((double)(long)(box[k] * 10.0 + 0.5) / 10.0));
        cJSON_AddItemToObject(e, "box", bx);
        cJSON_AddItemToArray(arr, e);
    }
    cJSON_AddItemToObject(o, "detections", arr);
    arr = NULL;
    s = cJSON_PrintUnformatted(o);
done:
    cJSON_Delete(arr);
    cJSON_Delete(o);
    return s;
}
