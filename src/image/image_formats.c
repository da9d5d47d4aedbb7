/* image_formats.c: WebP through libwebp and TIFF through libtiff (image_internal.h): Debian's
 * libraries, no decoder of our own. Both are asked for the size first and refused over the pixel
 * limit before a pixel is decoded; a truncated or corrupt file is one line naming it. libtiff's
 * messages go to a per-file handler (never to stderr: the library does not print); the process-wide
 * handlers, which a few of its paths still use, are silenced once. */
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <tiffio.h>
#include <webp/decode.h>

#include "image_internal.h"
#include "alloc_internal.h"

int ac_image_webp_decode(const uint8_t *p, size_t n, const char *name, uint64_t max_pixels, ac_image *img, ac_err *err) {
    memset(img, 0, sizeof *img);
    WebPBitstreamFeatures f;
    VP8StatusCode st = WebPGetFeatures(p, n, &f);
    if (st == VP8_STATUS_NOT_ENOUGH_DATA) return ac_errf(err, "%s: truncated WebP (header incomplete)", name);
    if (st != VP8_STATUS_OK) return ac_errf(err, "%s: corrupt WebP header (libwebp status %d)", name, (int)st);
    if (f.has_animation) return ac_errf(err, "%s: animated WebP: only still images are read", name);
    if (f.width <= 0 || f.height <= 0) return ac_errf(err, "%s: not an image (size %dx%d)", name, f.width, f.height);
    const uint64_t npx = (uint64_t)f.width * (uint64_t)f.height;
    if (npx > max_pixels)
        return ac_errf(err, "%s: image too large: %dx%d = %llu pixels, over the limit of %llu (raise ATTNCAP_MAX_IMAGE_PIXELS)",
                       name, f.width, f.height, (unsigned long long)npx, (unsigned long long)max_pixels);
    uint8_t *rgb = ac_malloc((size_t)npx * 3);
    if (!rgb) return ac_errf(err, "%s: out of memory for %dx%d pixels", name, f.width, f.height);
    int ok;
    if (!f.has_alpha) {
        ok = WebPDecodeRGBInto(p, n, rgb, (size_t)npx * 3, f.width * 3) != NULL;
    } else { /* alpha over white, exact rounding as image.c's */
        int w, h;
        uint8_t *s = WebPDecodeRGBA(p, n, &w, &h);
        ok = s && w == f.width && h == f.height;
        for (size_t i = 0; ok && i < npx; i++) {
            unsigned a = s[i * 4 + 3];
            for (int c = 0; c < 3; c++) rgb[i * 3 + c] = (uint8_t)((s[i * 4 + c] * a + 255 * (255 - a) + 127) / 255);
        }
        WebPFree(s);
    }
    if (!ok) {
        free(rgb);
        return ac_errf(err, "%s: corrupt or truncated WebP (libwebp could not decode its %dx%d pixels)", name, f.width,
                       f.height);
    }
    img->w = f.width, img->h = f.height, img->px = rgb;
    return 0;
}

/* A TIFF file in memory, for libtiff's client procedures. */
typedef struct {
    const uint8_t *p;
    size_t n, at;
    char msg[160]; /* libtiff's first error */
} mem_tiff;

static tmsize_t mt_read(thandle_t h, void *buf, tmsize_t len) {
    mem_tiff *m = h;
    if (len < 0) return -1;
    size_t k = m->at < m->n ? m->n - m->at : 0;
    if ((size_t)len < k) k = (size_t)len;
    memcpy(buf, m->p + m->at, k);
    m->at += k;
    return (tmsize_t)k;
}
static tmsize_t mt_write(thandle_t h, void *buf, tmsize_t len) {
    (void)h, (void)buf, (void)len;
    return -1;
}
static toff_t mt_seek(thandle_t h, toff_t off, int whence) {
    mem_tiff *m = h;
    const uint64_t base = whence == SEEK_CUR ? m->at : whence == SEEK_END ? m->n : 0;
    m->at = (size_t)(base + off); /* a backward seek arrives as off modulo 2^64; past the end reads nothing */
    return m->at;
}
static int mt_close(thandle_t h) {
    (void)h;
    return 0;
}
static toff_t mt_size(thandle_t h) { return ((mem_tiff *)h)->n; }
static int mt_map(thandle_t h, void **base, toff_t *size) {
    (void)h, (void)base, (void)size;
    return 0;
}
static void mt_unmap(thandle_t h, void *base, toff_t size) { (void)h, (void)base, (void)size; }

