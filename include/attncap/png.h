/* attncap/png.h: not part of the stable API; may change in any release (the stable core: attncap.h). */
/* attncap/png.h: writing 8-bit RGB PNGs (libpng), atomically: a temp file renamed into place, so a
 * reader never sees half a file; any write error is reported. Used by overlays and plots. */
#ifndef ATTNCAP_PNG_H
#define ATTNCAP_PNG_H
#include "attncap/common.h"
#include "attncap/image.h"

#ifdef __cplusplus
extern "C" {
#endif

/* img (RGB, w x h) -> path. Fast settings (compression level 1, the Sub filter): photos barely
 * compress further. */
int ac_png_write(const char *path, const ac_image *img, ac_err *err);
/* img (RGB) -> a baseline JPEG at path (libturbojpeg; quality 1..100, 4:2:0 chroma), atomically as
 * ac_png_write: overlays take about a fifth of their PNGs' bytes. */
int ac_jpeg_write(const char *path, const ac_image *img, int quality, ac_err *err);

#ifdef __cplusplus
}
#endif
#endif
