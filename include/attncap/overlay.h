/* attncap/overlay.h: not part of the stable API; may change in any release (the stable core: attncap.h). */
/* attncap/overlay.h: per-word attention overlays and contact sheets, as in the figures of
 * Xu et al. 2015: alpha_t (grid_h x grid_w) is upsampled smoothly to the photo (each cell a box,
 * blurred by a Gaussian of about half a cell), scaled min..max to 0..1 (as matplotlib does in the
 * paper's figures; a nearly flat map is stretched at most 20x), or with scale_absolute taken as it
 * is (a cell's weight: 1 = all of the word's attention on it), and laid over the photo. Every panel
 * says its word's peak weight and the entropy of its attention (ac_attention_stats).
 * PNGs are written by png.h, text drawn by font.h (never smaller than AC_FONT_MIN_PX). */
#ifndef ATTNCAP_OVERLAY_H
#define ATTNCAP_OVERLAY_H
#include "attncap/beam.h"
#include "attncap/common.h"
#include "attncap/font.h"
#include "attncap/image.h"
#include "attncap/png.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef enum {
    AC_OVERLAY_HEAT = 0, /* default: an inferno-like colour map blended over the greyed photo */
    AC_OVERLAY_SPOT = 1, /* the paper's look: the photo darkened away from attention, whitened on it */
} ac_overlay_style;

typedef enum {
    AC_OVERLAY_GREY = 0,   /* default: the heat map over the photo in grey, so the map's colours read alone */
    AC_OVERLAY_COLOUR = 1, /* over the photo in its colours (a "red toy" stays red where attention is low) */
} ac_overlay_base;

typedef struct ac_overlay_opts {
    int max_side;         /* long side of every written photo (per-word PNGs, above their label) and of
                           * the sheet, default 1024; smaller photos keep their size unless upscale */
    int upscale;          /* also enlarge photos whose long side is under max_side (default 0) */
    int sheet_only;       /* write sheet.png only, no per-word PNGs (default 0) */
    ac_overlay_style style;
    ac_overlay_base base; /* the photo under the heat map (style heat only) */
    float sigma;          /* Gaussian blur in grid cells, default 0.6 */
    int force;            /* overwrite an existing DIR/<stem> (else refuse) */
    const char *font;     /* TrueType file, default AC_DEFAULT_FONT */
    int threads;          /* a photo's files are written by this many threads (0 = 4: more than the
                           * cores pays, since the threads mostly wait for fsync); same files for any */
    int scale_absolute;   /* 0 (default): each map scaled min..max; 1: the weights as they are (0..1),
                           * so near-uniform attention stays faint and panels compare */
    int jpeg;             /* 0 (default): PNG files; 1: JPEG (quality 90, .jpg): about a fifth the bytes */
} ac_overlay_opts;
ac_overlay_opts ac_overlay_defaults(void);

/* Smooth attention map: alpha [grid_h * grid_w] -> out [h * w] in [0, 1], scaled min..max. */
void ac_attention_map(const float *alpha, int grid_h, int grid_w, float sigma, int w, int h, float *out);
/* The same, or with absolute the blurred weights as they are (a pixel: the weighted mean of the
 * cells' weights around it; uniform attention is 1 / cells everywhere). */
void ac_attention_map_scaled(const float *alpha, int grid_h, int grid_w, float sigma, int w, int h, int absolute,
                             float *out);
/* alpha[n] (weights summing to 1): *peak its largest weight, *entropy -sum a ln a / ln n in [0, 1]
 * (1: spread evenly over the n cells, 0: on one cell; 0 when n < 2). */
void ac_attention_stats(const float *alpha, int n, float *peak, float *entropy);
/* photo and out are the same size (out may be photo): the map [photo->h * photo->w] over the photo. */
void ac_overlay_blend(const ac_image *photo, const float *map, ac_overlay_style style, ac_overlay_base base,
                      ac_image *out);

/* Writes DIR/<stem>/NN_<word>.png (.jpg with opts->jpeg; NN = 01.., one per word: the overlay, with a band under it that
 * names the word and its probability) and DIR/<stem>/sheet.png (the caption as the title, a colour
 * scale of the attention, the photo and one panel per word, each word and its probability under its
 * panel; the panels are laid out so the labels fit at a legible size, however tall or narrow the
 * photo). With opts->sheet_only, the sheet alone. A word's probability is exp(cap->word_logp[k]),
 * left out when cap->word_logp is NULL.
 * DIR/<stem> must not exist unless opts->force (then earlier NN_*.png and sheet.png in it are
 * replaced; err->code AC_ERR_EXISTS otherwise). The folder is written as a unit: into
 * DIR/<stem>.tmp.<pid>, renamed to DIR/<stem> once complete (removed on failure), so DIR/<stem>
 * is either absent or whole, even when the process is killed. On success *paths (malloc'd array of malloc'd strings, words then sheet) and *n_paths
 * are set if paths is not NULL. font may be NULL (loaded from opts->font). grid_h x grid_w is the
 * model's grid; a caption that carries its own (ac_caption.grid_h, a photo that kept its aspect ratio)
 * is drawn on that one, its cells covering the whole photo. */
int ac_overlays_write(const char *dir, const char *stem, const ac_image *photo, const ac_caption *cap,
                      const ac_vocab *vocab, int grid_h, int grid_w, const ac_overlay_opts *opts,
                      const ac_font *font, char ***paths, int *n_paths, ac_err *err);
/* ac_overlay_stems (a unique folder name DIR/<stem> for each photo of a batch, decided for all photos
 * before any is captioned, in input order, so a rerun over the same inputs finds the same folders):
 * the core's since 1.3, declared in attncap.h. Linear in n (a hash table of the stems taken). */
#ifdef __cplusplus
}
#endif
#endif
