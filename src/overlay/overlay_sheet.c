/* overlay_sheet.c: the contact sheet (title, colour scale, panels and their labels) and the label band
 * of each per-word overlay (overlay_internal.h). Text is never drawn below AC_FONT_MIN_PX: the layout
 * makes room for the labels instead of shrinking them. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "overlay_internal.h"
#include "alloc_internal.h"

static const uint8_t INK[3] = {20, 20, 20}, GREY[3] = {110, 110, 110};

/* Copies src into dst at (x, y). */
static void blit(ac_image *dst, const ac_image *src, int x, int y) {
    for (int j = 0; j < src->h; j++) {
        if (y + j < 0 || y + j >= dst->h) continue;
        for (int i = 0; i < src->w; i++) {
            if (x + i < 0 || x + i >= dst->w) continue;
            memcpy(dst->px + ((size_t)(y + j) * dst->w + x + i) * 3, src->px + ((size_t)j * src->w + i) * 3, 3);
        }
    }
}

/* Splits text into lines of at most width pixels at spaces; returns the line count, lines[] point
 * into buf (a copy of text, strlen(text) + 1 bytes). */
static int wrap(const ac_font *f, float px, const char *text, int width, char *buf, char **lines, int max_lines) {
    strcpy(buf, text);
    int n = 0;
    char *s = buf;
    while (*s && n < max_lines) {
        char *end = s, *brk = NULL;
        for (;;) {
            char *sp = strchr(end, ' ');
            char save = sp ? *sp : 0;
            if (sp) *sp = 0;
            int wd = ac_font_width(f, px, s);
            if (sp) *sp = save;
            if (wd > width && brk) break;
            brk = sp;
            if (!sp) { brk = NULL; break; }
            end = sp + 1;
        }
        lines[n++] = s;
        if (!brk) break;
        *brk = 0;
        s = brk + 1;
    }
    return n;
}

enum { MAX_TITLE_LINES = 8 };

static int title_lines(const ac_font *f, float px, const char *title, int width) {
    char *buf = ac_malloc(strlen(title) + 1), *lines[MAX_TITLE_LINES];
    int n = buf ? wrap(f, px, title, width, buf, lines, MAX_TITLE_LINES) : 1;
    free(buf);
    return n;
}

static int line_h(float px) { return (int)ceilf(px * 1.3f); }

/* The probability line under word k ("p 0.83"), or "" when the search did not record it. */
static void prob_text(const ac_caption *cap, int k, char *buf, size_t n) {
    if (cap->word_logp && k >= 0 && k < cap->n) snprintf(buf, n, "p %.2f", exp((double)cap->word_logp[k]));
    else buf[0] = 0;
}

/* Word k's attention over its row of cells weights: its peak weight and entropy ("peak 0.12  H 0.85",
 * or compact "0.12 / 0.85"). */
static void stats_text(const ac_caption *cap, int k, int cells, int compact, char *buf, size_t n) {
    float peak, ent;
    ac_attention_stats(cap->alpha + (size_t)k * cells, cells, &peak, &ent);
    snprintf(buf, n, compact ? "%.2f / %.2f" : "peak %.2f  H %.2f", peak, ent);
}

float ac_ov_band_px(int w) { return fmaxf((float)AC_FONT_MIN_PX, (float)w / 40.0f); }
/* Two lines: the word, then its probability (on one line when they fit side by side). */
int ac_ov_band_h(float px) { return 2 * line_h(px) + (int)(px * 0.5f); }

/* 1 if word k of cap is (a word of) a tag the search was made to say (naming.h: the tag's "forced"). */
static int forced_word(const ac_caption *cap, const ac_vocab *v, int k) {
    const char *w = ac_caption_word(cap, v, k);
    const size_t n = strlen(w);
    for (int i = 0; n && i < cap->n_tags; i++) {
        if (!cap->tags[i].forced) continue;
        const char *t = cap->tags[i].word;
        for (const char *p = t; (p = strstr(p, w)) != NULL; p += n)
            if ((p == t || p[-1] == ' ') && (p[n] == 0 || p[n] == ' ')) return 1;
    }
    return 0;
}

