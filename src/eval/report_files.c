/* report_files.c: the thumbnails and attention sheets an evaluation report links to (report.h). */
#include "attncap/report.h"
#include "alloc_internal.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

char *ac_report_thumb(const char *dir, int i, const ac_image *photo, ac_err *err) {
    int tw = photo->w, th = photo->h, side = 200;
    if (tw > side || th > side) {
        if (tw >= th) th = (int)fmax(1, round((double)th * side / tw)), tw = side;
        else tw = (int)fmax(1, round((double)tw * side / th)), th = side;
    }
    char rel[64], *full, *tdir = ac_path_join(dir, "thumbs");
    snprintf(rel, sizeof rel, "thumbs/%05d.png", i + 1);
    full = ac_path_join(dir, rel);
    char *r = ac_strdup(rel); /* before the file: nothing can fail once it is written */
    ac_image t = {0};
    int ok = tdir && full && r ? !ac_mkdirs(tdir, err) && !ac_image_resize(photo, tw, th, &t, err) && !ac_png_write(full, &t, err)
                               : !ac_errf(err, "%s: out of memory", dir);
    ac_image_free(&t);
    free(tdir);
    free(full);
    if (!ok) free(r);
    return ok ? r : NULL;
}

/* A file-name-safe stem for the sheet directory of image i. */
static void sheet_stem(char *out, size_t n, int i, const char *key) {
    int k = snprintf(out, n, "%05d_", i + 1);
    for (const char *p = key; *p && (size_t)k + 1 < n && *p != '.'; p++)
        out[k++] = ((*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') || (*p >= '0' && *p <= '9') || *p == '-' || *p == '_') ? *p : '_';
    out[k] = 0;
}

char *ac_report_sheet(const char *dir, int i, const char *key, const ac_image *photo, const ac_caption *c,
                      const ac_vocab *v, int grid_h, int grid_w, const ac_font *font, int threads, ac_err *err) {
    ac_overlay_opts oo = ac_overlay_defaults();
    oo.max_side = 768;
    oo.force = 1;
    oo.sheet_only = 1; /* the report links the sheet only */
    oo.threads = threads;
    char stem[96], rel[160];
    sheet_stem(stem, sizeof stem, i, key);
    char *sheet_dir = ac_path_join(dir, "sheets");
    char **paths = NULL;
    int np = 0;
    snprintf(rel, sizeof rel, "sheets/%s/sheet.png", stem);
    char *r = ac_strdup(rel); /* before the sheet: nothing can fail once it is written */
    int rc = sheet_dir && r ? ac_overlays_write(sheet_dir, stem, photo, c, v, grid_h, grid_w, &oo, font, &paths, &np, err)
                            : ac_errf(err, "%s: out of memory", dir);
    for (int k = 0; k < np; k++) free(paths[k]);
    free(paths), free(sheet_dir);
    if (rc) free(r);
    return rc ? NULL : r;
}
