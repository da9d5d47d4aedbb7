/* captioner_regions.c: a model with regions (regions.h) sees the photo's detected objects: the
 * detector beside the model, and the photo's regions appended to its annotation vectors; a model with
 * ImageNet words (imagenet_words.h) their regions too, from the encoder's classifier on the same grid. */
#include <stdlib.h>
#include <string.h>

#include "attncap/imagenet_words.h"
#include "attncap/regions.h"
#include "captioner_internal.h"
#include "alloc_internal.h"

int ac_captioner_open_detector(ac_captioner *c, const char *model_path, int regions, int threads, ac_err *err) {
    if (regions <= 0) return 0;
    if (ac_find_companion(NULL, "ATTNCAP_DETECTOR", model_path, "yolox_nano.tflite", &c->det_path, err) ||
        ac_detector_open(c->det_path, &(ac_detector_opts){.threads = threads}, &c->det, err))
        return ac_err_prefix(err, "the model attends to detected objects and needs its detector");
    const int n = ac_detector_labels(c->det);
    if (!(c->det_names = ac_malloc(sizeof *c->det_names * (size_t)n))) return ac_errf(err, "out of memory");
    for (int i = 0; i < n; i++) c->det_names[i] = ac_detector_label(c->det, i);
    return 0;
}

void ac_captioner_close_detector(ac_captioner *c) {
    ac_detector_close(c->det);
    free(c->det_path), free(c->det_names);
    c->det = NULL, c->det_path = NULL, c->det_names = NULL;
}

/* The photo's ImageNet words' regions (probs: the classifier's rows for its grid gh x gw), best first. */
static int imagenet_regions(const ac_captioner *c, const float *probs, int gh, int gw, ac_region *out) {
    const ac_imagenet_words *iw = &c->model.imagenet;
    if (iw->n == 0 || !probs || !c->head) return 0;
    ac_grid_window win[AC_NAMING_WINDOWS];
    const int nw = c->n_windows < AC_NAMING_WINDOWS ? c->n_windows : AC_NAMING_WINDOWS;
    memcpy(win, c->windows, sizeof *win * (size_t)nw);
    if (gh != c->enc.grid_h || gw != c->enc.grid_w) ac_grid_windows_fit(win, nw, gh, gw); /* as the head saw them */
    return ac_imagenet_words_regions(iw, probs, 1 + nw, win, gh, gw, c->model.dec.cfg.region_min_score, out,
                                     AC_REGIONS_MAX);
}

ac_detect_options ac_captioner_detect_options(const ac_captioner *c) {
    const ac_decoder_config *cfg = &c->model.dec.cfg;
    return (ac_detect_options){cfg->region_min_score, 0.45f, 100};
}

int ac_captioner_attach(const ac_captioner *c, ac_detector *det, ac_detections *d, float *ann, const float *probs,
                        const int *grid, ac_region *regions) {
    const ac_decoder_config *cfg = &c->model.dec.cfg;
    ac_region found[AC_REGIONS_MAX], words[AC_REGIONS_MAX];
    const int nd = ac_regions_from_detections(d, c->det_names, ac_detector_labels(det), cfg->region_min_score,
                                              cfg->regions, found);
    ac_detections_free(d);
    const int gh = grid[0], gw = grid[1], ni = imagenet_regions(c, probs, gh, gw, words);
    const int n = ac_regions_merge(found, nd, words, ni, cfg->regions, regions);
    for (int k = 0; k < n; k++)
        ac_region_vector(ann, gh, gw, c->D, &regions[k], cfg->region_scale, ann + (size_t)(gh * gw + k) * c->D);
    return n;
}

int ac_captioner_detect(const ac_captioner *c, ac_detector *det, const ac_image *photo, float *ann, const float *probs,
                        const int *grid, ac_region *regions, int *n_regions, ac_err *err) {
    *n_regions = 0;
    if (!det) return 0;
    const ac_detect_options o = ac_captioner_detect_options(c);
    ac_detections d;
    if (ac_detector_detect(det, photo, &o, &d, err)) return -1;
    *n_regions = ac_captioner_attach(c, det, &d, ann, probs, grid, regions);
    return 0;
}

int ac_caption_set_regions(ac_caption *out, const ac_region *regions, int n) {
    if (n <= 0 || out->n_regions != n) return 0;
    if (!(out->regions = ac_malloc(sizeof *out->regions * (size_t)n))) return -1;
    memcpy(out->regions, regions, sizeof *out->regions * (size_t)n);
    for (int i = 0; i < out->n_alt; i++)
        if (ac_caption_set_regions(&out->alt[i], regions, n)) return -1;
    return 0;
}