void ac_ov_draw_band(ac_image *img, int y, float px, const ac_font *f, const ac_caption *cap, const ac_vocab *v, int k,
                     int cells) {
    char word[200], prob[64], stats[48], both[280];
    snprintf(word, sizeof word, "%02d  %s%s", k + 1, ac_caption_word(cap, v, k), forced_word(cap, v, k) ? " (forced by naming)" : "");
    prob_text(cap, k, prob, sizeof prob);
    stats_text(cap, k, cells, 0, stats, sizeof stats);
    const size_t pl = strlen(prob);
    snprintf(prob + pl, sizeof prob - pl, "%s%s", pl ? "  " : "", stats);
    snprintf(both, sizeof both, "%s%s%s", word, prob[0] ? "    " : "", prob);
    memset(img->px + (size_t)y * img->w * 3, 255, (size_t)(img->h - y) * img->w * 3);
    int band = img->h - y, one = ac_font_width(f, px, both);
    if (one <= img->w - 8 || !prob[0]) { /* one line, centred */
        ac_font_draw(f, img, (img->w - one) / 2 > 4 ? (img->w - one) / 2 : 4, y + (band - line_h(px)) / 2, px, both, INK);
        return;
    }
    int ww = ac_font_width(f, px, word), pw = ac_font_width(f, px, prob), top = y + (band - 2 * line_h(px)) / 2;
    ac_font_draw(f, img, (img->w - ww) / 2 > 2 ? (img->w - ww) / 2 : 2, top, px, word, INK);
    ac_font_draw(f, img, (img->w - pw) / 2 > 2 ? (img->w - pw) / 2 : 2, top + line_h(px), px, prob, GREY);
}

/* The sheet's size for panels whose long side is s pixels. */
static void size_for(const ac_font *f, double aw, double ah, int s, int cols, int rows, int label_w, const char *title,
                     ac_sheet_layout *l) {
    l->pw = (int)fmax(1, lround(s * aw)), l->ph = (int)fmax(1, lround(s * ah));
    l->cell_w = l->pw > label_w ? l->pw : label_w;
    l->cols = cols, l->rows = rows;
    l->w = cols * (l->cell_w + l->pad) + l->pad;
    l->n_title_lines = title_lines(f, l->title_px, title, l->w - 2 * l->pad);
    l->title_h = l->n_title_lines * line_h(l->title_px) + 2 * l->pad;
    l->h = l->title_h + l->scale_h + rows * (l->ph + l->lab + l->pad) + l->pad;
}

/* ac_sheet_plan with or without the attention's stats line under each label. */
static void plan(const ac_font *font, int photo_w, int photo_h, const char *const *labels, int n_panels, int probs,
                 int stats, const char *title, int max_side, int upscale, ac_sheet_layout *lay) {
    const double aw = photo_w >= photo_h ? 1.0 : (double)photo_w / photo_h;
    const double ah = photo_h >= photo_w ? 1.0 : (double)photo_h / photo_w;
    ac_sheet_layout l = {0};
    /* text in proportion to the sheet, never below the legible minimum */
    l.word_px = fmaxf((float)AC_FONT_MIN_PX, (float)max_side / 75.0f);
    l.prob_px = fmaxf((float)AC_FONT_MIN_PX, l.word_px * 0.8f);
    l.title_px = fmaxf((float)AC_FONT_MIN_PX + 2, l.word_px * 1.2f);
    l.pad = (int)fmaxf(3, l.word_px * 0.5f);
    int label_w = 0;
    for (int k = 0; k < n_panels; k++) {
        int wd = ac_font_width(font, l.word_px, labels[k]);
        label_w = wd > label_w ? wd : label_w;
    }
    if (probs) {
        int wd = ac_font_width(font, l.prob_px, "p 0.00");
        label_w = wd > label_w ? wd : label_w;
    }
    label_w += 4;
    /* the word, its probability, its attention's peak and entropy (stats_text: compact, or left out,
     * in a cell too narrow) */
    l.stats = stats;
    l.lab = line_h(l.word_px) + (probs ? line_h(l.prob_px) : 0) + (stats ? line_h(l.prob_px) : 0) + l.pad / 2;
    l.scale_h = line_h(l.prob_px) + l.pad;
    /* a photo's panels are at most 320 pixels on their long side unless the photo may be enlarged */
    const int s_max = upscale ? max_side : (max_side < 320 ? max_side : 320);
    ac_sheet_layout best = {0};
    double best_key = -1, best_shape = 1e30;
    for (int c = 1; c <= n_panels; c++) {
        const int r = (n_panels + c - 1) / c;
        if (c > 1 && (n_panels + c - 2) / (c - 1) == r) continue; /* no fewer rows than c - 1 columns */
        ac_sheet_layout t = l;
        int lo = 4, hi = s_max;
        size_for(font, aw, ah, lo, c, r, label_w, title, &t);
        const int fits_at_all = t.w <= max_side && t.h <= max_side;
        while (fits_at_all && lo < hi) { /* the largest panels that fit */
            int mid = (lo + hi + 1) / 2;
            size_for(font, aw, ah, mid, c, r, label_w, title, &t);
            if (t.w <= max_side && t.h <= max_side) lo = mid;
            else hi = mid - 1;
        }
        size_for(font, aw, ah, lo, c, r, label_w, title, &t);
        /* the biggest panels; when nothing fits, the smallest overflow; ties: the shape nearest 4:3 */
        double key = fits_at_all ? (double)t.pw * t.ph : -(double)(t.w > t.h ? t.w : t.h) / 1e9;
        double shape = fabs(log((double)t.w / t.h) - log(4.0 / 3.0));
        if (key > best_key + 1e-12 || (fabs(key - best_key) <= 1e-12 && shape < best_shape))
            best = t, best_key = key, best_shape = shape;
    }
    *lay = best;
}

