/* overlay_internal.h: what overlay.c (the per-word overlays, the files) and overlay_sheet.c (the
 * contact sheet, the labels) share; the layout is exposed for tests. */
#ifndef ATTNCAP_OVERLAY_INTERNAL_H
#define ATTNCAP_OVERLAY_INTERNAL_H
#include "attncap/overlay.h"

/* The label under a per-word overlay w pixels wide: its font size and the band's height. */
float ac_ov_band_px(int w);
int ac_ov_band_h(float px);
/* Word k's label ("NN  word  p 0.83  peak 0.12  H 0.85": its probability, and its attention's peak
 * weight and entropy over the cells cells of its row of cap->alpha) centred in the band of img that
 * starts at row y. */
void ac_ov_draw_band(ac_image *img, int y, float px, const ac_font *f, const ac_caption *cap, const ac_vocab *v,
                     int k, int cells);

/* The contact sheet's geometry. Panels are pw x ph, each in a cell cell_w wide (at least the widest
 * label) above a label band lab high; cols x rows cells under the title and the colour scale. */
typedef struct ac_sheet_layout {
    int cols, rows, pw, ph, cell_w, lab, pad, title_h, scale_h, w, h, n_title_lines;
    int stats; /* a line for each word's attention peak and entropy under its probability */
    float word_px, prob_px, title_px;
} ac_sheet_layout;
/* labels[n_panels] (the first panel is the photo's, ""), probs: whether a probability line is
 * printed. Chooses the columns giving the largest panels whose labels fit at word_px >=
 * AC_FONT_MIN_PX within max_side (a tall, narrow photo gets wide cells and fewer columns). */
void ac_sheet_plan(const ac_font *font, int photo_w, int photo_h, const char *const *labels, int n_panels, int probs,
                   const char *title, int max_side, int upscale, ac_sheet_layout *lay);
int ac_ov_build_sheet(const ac_image *disp, const ac_caption *cap, const ac_vocab *v, int gh, int gw,
                      const ac_overlay_opts *o, const ac_font *font, ac_image *sheet, ac_err *err);
#endif