/* Keeps libtiff's first error as one line; warnings are dropped. Returns 1: handled, not printed. */
static int mt_error(TIFF *tif, void *user, const char *module, const char *fmt, va_list ap) {
    (void)tif, (void)module;
    mem_tiff *m = user;
    if (m && !m->msg[0]) {
        vsnprintf(m->msg, sizeof m->msg, fmt, ap);
        for (char *c = m->msg; *c; c++)
            if (*c == '\n' || *c == '\r') *c = ' ';
    }
    return 1;
}
static int mt_warning(TIFF *tif, void *user, const char *module, const char *fmt, va_list ap) {
    (void)tif, (void)user, (void)module, (void)fmt, (void)ap;
    return 1;
}

static pthread_once_t tiff_quiet_once = PTHREAD_ONCE_INIT;
static void tiff_quiet(void) {
    TIFFSetErrorHandler(NULL);
    TIFFSetWarningHandler(NULL);
}

int ac_image_tiff_decode(const uint8_t *p, size_t n, const char *name, uint64_t max_pixels, ac_image *img, ac_err *err) {
    memset(img, 0, sizeof *img);
    pthread_once(&tiff_quiet_once, tiff_quiet);
    mem_tiff m = {.p = p, .n = n};
    TIFFOpenOptions *o = TIFFOpenOptionsAlloc();
    if (!o) return ac_errf(err, "%s: out of memory (TIFF reader)", name);
    TIFFOpenOptionsSetErrorHandlerExtR(o, mt_error, &m);
    TIFFOpenOptionsSetWarningHandlerExtR(o, mt_warning, &m);
    /* no single allocation of libtiff's beyond what a 16-bit RGBA image at the pixel limit takes */
    const uint64_t cap = max_pixels > ((uint64_t)1 << 40) ? (uint64_t)1 << 43 : max_pixels * 8;
    TIFFOpenOptionsSetMaxSingleMemAlloc(o, (tmsize_t)(cap > INT64_MAX ? INT64_MAX : cap));
    TIFF *t = TIFFClientOpenExt(name, "rm", &m, mt_read, mt_write, mt_seek, mt_close, mt_size, mt_map, mt_unmap, o);
    TIFFOpenOptionsFree(o);
    if (!t) return ac_errf(err, "%s: corrupt or truncated TIFF (%s)", name, m.msg[0] ? m.msg : "unreadable header");
    uint32_t w = 0, h = 0;
    int rc = -1;
    uint32_t *raster = NULL;
    char why[1024];
    if (!TIFFGetField(t, TIFFTAG_IMAGEWIDTH, &w) || !TIFFGetField(t, TIFFTAG_IMAGELENGTH, &h) || !w || !h) {
        ac_errf(err, "%s: not an image (TIFF without a size)", name);
    } else if ((uint64_t)w * h > max_pixels) {
        ac_errf(err, "%s: image too large: %ux%u = %llu pixels, over the limit of %llu (raise ATTNCAP_MAX_IMAGE_PIXELS)",
                name, w, h, (unsigned long long)w * h, (unsigned long long)max_pixels);
    } else if (!TIFFRGBAImageOK(t, why)) {
        for (char *c = why; *c; c++)
            if (*c == '\n' || *c == '\r') *c = ' ';
        ac_errf(err, "%s: unsupported TIFF (%s)", name, why);
    } else if (!(raster = ac_malloc((size_t)w * h * sizeof *raster)) || !(img->px = ac_malloc((size_t)w * h * 3))) {
        ac_errf(err, "%s: out of memory for %ux%u pixels", name, w, h);
    } else if (!TIFFReadRGBAImageOriented(t, w, h, raster, ORIENTATION_TOPLEFT, 1) || m.msg[0]) {
        ac_errf(err, "%s: corrupt or truncated TIFF (%s)", name, m.msg[0] ? m.msg : "pixel data unreadable");
    } else {
        /* the RGBA interface gives premultiplied alpha: over white is c + (255 - a) */
        for (size_t i = 0; i < (size_t)w * h; i++) {
            const uint32_t v = raster[i], a = TIFFGetA(v);
            img->px[i * 3] = (uint8_t)(TIFFGetR(v) + 255 - a > 255 ? 255 : TIFFGetR(v) + 255 - a);
            img->px[i * 3 + 1] = (uint8_t)(TIFFGetG(v) + 255 - a > 255 ? 255 : TIFFGetG(v) + 255 - a);
            img->px[i * 3 + 2] = (uint8_t)(TIFFGetB(v) + 255 - a > 255 ? 255 : TIFFGetB(v) + 255 - a);
        }
        img->w = (int)w, img->h = (int)h, rc = 0;
    }
    free(raster);
    if (rc) free(img->px), img->px = NULL;
    TIFFClose(t);
    return rc;
}
