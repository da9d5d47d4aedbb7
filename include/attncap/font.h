/* attncap/font.h: not part of the stable API; may change in any release (the stable core: attncap.h). */
/* attncap/font.h: text with a TrueType font (stb_truetype): UTF-8, kerning, subpixel positioning,
 * alpha-blended into an RGB image. Used by overlays, contact sheets and plots. */
#ifndef ATTNCAP_FONT_H
#define ATTNCAP_FONT_H
#include "attncap/common.h"
#include "attncap/image.h"

#ifdef __cplusplus
extern "C" {
#endif

#define AC_DEFAULT_FONT "/usr/share/fonts/truetype/dejavu/DejaVuSans.ttf"
/* The smallest pixel height overlays and sheets print text at: smaller is not legible. */
#define AC_FONT_MIN_PX 12

typedef struct ac_font ac_font;
int ac_font_load(const char *path, ac_font **f, ac_err *err); /* NULL path = AC_DEFAULT_FONT */
void ac_font_free(ac_font *f);
/* Width in pixels of utf8 at pixel height px. */
int ac_font_width(const ac_font *f, float px, const char *utf8);
/* Pixels from the top of a line to its baseline at pixel height px. */
int ac_font_ascent(const ac_font *f, float px);
/* Draws utf8 with its top-left corner at (x, y), clipped to img; returns the advance in pixels. */
int ac_font_draw(const ac_font *f, ac_image *img, int x, int y, float px, const char *utf8, const uint8_t rgb[3]);

#ifdef __cplusplus
}
#endif
#endif
