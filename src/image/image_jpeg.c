/* image_jpeg.c: JPEG decoding through libjpeg-turbo's TurboJPEG API (image_internal.h).
 *
 * libjpeg-turbo decodes a 640x480 photo in about half stb_image's time (a faster Huffman decoder;
 * SIMD IDCT, upsampling and colour conversion), and a 4032x3024 phone photo squashed to 448x448
 * needs a ninth of its pixels: the scaled inverse DCTs (an 8x8 block's coefficients -> 4x4, 2x2 or
 * 1x1 pixels) skip most of the IDCT and colour-conversion work and all the memory of the full image.
 * The factor is the smallest whose output covers what the caller asked for, so the resize that
 * follows still only shrinks. Only 1- and 3-component (grey, YCbCr) files come here: turbo cannot
 * turn CMYK/YCCK into RGB; those, and anything turbo refuses or warns about, go to stb_image
 * (image.c). */
#include <stdlib.h>
#include <string.h>
#include <turbojpeg.h>

#include "image_internal.h"
#include "alloc_internal.h"

int ac_image_jpeg_decode(const uint8_t *p, size_t n, const char *name, int min_w, int min_h, ac_image *img,
                         ac_err *err) {
    memset(img, 0, sizeof *img);
    if (n > (size_t)0x7fffffff) return 1;
    tjhandle tj = tjInitDecompress();
    if (!tj) return ac_errf(err, "%s: out of memory (JPEG decoder)", name);
    int w, h, subsamp, cs, rc = 1;
    if (tjDecompressHeader3(tj, p, (unsigned long)n, &w, &h, &subsamp, &cs) || w < 1 || h < 1 ||
        (cs != TJCS_YCbCr && cs != TJCS_GRAY && cs != TJCS_RGB))
        goto done;
    int denom = 1; /* no hint (min_w or min_h < 1), or no reduction covers it: the whole photo */
    for (int d = 8; d >= 2 && min_w > 0 && min_h > 0 && denom == 1; d /= 2) {
        tjscalingfactor f = {1, d};
        if (TJSCALED(w, f) >= min_w && TJSCALED(h, f) >= min_h) denom = d;
    }
    tjscalingfactor f = {1, denom};
    const int sw = TJSCALED(w, f), sh = TJSCALED(h, f);
    img->px = ac_malloc((size_t)sw * sh * 3);
    if (!img->px) {
        rc = ac_errf(err, "%s: out of memory for %dx%d pixels", name, sw, sh);
        goto done;
    }
    /* A warning (corrupt data turbo would pad with grey) stops it; the file then goes to stb as a
     * whole, so that it loads, or fails with the same message, as without a hint. */
    if (tjDecompress2(tj, p, (unsigned long)n, img->px, sw, 0, sh, TJPF_RGB, TJFLAG_ACCURATEDCT | TJFLAG_STOPONWARNING)) {
        free(img->px);
        img->px = NULL;
        goto done;
    }
    img->w = sw, img->h = sh, rc = 0;
done:
    tjDestroy(tj);
    return rc;
}
