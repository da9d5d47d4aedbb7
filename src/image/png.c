/* png.c: 8-bit RGB PNGs through libpng into an atomic file (png.h). */
#include "attncap/png.h"
#include "alloc_internal.h"

#include <png.h>
#include <stdlib.h>

typedef struct png_sink {
    ac_atomic_file af;
    ac_err *err;
    int failed;
} png_sink;

static void png_sink_write(png_structp png, png_bytep data, png_size_t len) {
    png_sink *s = png_get_io_ptr(png);
    if (!s->failed && ac_atomic_write(&s->af, data, len, s->err)) s->failed = 1;
}
static void png_sink_flush(png_structp png) { (void)png; }

int ac_png_write(const char *path, const ac_image *img, ac_err *err) {
    png_sink s = {.err = err};
    if (ac_atomic_open(&s.af, path, err)) return -1;
    png_structp png = png_create_write_struct(PNG_LIBPNG_VER_STRING, NULL, NULL, NULL);
    png_infop info = png ? png_create_info_struct(png) : NULL;
    png_bytep *rows = ac_malloc((size_t)img->h * sizeof *rows);
    if (!png || !info || !rows) {
        png_destroy_write_struct(&png, &info);
        free(rows);
        ac_atomic_abort(&s.af);
        return ac_errf(err, "%s: out of memory writing PNG", path);
    }
    if (setjmp(png_jmpbuf(png))) {
        png_destroy_write_struct(&png, &info);
        free(rows);
        ac_atomic_abort(&s.af);
        return s.failed ? -1 : ac_errf(err, "%s: libpng failed to encode the image", path);
    }
    png_set_write_fn(png, &s, png_sink_write, png_sink_flush);
    png_set_IHDR(png, info, (png_uint_32)img->w, (png_uint_32)img->h, 8, PNG_COLOR_TYPE_RGB, PNG_INTERLACE_NONE,
                 PNG_COMPRESSION_TYPE_DEFAULT, PNG_FILTER_TYPE_DEFAULT);
    /* photos barely compress further at higher levels or with adaptive filters; these are much faster */
    png_set_compression_level(png, 1);
    png_set_filter(png, 0, PNG_FILTER_SUB);
    for (int y = 0; y < img->h; y++) rows[y] = img->px + (size_t)y * img->w * 3;
    png_write_info(png, info);
    png_write_image(png, rows);
    png_write_end(png, NULL);
    png_destroy_write_struct(&png, &info);
    free(rows);
    if (s.failed) {
        ac_atomic_abort(&s.af);
        return -1;
    }
    return ac_atomic_commit(&s.af, err);
}
