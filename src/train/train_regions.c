/* train_regions.c: the regions (regions.h) of the training photos and of the captions without photos.
 *
 * Photos: each feature row's detections come from `attncap detect --json` lines (o->detections), the
 * photo found by file name; a "#flip" row gets its photo's regions mirrored. They are chosen exactly
 * as the captioner chooses them (ac_regions_from_detections with the model's region_min_score and
 * regions), so training and captioning see the same vectors.
 * Captions without photos: the COCO objects the caption names (objects.h) become pseudo-regions over
 * the no-photo context x: x + s * region_scale * code(k), s drawn uniformly from [0.3, 1], after
 * TEXT_CONTEXT_ROWS copies of x (so a region competes for the attention as a photo's region competes
 * with the photo's cells, instead of taking it for want of anything else: with one copy of x the
 * model trained on text attended to regions and on photos hardly looked at them); each is
 * dropped with probability 1/6 and a wrong category at s in [0.1, 0.4] is added with probability
 * 1/4, so the decoder learns to name what the regions say, and to doubt a weak one. The draws are a
 * hash of (seed, caption): the same batch gets the same regions on a resumed run. */
#include <cjson/cJSON.h>
#include <stdlib.h>
#include <string.h>

#include "attncap/objects.h"
#include "decoder_internal.h"
#include "strmap.h"
#include "train_internal.h"
#include "alloc_internal.h"

#define DETECTIONS_MAX_BYTES (1u << 30)
#define TEXT_CONTEXT_ROWS 32

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

int ac_train_regions_load(ac_trainer *tr, ac_err *err) {
    const ac_train_opts *o = tr->o;
    const int R = tr->R, rows = tr->fc.n;
    tr->reg = ac_calloc((size_t)rows * R + 1, sizeof *tr->reg);
    tr->n_reg = ac_calloc((size_t)rows + 1, 1);
    if (!tr->reg || !tr->n_reg) return ac_errf(err, "out of memory");
    ac_strmap map = {0}, *by_name = &map;
    for (int r = 0; r < rows; r++)
        if (ac_strmap_put(by_name, tr->fc.keys[r], r) == -2) {
            ac_strmap_free(by_name);
            return ac_errf(err, "out of memory");
        }
    char *list = ac_strdup(o->detections), *save = NULL, **names = NULL;
    int n_names = 0, rc = 0, matched = 0;
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
                ac_region *out = tr->reg + (size_t)r * R;
                int n = ac_regions_from_detections(&d, (const char *const *)names, n_names, tr->region_min, R, out);
                for (int k = 0; flip && k < n; k++) ac_region_flip(&out[k]);
                tr->n_reg[r] = (unsigned char)n;
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
    tr->n_reg_photos = matched;
    if (rc == 0 && matched == 0)
        rc = ac_errf(err, "%s: no photo of the feature cache %s has detections", o->detections, o->features);
    return rc;
}

void ac_train_photo_regions(const ac_trainer *tr, int row, int gh, int gw, float *ann, int *n_valid, int *n_regions,
                            unsigned char *cat) {
    const int D = tr->D, n = tr->n_reg[row];
    for (int k = 0; k < n; k++) {
        const ac_region *r = &tr->reg[(size_t)row * tr->R + k];
        ac_region_vector(ann, gh, gw, D, r, tr->region_scale, ann + (size_t)(gh * gw + k) * D);
        cat[k] = (unsigned char)r->category;
    }
    *n_valid = gh * gw + n, *n_regions = n;
}

int ac_train_text_objects(const ac_tokens *t, unsigned char *obj) {
    char *joined = ac_tokens_join(t);
    uint8_t present[AC_N_OBJECTS];
    int n = 0;
    if (joined && ac_objects_in_tokens(joined, present) > 0)
        for (int k = 0; k < AC_N_OBJECTS && n < AC_TEXT_OBJECTS; k++)
            if (present[k]) obj[n++] = (unsigned char)k;
    free(joined);
    return n;
}

static float unit(uint64_t *s) {
    *s = ac_mix64(*s + 0x9E3779B97F4A7C15ull);
    return (float)((*s >> 40) * (1.0 / 16777216.0));
}

void ac_train_text_regions(const ac_trainer *tr, const ac_train_example *e, uint64_t seed, float *ann, int *n_valid,
                           int *n_regions, unsigned char *cat) {
    const int D = tr->D, M = tr->Lg < TEXT_CONTEXT_ROWS ? tr->Lg : TEXT_CONTEXT_ROWS;
    uint64_t s = seed;
    int n = 0;
    float code[AC_REGION_MAX_DIM];
    for (int m = 0; m < M; m++) memcpy(ann + (size_t)m * D, tr->null_ctx, sizeof(float) * (size_t)D);
    for (int k = 0; k <= e->n_obj && n < tr->R; k++) {
        int category;
        float score;
        if (k < e->n_obj) {
            if (unit(&s) < 1.0f / 6.0f) continue;
            category = e->obj[k], score = 0.3f + 0.7f * unit(&s);
        } else { /* a wrong category, weakly */
            if (unit(&s) >= 0.25f) continue;
            category = (int)(unit(&s) * AC_N_OBJECTS) % AC_N_OBJECTS, score = 0.1f + 0.3f * unit(&s);
            int named = 0;
            for (int j = 0; j < e->n_obj; j++) named |= e->obj[j] == category;
            if (named) continue;
        }
        float *row = ann + (size_t)(M + n) * D;
        ac_region_code(category, D, code);
        for (int d = 0; d < D; d++) row[d] = tr->null_ctx[d] + score * tr->region_scale * code[d];
        cat[n++] = (unsigned char)category;
    }
    *n_valid = M + n, *n_regions = n;
}
