/* regions_file.c: a feature cache's regions from `attncap detect` lines (regions.h). */
#include <cjson/cJSON.h>
#include <stdlib.h>
#include <string.h>

#include "attncap/regions.h"
#include "strmap.h"
#include "alloc_internal.h"

#define DETECTIONS_MAX_BYTES (1u << 30)

static const char *base_name(const char *path) {
    const char *s = strrchr(path, '/');
    return s ? s + 1 : path;
}

/* Parses one `attncap detect` line into d (labels as names in names[]/n_names, grown as met). */
static int parse_line(const char *line, ac_detections *d, ac_detection *items, int cap, char ***names, int *n_names,
                      const char **image) {
    cJSON *o = cJSON_Parse(line);
    if (!o) return -1;
    const cJSON *im = cJSON_GetObjectItemCaseSensitive(o, "image"), *w = cJSON_GetObjectItemCaseSensitive(o, "width"),
                *h = cJSON_GetObjectItemCaseSensitive(o, "height"), *ds = cJSON_GetObjectItemCaseSensitive(o, "detections");
    if (!cJSON_IsString(im) || !cJSON_IsNumber(w) || !cJSON_IsNumber(h) || !cJSON_IsArray(ds)) {
        cJSON_Delete(o);
        return -1;
    }
    *image = ac_strdup(im->valuestring);
    d->width = (int)w->valuedouble, d->height = (int)h->valuedouble, d->n = 0, d->items = items;
    const cJSON *e;
    cJSON_ArrayForEach(e, ds) {
        const cJSON *lb = cJSON_GetObjectItemCaseSensitive(e, "label"), *sc = cJSON_GetObjectItemCaseSensitive(e, "score"),
                    *bx = cJSON_GetObjectItemCaseSensitive(e, "box");
        if (d->n == cap || !cJSON_IsString(lb) || !cJSON_IsNumber(sc) || !cJSON_IsArray(bx) || cJSON_GetArraySize(bx) != 4) continue;
        int k = 0;
        while (k < *n_names && strcmp((*names)[k], lb->valuestring)) k++;
        if (k == *n_names) {
            char **g = ac_realloc(*names, sizeof *g * (size_t)(*n_names + 1));
            if (!g) continue;
            *names = g;
            if (!(g[k] = ac_strdup(lb->valuestring))) continue;
            (*n_names)++;
        }
        float b[4];
        for (int j = 0; j < 4; j++) b[j] = (float)cJSON_GetArrayItem(bx, j)->valuedouble;
        items[d->n++] = (ac_detection){b[0], b[1], b[2], b[3], (float)sc->valuedouble, k};
    }
    cJSON_Delete(o);
    return 0;
}

int ac_rows_regions_load(const char *files, const ac_feature_cache *fc, float min_score, int max, ac_rows_regions *out,
                         int *matched_out, ac_err *err) {
    memset(out, 0, sizeof *out);
    if (max < 1 || max > AC_REGIONS_MAX) return ac_errf(err, "%s: %d regions a photo (1 to %d)", files, max, AC_REGIONS_MAX);
    const int rows = fc->n;
    out->regions = ac_calloc((size_t)rows * max + 1, sizeof *out->regions);
    out->n = ac_calloc((size_t)rows + 1, 1);
    out->stride = max;
    if (!out->regions || !out->n) return ac_rows_regions_free(out), ac_errf(err, "out of memory");
    ac_strmap map = {0}, *by_name = &map;
    for (int r = 0; r < rows; r++)
        if (ac_strmap_put(by_name, fc->keys[r], r) == -2) {
            ac_strmap_free(by_name);
            return ac_rows_regions_free(out), ac_errf(err, "out of memory");
        }
    char *list = ac_strdup(files), *save = NULL, **names = NULL;
    int n_names = 0, rc = list ? 0 : ac_errf(err, "out of memory"), matched = 0;
    ac_detection items[256];
    for (char *path = list ? strtok_r(list, ",", &save) : NULL; path && rc == 0; path = strtok_r(NULL, ",", &save)) {
        char *text;
        size_t len;
        if (ac_read_file(path, DETECTIONS_MAX_BYTES, &text, &len, err) < 0) {
            rc = -1;
            break;
        }
        int line_no = 0;
        for (char *line = text, *next; line < text + len; line = next) {
            next = memchr(line, '\n', (size_t)(text + len - line));
            next = next ? (*next = 0, next + 1) : text + len;
            line_no++;
            if (!*line) continue;
            ac_detections d;
            const char *image = NULL;
            if (parse_line(line, &d, items, 256, &names, &n_names, &image) < 0) {
                rc = ac_errf(err, "%s:%d: not a line of `attncap detect`", path, line_no);
                break;
            }
            char key[1100];
            for (int flip = 0; flip < 2; flip++) {
                snprintf(key, sizeof key, "%s%s", base_name(image), flip ? "#flip" : "");
                int r = ac_strmap_get(by_name, key);
                if (r < 0) continue;
                ac_region *o = out->regions + (size_t)r * max;
                int n = ac_regions_from_detections(&d, (const char *const *)names, n_names, min_score, max, o);
                for (int k = 0; flip && k < n; k++) ac_region_flip(&o[k]);
                out->n[r] = (unsigned char)n;
                matched += !flip;
            }
            free((void *)image);
        }
        free(text);
    }
    for (int k = 0; k < n_names; k++) free(names[k]);
    free(names);
    free(list);
    ac_strmap_free(by_name);
    if (rc) return ac_rows_regions_free(out), -1;
    if (matched_out) *matched_out = matched;
    return 0;
}

int ac_rows_regions_of(const ac_rows_regions *r, int row, int max, const ac_region **out) {
    int n = r->n[row];
    if (n > r->stride) n = r->stride;
    if (n > max) n = max;
    *out = r->regions + (size_t)row * r->stride;
    return n;
}

void ac_rows_regions_free(ac_rows_regions *r) {
    free(r->regions), free(r->n);
    memset(r, 0, sizeof *r);
}
