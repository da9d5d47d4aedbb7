/* overlay.c: attention overlays (one PNG per word, written as a folder at once) and the contact
 * sheet's file (the map and its blend: overlay_map.c; the sheet's layout: overlay_sheet.c; PNG output:
 * png.c; text: font.c). */
#include "attncap/overlay.h"

#include <dirent.h>
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "overlay_internal.h"
#include "pool.h"
#include "common_internal.h"
#include "alloc_internal.h"

ac_overlay_opts ac_overlay_defaults(void) {
    ac_overlay_opts o = {.max_side = 1024, .style = AC_OVERLAY_HEAT, .base = AC_OVERLAY_GREY, .sigma = 0.6f};
    return o;
}

/* ---- files ---- */

/* A word as a file-name part: '/', control bytes, leading dots and spaces become '_'. */
static void safe_name(const char *w, char *out, size_t cap) {
    size_t n = 0;
    for (; *w && n + 1 < cap && n < 60; w++) {
        unsigned char c = (unsigned char)*w;
        int bad = c == '/' || c == '\\' || c < 0x20 || c == 0x7F || c == ' ' || (n == 0 && c == '.');
        out[n++] = bad ? '_' : (char)c;
    }
    if (!n) out[n++] = '_';
    out[n] = 0;
}

/* Removes our own earlier outputs (NN_*.png, sheet.png) from dir, leaving anything else alone. */
static void remove_old(const char *dir) {
    DIR *d = opendir(dir);
    if (!d) return;
    struct dirent *e;
    while ((e = readdir(d))) {
        const char *n = e->d_name;
        size_t l = strlen(n);
        int ours = !strcmp(n, "sheet.png") ||
                   (l > 7 && n[0] >= '0' && n[0] <= '9' && n[1] >= '0' && n[1] <= '9' && n[2] == '_' &&
                    !strcmp(n + l - 4, ".png"));
        if (!ours) continue;
        char *p = ac_path_join(dir, n);
        if (p) unlink(p);
        free(p);
    }
    closedir(d);
}

/* Removes a temporary directory of ours and everything in it (files only: we write no subdirectories). */
static void remove_tmp_dir(const char *dir) {
    DIR *d = opendir(dir);
    if (d) {
        struct dirent *e;
        while ((e = readdir(d)))
            if (strcmp(e->d_name, ".") && strcmp(e->d_name, "..")) unlinkat(dirfd(d), e->d_name, 0);
        closedir(d);
    }
    rmdir(dir);
}

/* Puts the finished tmp directory in place as out_dir. A replaced out_dir loses our files; if it
 * holds others (the user's), the new files are moved into it one by one instead. */
static int commit_dir(const char *tmp, const char *out_dir, int replace, char **list, int n_list, ac_err *err) {
    if (replace) {
        remove_old(out_dir);
        if (rmdir(out_dir) != 0) { /* not empty: keep it, move ours in */
            for (int i = 0; i < n_list; i++) {
                const char *name = strrchr(list[i], '/') + 1;
                char *dst = ac_path_join(out_dir, name);
                if (!dst || rename(list[i], dst) != 0) {
                    int e = errno;
                    free(dst);
                    return ac_errf(err, "%s: cannot move %s into place: %s", out_dir, name, ac_strerror(e));
                }
                free(dst);
            }
            rmdir(tmp);
            return 0;
        }
    }
    if (rename(tmp, out_dir) != 0) return ac_errf(err, "%s: cannot rename into place: %s", out_dir, ac_strerror(errno));
    return 0;
}

/* The files of one photo are independent: rendered, encoded and committed (fsync + rename) by a few
 * threads at once, which hides most of the fsync latency. Task t < n is word t, task n the sheet. */
#define MAX_OV_THREADS 16

typedef struct ov_job {
    const ac_image *disp;
    const ac_caption *cap;
    const ac_vocab *vocab;
    const ac_overlay_opts *o;
    const ac_font *font;
    char **paths; /* [n + 1 - first] */
    int gh, gw, n;
    int first;                   /* task t is file first + t: word first + t, or the sheet (cap->n) */
    int band;                    /* rows of the label band under each per-word overlay */
    float band_px;               /* its font size */
    float *map[MAX_OV_THREADS];  /* per thread: [h * w] the smoothed attention */
    uint8_t *px[MAX_OV_THREADS]; /* per thread: [(h + band) * w * 3] the overlay and its label */
    int failed_at[MAX_OV_THREADS]; /* per thread: its lowest failing task (-1: none), for a deterministic message */
    ac_err err[MAX_OV_THREADS];
} ov_job;