void ac_sheet_plan(const ac_font *font, int photo_w, int photo_h, const char *const *labels, int n_panels, int probs,
                   const char *title, int max_side, int upscale, ac_sheet_layout *lay) {
    /* the stats line unless it costs the panels more than a quarter of their size (a small sheet of
     * many words: the per-word files say them anyway) */
    ac_sheet_layout without;
    plan(font, photo_w, photo_h, labels, n_panels, probs, 1, title, max_side, upscale, lay);
    plan(font, photo_w, photo_h, labels, n_panels, probs, 0, title, max_side, upscale, &without);
    const int fits = lay->w <= max_side && lay->h <= max_side;
    if (!fits || (double)lay->pw * lay->ph < 0.5625 * without.pw * without.ph) *lay = without;
}

/* The colour scale under the title: what each attention level looks like over a plain grey photo. */
static int draw_scale(ac_image *sheet, const ac_sheet_layout *l, const ac_overlay_opts *o, const ac_font *f, ac_err *err) {
    const char *lo_txt = o->scale_absolute ? "attention weight of a cell: 0" : "attention (scaled per panel): least",
               *hi_txt = o->scale_absolute ? "1" : "most";
    int y = l->title_h, bh = line_h(l->prob_px) - 2;
    const int hi_w = ac_font_width(f, l->prob_px, hi_txt);
    int x0 = l->pad + ac_font_width(f, l->prob_px, lo_txt) + 8;
    int bw = sheet->w - x0 - 8 - hi_w - l->pad;
    if (bw < 4 * (int)l->word_px) { /* a narrow sheet: the short label */
        lo_txt = o->scale_absolute ? "0" : "least";
        x0 = l->pad + ac_font_width(f, l->prob_px, lo_txt) + 8;
        bw = sheet->w - x0 - 8 - hi_w - l->pad;
    }
    if (bw > 16 * (int)l->word_px) bw = 16 * (int)l->word_px;
    if (bw < 16) bw = 16; /* clipped at the sheet's edge */
    ac_image bar = {bw, bh, ac_malloc((size_t)bw * bh * 3)};
    float *ramp = ac_malloc((size_t)bw * bh * sizeof *ramp);
    if (!bar.px || !ramp) {
        free(bar.px), free(ramp);
        return ac_errf(err, "out of memory");
    }
    memset(bar.px, 160, (size_t)bw * bh * 3);
    for (int j = 0; j < bh; j++)
        for (int i = 0; i < bw; i++) ramp[(size_t)j * bw + i] = bw > 1 ? (float)i / (bw - 1) : 0;
    ac_overlay_blend(&bar, ramp, o->style, o->base, &bar);
    ac_font_draw(f, sheet, l->pad, y, l->prob_px, lo_txt, GREY);
    blit(sheet, &bar, x0, y + 1);
    ac_font_draw(f, sheet, x0 + bw + 8, y, l->prob_px, hi_txt, GREY);
    free(bar.px), free(ramp);
    return 0;
}

