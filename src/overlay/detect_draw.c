/* detect_draw.c: detections drawn over a photo (detect_draw.h). */
#include "attncap/detect_draw.h"
#include "alloc_internal.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* A colour per class, spread around the hue circle by the golden angle so neighbours differ. */
static void class_colour(int label, uint8_t rgb[3]) {
    float h = fmodf((float)label * 0.618034f, 1.0f) * 6.0f, f = h - floorf(h);
    float v = 0.95f, s = 0.85f, p = v * (1 - s), q = v * (1 - s * f), t = v * (1 - s * (1 - f)), r, g, b;
    switch ((int)h % 6) {
    case 0: r = v, g = t, b = p; break;
    case 1: r = q, g = v, b = p; break;
    case 2: r = p, g = v, b = t; break;
    case 3: r = p, g = q, b = v; break;
    case 4: r = t, g = p, b = v; break;
    default: r = v, g = p, b = q; break;
    }
    rgb[0] = (uint8_t)(r * 255), rgb[1] = (uint8_t)(g * 255), rgb[2] = (uint8_t)(b * 255);
}

static void fill(ac_image *img, int x0, int y0, int x1, int y1, const uint8_t rgb[3]) {
    x0 = x0 < 0 ? 0 : x0, y0 = y0 < 0 ? 0 : y0;
    x1 = x1 > img->w ? img->w : x1, y1 = y1 > img->h ? img->h : y1;
    for (int y = y0; y < y1; y++)
        for (int x = x0; x < x1; x++) memcpy(img->px + ((size_t)y * img->w + x) * 3, rgb, 3);
}

int ac_detections_draw(const ac_image *photo, const ac_detections *d, const char *const *labels, int n_labels,
                       const ac_font *font, ac_image *out, ac_err *err) {
    size_t n = (size_t)photo->w * photo->h * 3;
    out->w = photo->w, out->h = photo->h;
    if (!(out->px = ac_malloc(n))) return ac_errf(err, "out of memory");
    memcpy(out->px, photo->px, n);
    int short_side = photo->w < photo->h ? photo->w : photo->h;
    int line = short_side / 200 + 2;
    float px = fmaxf((float)AC_FONT_MIN_PX, (float)short_side / 28.0f);
    static const uint8_t white[3] = {255, 255, 255};
    for (int i = d->n - 1; i >= 0; i--) { /* the best drawn last, on top */
        const ac_detection *b = &d->items[i];
        uint8_t c[3];
        class_colour(b->label, c);
        int x0 = (int)lroundf(b->x0), y0 = (int)lroundf(b->y0), x1 = (int)lroundf(b->x1), y1 = (int)lroundf(b->y1);
        fill(out, x0, y0, x1, y0 + line, c);
        fill(out, x0, y1 - line, x1, y1, c);
        fill(out, x0, y0, x0 + line, y1, c);
        fill(out, x1 - line, y0, x1, y1, c);
        if (!font) continue;
        char text[160];
        const char *name = b->label >= 0 && b->label < n_labels ? labels[b->label] : "?";
        snprintf(text, sizeof text, "%.120s %.2f", name, b->score);
        int tw = ac_font_width(font, px, text) + 8, th = (int)(px * 1.25f);
        int ty = y0 - th >= 0 ? y0 - th : y0; /* above the box, or just inside it */
        fill(out, x0, ty, x0 + tw, ty + th, c);
        ac_font_draw(font, out, x0 + 4, ty + (int)(px * 0.1f), px, text, white);
    }
    return 0;
}
