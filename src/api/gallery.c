/* gallery.c: the core API's page of a caption run without references (attncap.h, ac_report_captions)
 * over report.h's ac_gallery_write: `attncap caption --json` lines in, DIR/index.html with thumbnails,
 * captions, confidences and the run's attention sheets out. */
#include "attncap/attncap.h"

#include <cjson/cJSON.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "attncap/common.h"
#include "attncap/image.h"
#include "attncap/report.h"
#include "alloc_internal.h"

/* The rows read from the captions file. */
typedef struct rows {
    int n, cap;
    char **photos, **captions, **sheets; /* [n] owned; a sheet "" when the run wrote none */
    double *confidence;                  /* [n], NAN where unknown */
} rows;

static void rows_free(rows *r) {
    for (int i = 0; i < r->n; i++) free(r->photos[i]), free(r->captions[i]), free(r->sheets[i]);
    free(r->photos), free(r->captions), free(r->sheets), free(r->confidence);
}

static int rows_push(rows *r, const char *photo, const char *caption, const char *sheet, double confidence) {
    if (r->n == r->cap) {
        const int cap = r->cap ? 2 * r->cap : 64;
        char **p = ac_realloc(r->photos, sizeof *p * (size_t)cap);
        if (p) r->photos = p;
        char **c = p ? ac_realloc(r->captions, sizeof *c * (size_t)cap) : NULL;
        if (c) r->captions = c;
        char **s = c ? ac_realloc(r->sheets, sizeof *s * (size_t)cap) : NULL;
        if (s) r->sheets = s;
        double *d = s ? ac_realloc(r->confidence, sizeof *d * (size_t)cap) : NULL;
        if (!d) return -1;
        r->confidence = d, r->cap = cap;
    }
    char *p = ac_strdup(photo), *c = ac_strdup(caption), *s = ac_strdup(sheet);
    if (!p || !c || !s) {
        free(p), free(c), free(s);
        return -1;
    }
    r->photos[r->n] = p, r->captions[r->n] = c, r->sheets[r->n] = s, r->confidence[r->n] = confidence;
    r->n++;
    return 0;
}

/* Each line of `attncap caption --json`: its image, caption, confidence and sheet. */
static int read_rows(const char *path, rows *r, ac_err *err) {
    FILE *f = fopen(path, "r");
    if (!f) return ac_errf(err, "%s: cannot be read", path);
    char *line = NULL;
    size_t cap = 0;
    int rc = 0, lineno = 0;
    while (!rc && getline(&line, &cap, f) >= 0) {
        lineno++;
        if (strspn(line, " \t\r\n") == strlen(line)) continue;
        cJSON *o = cJSON_Parse(line);
        const cJSON *im = cJSON_GetObjectItemCaseSensitive(o, "image"), *c = cJSON_GetObjectItemCaseSensitive(o, "caption"),
                    *cf = cJSON_GetObjectItemCaseSensitive(o, "confidence"),
                    *ov = cJSON_GetObjectItemCaseSensitive(o, "overlays"), *x;
        const char *sheet = "";
        cJSON_ArrayForEach(x, ov) if (cJSON_IsString(x) && strstr(x->valuestring, "/sheet.")) sheet = x->valuestring;
        if (!cJSON_IsString(im) || !cJSON_IsString(c))
            rc = ac_errf(err, "%s:%d: not a caption's JSON line (no \"image\" and \"caption\")", path, lineno);
        else if (rows_push(r, im->valuestring, c->valuestring, sheet,
                           cJSON_IsNumber(cf) && cf->valuedouble > 0 ? cf->valuedouble : NAN))
            rc = ac_errf(err, "out of memory");
        cJSON_Delete(o);
    }
    free(line);
    fclose(f);
    if (!rc && !r->n) rc = ac_errf(err, "%s: no captions in it", path);
    return rc;
}

/* DIR/sheets/NNNNN_sheet.EXT: a copy of the run's sheet (the page stands alone); relative path, or NULL. */
static char *copy_sheet(const char *dir, int i, const char *sheet, ac_err *err) {
    const char *dot = strrchr(sheet, '.');
    char rel[64];
    snprintf(rel, sizeof rel, "sheets/%05d_sheet%s", i + 1, dot && strlen(dot) <= 5 ? dot : ".png");
    char *sub = ac_path_join(dir, "sheets"), *full = ac_path_join(dir, rel), *data = NULL;
    size_t len = 0;
    int ok = sub && full && !ac_mkdirs(sub, err) && !ac_read_file(sheet, (size_t)1 << 30, &data, &len, err) &&
             !ac_write_file_atomic(full, data, len, err);
    free(sub), free(full), free(data);
    return ok ? ac_strdup(rel) : NULL;
}

int ac_report_captions(const char *captions, const char *dir, const char *title, ac_note_fn note, void *user,
                       int *photos, ac_err *err) {
    if (photos) *photos = 0;
    if (!captions || !dir) return ac_errc(err, AC_ERR_OPTIONS, "report: give the captions file and the folder");
    rows r = {0};
    char **thumbs = NULL, **sheets = NULL;
    int rc = read_rows(captions, &r, err);
    if (!rc && (!(thumbs = ac_calloc((size_t)r.n, sizeof *thumbs)) || !(sheets = ac_calloc((size_t)r.n, sizeof *sheets))))
        rc = ac_errf(err, "out of memory");
    for (int i = 0; !rc && i < r.n; i++) { /* a photo or sheet gone since the run: its row has none */
        ac_image img = {0};
        ac_err why;
        if (ac_image_load_min(r.photos[i], 200, 200, &img, &why) == 0) thumbs[i] = ac_report_thumb(dir, i, &img, &why);
        if (!thumbs[i] && note) note(why.msg, user);
        ac_image_free(&img);
        if (r.sheets[i][0] && !(sheets[i] = copy_sheet(dir, i, r.sheets[i], &why)) && note) note(why.msg, user);
    }
    char default_title[600];
    snprintf(default_title, sizeof default_title, "attncap caption: %.500s", captions);
    const ac_gallery g = {title ? title : default_title, NULL, r.n, (const char *const *)r.photos,
                          (const char *const *)r.captions, r.confidence, thumbs, sheets};
    if (!rc && ac_gallery_write(dir, &g, err)) rc = -1;
    if (!rc && photos) *photos = r.n;
    for (int i = 0; i < r.n; i++) {
        if (thumbs) free(thumbs[i]);
        if (sheets) free(sheets[i]);
    }
    free(thumbs), free(sheets);
    rows_free(&r);
    return rc;
}