int ac_ov_build_sheet(const ac_image *disp, const ac_caption *cap, const ac_vocab *v, int gh, int gw,
                      const ac_overlay_opts *o, const ac_font *font, ac_image *sheet, ac_err *err) {
    const int n_panels = cap->n + 1;
    const char **labels = ac_malloc((size_t)n_panels * sizeof *labels);
    char **forced = ac_calloc((size_t)n_panels, sizeof *forced);
    int any_forced = 0;
    char *text = ac_caption_text(cap, v);
    ac_image thumb = {0}, ov = {0};
    float *map = NULL;
    char *buf = NULL, *lines[MAX_TITLE_LINES];
    int rc = -1;
    if (!labels || !text || !forced) {
        ac_errf(err, "out of memory building the contact sheet");
        goto done;
    }
    labels[0] = "";
    for (int k = 1; k < n_panels; k++) { /* a word the naming forced is marked: "dog*" (the title says so) */
        labels[k] = ac_caption_word(cap, v, k - 1);
        if (forced_word(cap, v, k - 1) && (forced[k] = ac_malloc(strlen(labels[k]) + 2)))
            sprintf(forced[k], "%s*", labels[k]), labels[k] = forced[k], any_forced = 1;
    }
    static const char legend[] = "   (* forced by naming)";
    char *titled = any_forced ? ac_malloc(strlen(text) + sizeof legend) : NULL;
    if (titled) {
        sprintf(titled, "%s%s", text, legend);
        free(text);
        text = titled;
    }
    ac_sheet_layout l;
    ac_sheet_plan(font, disp->w, disp->h, labels, n_panels, cap->word_logp != NULL, text, o->max_side, o->upscale, &l);
    sheet->w = l.w, sheet->h = l.h;
    sheet->px = ac_malloc((size_t)sheet->w * sheet->h * 3);
    map = ac_malloc((size_t)l.pw * l.ph * sizeof *map);
    buf = ac_malloc(strlen(text) + 1);
    if (!sheet->px || !map || !buf) {
        ac_errf(err, "out of memory building the contact sheet");
        goto done;
    }
    memset(sheet->px, 255, (size_t)sheet->w * sheet->h * 3);
    int nl = wrap(font, l.title_px, text, l.w - 2 * l.pad, buf, lines, MAX_TITLE_LINES);
    for (int i = 0; i < nl; i++) ac_font_draw(font, sheet, l.pad, l.pad + i * line_h(l.title_px), l.title_px, lines[i], INK);
    if (draw_scale(sheet, &l, o, font, err) || ac_image_resize(disp, l.pw, l.ph, &thumb, err)) goto done;
    ov.w = l.pw, ov.h = l.ph, ov.px = ac_malloc((size_t)l.pw * l.ph * 3);
    if (!ov.px) {
        ac_errf(err, "out of memory");
        goto done;
    }
    for (int k = 0; k < n_panels; k++) {
        int x = l.pad + (k % l.cols) * (l.cell_w + l.pad), y = l.title_h + l.scale_h + (k / l.cols) * (l.ph + l.lab + l.pad);
        if (k == 0) {
            blit(sheet, &thumb, x + (l.cell_w - l.pw) / 2, y);
        } else {
            ac_attention_map_scaled(cap->alpha + (size_t)(k - 1) * gh * gw, gh, gw, o->sigma, l.pw, l.ph, o->scale_absolute, map);
            ac_overlay_blend(&thumb, map, o->style, o->base, &ov);
            blit(sheet, &ov, x + (l.cell_w - l.pw) / 2, y);
        }
        int tw = ac_font_width(font, l.word_px, labels[k]);
        ac_font_draw(font, sheet, x + (l.cell_w - tw) / 2, y + l.ph + l.pad / 4, l.word_px, labels[k], INK);
        char prob[32];
        prob_text(cap, k - 1, prob, sizeof prob);
        int ty = y + l.ph + l.pad / 4 + line_h(l.word_px);
        if (prob[0]) {
            int pw = ac_font_width(font, l.prob_px, prob);
            ac_font_draw(font, sheet, x + (l.cell_w - pw) / 2, ty, l.prob_px, prob, GREY);
            ty += line_h(l.prob_px);
        }
        for (int compact = 0; l.stats && k > 0 && compact < 2; compact++) {
            char st[48];
            stats_text(cap, k - 1, gh * gw, compact, st, sizeof st);
            const int sw = ac_font_width(font, l.prob_px, st);
            if (sw > l.cell_w) continue;
            ac_font_draw(font, sheet, x + (l.cell_w - sw) / 2, ty, l.prob_px, st, GREY);
            break;
        }
    }
    rc = 0;
done:
    if (rc) ac_image_free(sheet);
    ac_image_free(&thumb), ac_image_free(&ov);
    free(map), free(buf), free(text), free(labels);
    for (int k = 0; forced && k < n_panels; k++) free(forced[k]);
    free(forced);
    return rc;
}
