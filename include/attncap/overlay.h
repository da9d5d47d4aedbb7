/* attncap/overlay.h: per-word attention overlays and contact sheets, as in the figures of
 * Xu et al. 2015: alpha_t (grid_h x grid_w) is upsampled smoothly to the photo (each cell a box,
 * blurred by a Gaussian of about half a cell), scaled min..max to 0..1 (as matplotlib does in the
 * paper's figures; a nearly flat map is stretched at most 20x) and laid over the photo.
 * PNGs are written with libpng through atomic files; text is drawn with stb_truetype. */
#ifndef ATTNCAP_OVERLAY_H
#define ATTNCAP_OVERLAY_H
#include "attncap/beam.h"
#include "attncap/common.h"
#include "attncap/image.h"

#ifdef __cplusplus
extern "C" {
#endif

#define AC_DEFAULT_FONT "/usr/share/fonts/truetype/dejavu/DejaVuSans.ttf"

typedef enum {
    AC_OVERLAY_HEAT = 0, /* default: an inferno-like colour map blended over the greyed photo */
    AC_OVERLAY_SPOT = 1, /* the paper's look: the photo darkened away from attention, whitened on it */
} ac_overlay_style;

typedef struct ac_overlay_opts {
    int max_side;         /* long side of every written PNG (overlays and sheet), default 1024 */
    ac_overlay_style style;
    float sigma;          /* Gaussian blur in grid cells, default 0.6 */
    int force;            /* overwrite an existing DIR/<stem> (else refuse) */
    const char *font;     /* TrueType file, default AC_DEFAULT_FONT */
    int threads;          /* a photo's files are written by this many threads (0 = 4: more than the
                           * cores pays, since the threads mostly wait for fsync); same files for any */
} ac_overlay_opts;
ac_overlay_opts ac_overlay_defaults(void);

/* Smooth attention map: alpha [grid_h * grid_w] -> out [h * w] in [0, 1]. */
void ac_attention_map(const float *alpha, int grid_h, int grid_w, float sigma, int w, int h, float *out);
/* photo and out are the same size (out may be photo): the map [photo->h * photo->w] over the photo. */
void ac_overlay_blend(const ac_image *photo, const float *map, ac_overlay_style style, ac_image *out);

/* 8-bit RGB PNG, atomically (temp file + rename). */
int ac_png_write(const char *path, const ac_image *img, ac_err *err);

/* Text with a TrueType font. */
typedef struct ac_font ac_font;
int ac_font_load(const char *path, ac_font **f, ac_err *err); /* NULL path = AC_DEFAULT_FONT */
void ac_font_free(ac_font *f);
/* Width in pixels of utf8 at pixel height px. */
int ac_font_width(const ac_font *f, float px, const char *utf8);
/* Draws utf8 with its top-left corner at (x, y), clipped to img; returns the advance in pixels. */
int ac_font_draw(const ac_font *f, ac_image *img, int x, int y, float px, const char *utf8, const uint8_t rgb[3]);

/* Writes DIR/<stem>/NN_<word>.png (NN = 01.., one per word) and DIR/<stem>/sheet.png (the photo
 * and one panel per word, each word printed under its panel, the caption as the title).
 * DIR/<stem> must not exist unless opts->force (then earlier NN_*.png and sheet.png in it are
 * replaced). On success *paths (malloc'd array of malloc'd strings, words then sheet) and *n_paths
 * are set if paths is not NULL. font may be NULL (loaded from opts->font). */
int ac_overlays_write(const char *dir, const char *stem, const ac_image *photo, const ac_caption *cap,
                      const ac_vocab *vocab, int grid_h, int grid_w, const ac_overlay_opts *opts,
                      const ac_font *font, char ***paths, int *n_paths, ac_err *err);
#ifdef __cplusplus
}
#endif
#endif
