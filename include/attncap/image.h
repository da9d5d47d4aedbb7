/* attncap/image.h: decode photos (JPEG/PNG/BMP/GIF via stb_image), upright by EXIF orientation,
 * refuse absurd sizes before decoding, resize with a proper filter. */
#ifndef ATTNCAP_IMAGE_H
#define ATTNCAP_IMAGE_H
#include <stdint.h>

#include "attncap/common.h"

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
 * photos were). Bilinear with area averaging when shrinking (antialiased). */
int ac_image_resize(const ac_image *src, int w, int h, ac_image *dst, ac_err *err);

/* Float version for the CNN: out is h*w*3 floats, (pixel - mean) * scale applied per channel. */
void ac_image_to_float(const ac_image *img, float mean, float scale, float *out);
#endif
