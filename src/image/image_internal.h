/* image_internal.h: the decoders image.c hands a file to once it has sniffed, sized and vetted it
 * (the pixel limit and the JPEG/PNG/BMP/GIF checks stay in image.c, so which files load never
 * depends on which decoder runs). Each returns 0 with img filled (8-bit RGB, stored orientation:
 * image.c applies the EXIF one), or -1 with one line in err naming `name`. */
#ifndef ATTNCAP_IMAGE_INTERNAL_H
#define ATTNCAP_IMAGE_INTERNAL_H
#include <stddef.h>
#include <stdint.h>

#include "attncap/image.h"

/* A JPEG decoded by libjpeg-turbo with DCT-domain scaling by the smallest of 1/8, 1/4, 1/2 whose
 * output still has w >= min_w and h >= min_h (stored orientation: the caller swaps them for EXIF
 * orientations 5..8), else whole (also when min_w or min_h < 1: no hint). Returns 1, leaving img
 * empty, when the file is one turbo should not take (CMYK/YCCK, or a header it cannot read) or turbo
 * fails or warns on it (corrupt data it would pad with grey): the caller decodes it whole with
 * stb_image, so a file loads, or fails with the same message, with a hint or without. -1 only when
 * out of memory. */
int ac_image_jpeg_decode(const uint8_t *p, size_t n, const char *name, int min_w, int min_h, ac_image *img,
                         ac_err *err);

/* WebP (libwebp; still images only, alpha over white) and TIFF (libtiff's RGBA interface, first
 * page, its Orientation flips applied by libtiff; alpha over white). max_pixels: the pixel limit,
 * checked from the header before decoding. */
int ac_image_webp_decode(const uint8_t *p, size_t n, const char *name, uint64_t max_pixels, ac_image *img, ac_err *err);
int ac_image_tiff_decode(const uint8_t *p, size_t n, const char *name, uint64_t max_pixels, ac_image *img, ac_err *err);
#endif
