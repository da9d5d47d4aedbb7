/* attncap/image.h: decode photos (JPEG/PNG/BMP/GIF via stb_image), upright by EXIF orientation,
 * refuse absurd sizes before decoding, resize with a proper filter. */
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
 * applies the EXIF orientation of JPEGs. */
int ac_image_load(const char *path, ac_image *img, ac_err *err);
int ac_image_load_mem(const void *data, size_t len, const char *name, ac_image *img, ac_err *err);
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