static void ov_task(void *arg, int t, int thread) {
    ov_job *j = arg;
    int w = j->disp->w, h = j->disp->h;
    ac_image ov = {w, h, j->px[thread]};
    float *map = j->map[thread];
    ac_err e;
    int rc;
    if (!ov.px || !map) rc = ac_errf(&e, "out of memory (%dx%d overlay)", w, h);
    else if (t + j->first < j->n) {
        const int k = t + j->first;
        ac_attention_map_scaled(j->cap->alpha + (size_t)k * j->gh * j->gw, j->gh, j->gw, j->o->sigma, w, h,
                                j->o->scale_absolute, map);
        ac_overlay_blend(j->disp, map, j->o->style, j->o->base, &ov);
        ac_image labelled = {w, h + j->band, ov.px}; /* the band's rows follow the photo's */
        ac_ov_draw_band(&labelled, h, j->band_px, j->font, j->cap, j->vocab, k, j->gh * j->gw);
        rc = j->o->jpeg ? ac_jpeg_write(j->paths[t], &labelled, 90, &e) : ac_png_write(j->paths[t], &labelled, &e);
    } else {
        ac_image sheet = {0};
        rc = ac_ov_build_sheet(j->disp, j->cap, j->vocab, j->gh, j->gw, j->o, j->font, &sheet, &e);
        if (!rc) rc = j->o->jpeg ? ac_jpeg_write(j->paths[t], &sheet, 90, &e) : ac_png_write(j->paths[t], &sheet, &e);
        ac_image_free(&sheet);
    }
    if (rc && (j->failed_at[thread] < 0 || t < j->failed_at[thread])) j->failed_at[thread] = t, j->err[thread] = e;
}

static int write_overlays(const char *dir, const char *stem, const ac_image *photo, const ac_caption *cap,
                          const ac_vocab *vocab, int gh, int gw, const ac_overlay_opts *opts, const ac_font *font,
                          char ***paths, int *n_paths, ac_err *err);

/* A caption that attended to regions is drawn from its weights over the grid's cells, each region's
 * weight spread over the cells of its box (ac_caption_cell_attention): an attended box shows lit. */
int ac_overlays_write(const char *dir, const char *stem, const ac_image *photo, const ac_caption *cap,
                      const ac_vocab *vocab, int gh, int gw, const ac_overlay_opts *opts, const ac_font *font,
                      char ***paths, int *n_paths, ac_err *err) {
    if (!cap->n_regions || !cap->regions || cap->grid_h < 1 || cap->grid_w < 1)
        return write_overlays(dir, stem, photo, cap, vocab, gh, gw, opts, font, paths, n_paths, err);
    ac_caption cells = *cap;
    const size_t G = (size_t)cap->grid_h * cap->grid_w;
    if (!(cells.alpha = ac_malloc(sizeof(float) * G * ((size_t)cap->n + 1)))) return ac_errf(err, "out of memory");
    for (int k = 0; k <= cap->n; k++) ac_caption_cell_attention(cap, k, cells.alpha + (size_t)k * G);
    cells.n_regions = 0, cells.regions = NULL;
    const int rc = write_overlays(dir, stem, photo, &cells, vocab, gh, gw, opts, font, paths, n_paths, err);
    free(cells.alpha);
    return rc;
}

