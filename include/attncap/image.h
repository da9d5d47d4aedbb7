/* attncap/image.h: not part of the stable API; may change in any release (the stable core: attncap.h). */
/* attncap/image.h: decode photos (JPEG via libjpeg-turbo, with its DCT scaling when wanted smaller;
 * PNG/BMP/GIF and CMYK JPEGs via stb_image, WebP via libwebp, TIFF via libtiff), upright by EXIF
 * orientation, refuse absurd sizes before decoding, resize with a proper filter. */
#ifndef ATTNCAP_IMAGE_H
#define ATTNCAP_IMAGE_H
#include <stdint.h>

#include "attncap/common.h"

#ifdef __cplusplus
extern "C" {
#endif

/* 8-bit RGB, row-major, w*h*3 bytes. Grayscale/RGBA/16-bit sources are converted (alpha over white). */
typedef struct ac_image {
    int w, h;
    uint8_t *px;
} ac_image;

/* Decodes path (refusing more than ac_limits_get().max_image_pixels pixels before decoding) and
 * applies the EXIF orientation of JPEGs: the photo at its full size. WebP: still images only, no EXIF
 * orientation; TIFF: the first page, its Orientation flips (not 90-degree turns) applied. */
int ac_image_load(const char *path, ac_image *img, ac_err *err);
int ac_image_load_mem(const void *data, size_t len, const char *name, ac_image *img, ac_err *err);
/* The same photo for a caller that will shrink it to at most min_w x min_h (upright: after the EXIF
 * orientation), which may then get fewer pixels: a JPEG is decoded with libjpeg-turbo's DCT scaling
 * by the smallest of 1/8, 1/4, 1/2 that still gives w >= min_w and h >= min_h (each side
 * ceil(side * factor)), then made upright; the caller's resize does the rest. Everything else (other
 * formats, a photo no factor below 1 fits, min_w or min_h <= 0) decodes whole, exactly as
 * ac_image_load. Which files load and the errors they give do not depend on min_w/min_h (a JPEG
 * libjpeg-turbo finds corrupt or cannot turn into RGB, CMYK, is decoded whole by stb_image, with a
 * hint or without); the pixel limit is the full size's.
 * Against stb_image's whole decode as the reference (tests/test_image_reduced.c, per channel of
 * 0..255): a whole JPEG, mean absolute difference <= 0.25, largest <= 6 (measured on 1,437 photos:
 * <= 0.112 and 4); reduced + ac_image_resize vs whole + ac_image_resize, real photos at 12 MP to
 * 448x448, <= 0.5 and <= 8; synthetic noise, edges and 1-pixel lines (the worst case) <= 2.5 and
 * <= 24. Callers: the encoder (ac_encoder_min_photo), the kept photo of overlays
 * (ac_captioner.keep_min_side), the detector. */
#define AC_HAVE_IMAGE_LOAD_MIN 1 /* for code built against older trees too (bench/latency.c) */
int ac_image_load_min(const char *path, int min_w, int min_h, ac_image *img, ac_err *err);
int ac_image_load_mem_min(const void *data, size_t len, const char *name, int min_w, int min_h, ac_image *img,
                          ac_err *err);
void ac_image_free(ac_image *img);

/* Resize to w x h (aspect ratio not kept: the encoder squashes photos to a square, as the training
 * photos were). Bilinear with area averaging when shrinking (antialiased): the triangle filter of
 * Pillow's BILINEAR and torch's interpolate(mode="bilinear", antialias=True), stretched to the
 * shrink factor. This is the default everywhere (features, caption, classify). */
int ac_image_resize(const ac_image *src, int w, int h, ac_image *dst, ac_err *err);
/* Plain bilinear, half-pixel centres, not antialiased (TF2 tf.image.resize "bilinear", torch
 * interpolate(mode="bilinear", align_corners=False)): only for matching references computed that
 * way (the known-answer check of ../shared/README.md). Identical to ac_image_resize when enlarging. */
int ac_image_resize_bilinear(const ac_image *src, int w, int h, ac_image *dst, ac_err *err);
/* Mirror left-right in place (augmentation). */
void ac_image_flip_h(ac_image *img);

/* Float version for the CNN: out is h*w*3 floats, (pixel - mean) * scale applied per channel. */
void ac_image_to_float(const ac_image *img, float mean, float scale, float *out);
#ifdef __cplusplus
}
#endif
#endif
