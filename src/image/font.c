/* font.c: text with a TrueType font through stb_truetype (font.h): UTF-8, kerning, subpixel
 * positioning, alpha-blended into an RGB image. */
#include "attncap/font.h"
#include "alloc_internal.h"

#include <math.h>
#include <stdlib.h>

#include <stb_truetype.h>

struct ac_font {
    stbtt_fontinfo info;
    char *data;
};

int ac_font_load(const char *path, ac_font **out, ac_err *err) {
    *out = NULL;
    if (!path) path = AC_DEFAULT_FONT;
    if (!ac_is_file(path))
        return ac_errf(err, "%s: font not found (install the Debian package fonts-dejavu-core)", path);
    ac_font *f = ac_calloc(1, sizeof *f);
    size_t len;
    if (!f) return ac_errf(err, "%s: out of memory", path);
    if (ac_read_file(path, 64u << 20, &f->data, &len, err)) {
        free(f);
        return -1;
    }
    int off = stbtt_GetFontOffsetForIndex((unsigned char *)f->data, 0);
    if (len < 12 || off < 0 || !stbtt_InitFont(&f->info, (unsigned char *)f->data, off)) {
        ac_font_free(f);
        return ac_errf(err, "%s: not a TrueType font", path);
    }
    *out = f;
    return 0;
}

void ac_font_free(ac_font *f) {
    if (!f) return;
    free(f->data);
    free(f);
}

/* Next code point of a UTF-8 string (invalid bytes read as U+FFFD). */
static int utf8_next(const char **s) {
    const unsigned char *p = (const unsigned char *)*s;
    int c = p[0], n = c < 0x80 ? 0 : c >= 0xF0 && c < 0xF8 ? 3 : c >= 0xE0 ? 2 : c >= 0xC0 ? 1 : -1;
    if (n < 0) { (*s)++; return 0xFFFD; }
    int cp = n == 0 ? c : n == 1 ? c & 0x1F : n == 2 ? c & 0x0F : c & 0x07;
    for (int i = 1; i <= n; i++) {
        if ((p[i] & 0xC0) != 0x80) { *s += i; return 0xFFFD; }
        cp = cp << 6 | (p[i] & 0x3F);
    }
    *s += n + 1;
    return cp;
}

static int font_run(const ac_font *f, ac_image *img, int x0, int y0, float px, const char *s, const uint8_t *rgb) {
    float scale = stbtt_ScaleForPixelHeight(&f->info, px);
    int asc, desc, gap;
    stbtt_GetFontVMetrics(&f->info, &asc, &desc, &gap);
    int base = y0 + (int)lroundf(asc * scale);
    float x = (float)x0;
    int prev = 0;
    while (*s) {
        int cp = utf8_next(&s);
        if (prev) x += scale * stbtt_GetCodepointKernAdvance(&f->info, prev, cp);
        int adv, lsb;
        stbtt_GetCodepointHMetrics(&f->info, cp, &adv, &lsb);
        if (img) {
            int bw, bh, xo, yo;
            float sx = x - floorf(x);
            unsigned char *bm = stbtt_GetCodepointBitmapSubpixel(&f->info, scale, scale, sx, 0, cp, &bw, &bh, &xo, &yo);
            for (int j = 0; bm && j < bh; j++) {
                int yy = base + yo + j;
                if (yy < 0 || yy >= img->h) continue;
                for (int i = 0; i < bw; i++) {
                    int xx = (int)floorf(x) + xo + i, a = bm[j * bw + i];
                    if (xx < 0 || xx >= img->w || !a) continue;
                    uint8_t *p = img->px + ((size_t)yy * img->w + xx) * 3;
                    for (int c = 0; c < 3; c++) p[c] = (uint8_t)((p[c] * (255 - a) + rgb[c] * a + 127) / 255);
                }
            }
            stbtt_FreeBitmap(bm, NULL);
        }
        x += adv * scale;
        prev = cp;
    }
    return (int)ceilf(x - x0);
}

int ac_font_ascent(const ac_font *f, float px) {
    int asc, desc, gap;
    stbtt_GetFontVMetrics(&f->info, &asc, &desc, &gap);
    return (int)lroundf(asc * stbtt_ScaleForPixelHeight(&f->info, px));
}

int ac_font_width(const ac_font *f, float px, const char *utf8) { return font_run(f, NULL, 0, 0, px, utf8, NULL); }

int ac_font_draw(const ac_font *f, ac_image *img, int x, int y, float px, const char *utf8, const uint8_t rgb[3]) {
    return font_run(f, img, x, y, px, utf8, rgb);
}