static int write_overlays(const char *dir, const char *stem, const ac_image *photo, const ac_caption *cap,
                          const ac_vocab *vocab, int gh, int gw, const ac_overlay_opts *opts, const ac_font *font,
                          char ***paths, int *n_paths, ac_err *err) {
    ac_overlay_opts o = opts ? *opts : ac_overlay_defaults();
    if (cap->grid_h > 0 && cap->grid_w > 0) gh = cap->grid_h, gw = cap->grid_w; /* the photo's own grid */
    if (paths) *paths = NULL;
    if (n_paths) *n_paths = 0;
    if (o.max_side < 16 || o.max_side > 16384) return ac_errf(err, "overlay size %d out of range 16..16384", o.max_side);
    if (photo->w < 1 || photo->h < 1) return ac_errf(err, "%s: empty photo", stem);
    /* The photo's folder is written as a unit: files go to DIR/STEM.tmp.PID, renamed to DIR/STEM
     * when all are written, so an interrupted run never leaves a half-written DIR/STEM. */
    char *out_dir = ac_path_join(dir, stem), tmp_name[300];
    snprintf(tmp_name, sizeof tmp_name, "%.250s.tmp.%d", stem, (int)getpid());
    char *tmp_dir = ac_path_join(dir, tmp_name);
    int made_tmp = 0, replace = 0;
    if (!out_dir || !tmp_dir) {
        free(out_dir), free(tmp_dir);
        return ac_errf(err, "out of memory");
    }
    ac_font *own_font = NULL;
    ac_image disp = {0};
    char **list = ac_calloc((size_t)cap->n + 2, sizeof *list), **final = NULL;
    int n_list = 0, rc = -1;
    if (!list) { ac_errf(err, "out of memory"); goto done; }
    if (!font) {
        if (ac_font_load(o.font, &own_font, err)) goto done;
        font = own_font;
    }
    struct stat st;
    if (lstat(out_dir, &st) == 0) {
        if (!o.force) {
            ac_errc(err, AC_ERR_EXISTS, "%s: already exists", out_dir);
            goto done;
        }
        if (!S_ISDIR(st.st_mode)) { ac_errf(err, "%s: exists and is not a directory", out_dir); goto done; }
        replace = 1;
    }
    if (ac_mkdirs(dir, err)) goto done;
    if (mkdir(tmp_dir, 0777) != 0) {
        ac_errf(err, "%s: cannot create directory: %s", tmp_dir, ac_strerror(errno));
        goto done;
    }
    made_tmp = 1;
    /* display size: long side <= max_side; a smaller photo is enlarged to it only with upscale */
    int w = photo->w, h = photo->h;
    if (w > o.max_side || h > o.max_side || (o.upscale && w < o.max_side && h < o.max_side)) {
        double s = (double)o.max_side / (w > h ? w : h);
        w = (int)fmax(1, lround(w * s)), h = (int)fmax(1, lround(h * s));
    }
    if (w == photo->w && h == photo->h) {
        disp.w = w, disp.h = h, disp.px = ac_malloc((size_t)w * h * 3);
        if (!disp.px) { ac_errf(err, "out of memory (%dx%d overlay)", w, h); goto done; }
        memcpy(disp.px, photo->px, (size_t)w * h * 3);
    } else if (ac_image_resize(photo, w, h, &disp, err)) {
        goto done;
    }
    const int first = o.sheet_only ? cap->n : 0; /* the sheet is file cap->n */
    for (int t = first; t <= cap->n; t++) {
        char name[96], safe[80];
        if (t < cap->n) {
            safe_name(ac_caption_word(cap, vocab, t), safe, sizeof safe);
            snprintf(name, sizeof name, "%02d_%s.%s", t + 1, safe, o.jpeg ? "jpg" : "png");
        } else {
            snprintf(name, sizeof name, "sheet.%s", o.jpeg ? "jpg" : "png");
        }
        if (!(list[n_list] = ac_path_join(tmp_dir, name))) { ac_errf(err, "out of memory"); goto done; }
        n_list++;
    }
    ov_job job = {.disp = &disp, .cap = cap, .vocab = vocab, .o = &o, .font = font, .paths = list, .first = first,
                  .gh = gh, .gw = gw, .n = cap->n, .band_px = ac_ov_band_px(w)};
    job.band = ac_ov_band_h(job.band_px);
    const int n_tasks = cap->n + 1 - first;
    int T = o.threads > 0 ? o.threads : 4;
    if (T > MAX_OV_THREADS) T = MAX_OV_THREADS;
    if (T > n_tasks) T = n_tasks;
    for (int t = 0; t < T; t++) {
        job.failed_at[t] = -1;
        job.map[t] = ac_malloc((size_t)w * h * sizeof *job.map[t]); /* NULL: that thread's tasks report it */
        job.px[t] = ac_malloc((size_t)w * (h + job.band) * 3);
    }
    ac_parallel_for(n_tasks, T, ov_task, &job);
    int bad = -1;
    for (int t = 0; t < T; t++) {
        free(job.map[t]), free(job.px[t]);
        if (job.failed_at[t] >= 0 && (bad < 0 || job.failed_at[t] < job.failed_at[bad])) bad = t;
    }
    if (bad >= 0) {
        if (err) *err = job.err[bad];
        goto done;
    }
    /* the paths as they will be, made before the commit: once DIR/STEM is in place nothing fails */
    final = ac_calloc((size_t)n_list + 1, sizeof *final);
    for (int i = 0; final && i < n_list; i++)
        if (!(final[i] = ac_path_join(out_dir, strrchr(list[i], '/') + 1))) { ac_errf(err, "out of memory"); goto done; }
    if (!final) { ac_errf(err, "out of memory"); goto done; }
    if (commit_dir(tmp_dir, out_dir, replace, list, n_list, err)) goto done;
    made_tmp = 0;
    for (int i = 0; i < n_list; i++) {
        free(list[i]);
        list[i] = final[i];
    }
    free(final), final = NULL;
    rc = 0;
done:
    if (made_tmp) remove_tmp_dir(tmp_dir);
    for (int i = 0; final && i < n_list; i++) free(final[i]);
    free(final);
    if (rc == 0 && paths) {
        *paths = list, *n_paths = n_list;
    } else {
        for (int i = 0; i < n_list; i++) free(list[i]);
        free(list);
    }
    ac_font_free(own_font);
    ac_image_free(&disp);
    free(out_dir);
    free(tmp_dir);
    return rc;
}
