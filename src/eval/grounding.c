/* Grounding: attention mass inside hand-drawn or detected boxes, the pointing game. */
#include "attncap/grounding.h"
#include "attncap/objects.h"
#include "alloc_internal.h"

#include <ctype.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#define MAX_BOX_FILE (64u << 20)
#define MAX_BOXES 64 /* per object: the union is computed exactly, O(n^3) */

void ac_ground_free(ac_ground_set *set) {
    if (!set) return;
    for (int i = 0; i < set->n; i++) {
        ac_ground_object *o = &set->obj[i];
        free(o->photo);
        for (int k = 0; k < o->n_words; k++) free(o->words[k]);
        free(o->words);
        free(o->boxes);
    }
    free(set->obj);
    memset(set, 0, sizeof *set);
}

int ac_ground_names(const ac_ground_object *o, const char *word) {
    if (o->category >= 0) return ac_ground_word_category(word) == o->category;
    for (int k = 0; k < o->n_words; k++)
        if (!strcmp(o->words[k], word)) return 1;
    return 0;
}

/* "dog,dogs" -> words (lower-cased). */
static int parse_words(char *s, ac_ground_object *o) {
    for (char *p = s; *p; p++) *p = (char)tolower((unsigned char)*p);
    char *save = NULL;
    for (char *tok = strtok_r(s, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
        while (*tok == ' ') tok++;
        size_t len = strlen(tok);
        while (len && tok[len - 1] == ' ') tok[--len] = 0;
        if (!len) continue;
        char **w = ac_realloc(o->words, (size_t)(o->n_words + 1) * sizeof *w);
        if (!w) return -1;
        o->words = w;
        if (!(o->words[o->n_words] = ac_strdup(tok))) return -1;
        o->n_words++;
    }
    return 0;
}

/* "x0,y0,x1,y1 x0,y0,x1,y1" -> boxes. Returns 0, -1 (out of memory) or -2 (malformed). */
static int parse_boxes(const char *s, ac_ground_object *o) {
    const char *p = s;
    for (;;) {
        while (*p == ' ') p++;
        if (!*p) return o->n_boxes ? 0 : -2;
        float v[4];
        for (int k = 0; k < 4; k++) {
            char *end;
            v[k] = strtof(p, &end);
            if (end == p || !isfinite(v[k]) || v[k] < 0 || v[k] > 1) return -2;
            p = end;
            if (k < 3 && *p++ != ',') return -2;
        }
        if (*p && *p != ' ') return -2;
        if (!(v[2] > v[0] && v[3] > v[1]) || o->n_boxes == MAX_BOXES) return -2;
        ac_box *b = ac_realloc(o->boxes, (size_t)(o->n_boxes + 1) * sizeof *b);
        if (!b) return -1;
        o->boxes = b;
        o->boxes[o->n_boxes++] = (ac_box){v[0], v[1], v[2], v[3]};
    }
}

int ac_ground_load(const char *path, ac_ground_set *set, ac_err *err) {
    memset(set, 0, sizeof *set);
    char *text;
    size_t len;
    if (ac_read_file(path, MAX_BOX_FILE, &text, &len, err)) return -1;
    int rc = ac_ground_parse(text, len, path, set, err);
    free(text);
    return rc;
}

int ac_ground_parse(const char *data, size_t len, const char *path, ac_ground_set *set, ac_err *err) {
    memset(set, 0, sizeof *set);
    if (memchr(data, 0, len)) return ac_errf(err, "%s: not a text file (NUL byte)", path);
    char *text = ac_malloc(len + 1);
    if (!text) return ac_errf(err, "out of memory");
    memcpy(text, data, len);
    text[len] = 0;
    int rc = 0, line_no = 0;
    for (char *line = text, *next; line; line = next) {
        line_no++;
        if ((next = strchr(line, '\n'))) *next++ = 0;
        size_t n = strlen(line);
        if (n && line[n - 1] == '\r') line[--n] = 0;
        if (!n || line[0] == '#') continue;
        char *tab1 = strchr(line, '\t'), *tab2 = tab1 ? strchr(tab1 + 1, '\t') : NULL;
        if (!tab2 || strchr(tab2 + 1, '\t')) {
            rc = ac_errf(err, "%s:%d: expected PHOTO<TAB>WORDS<TAB>BOXES", path, line_no);
            break;
        }
        *tab1 = *tab2 = 0;
        ac_ground_object *grown = ac_realloc(set->obj, (size_t)(set->n + 1) * sizeof *grown);
        if (!grown) {
            rc = ac_errf(err, "out of memory");
            break;
        }
        set->obj = grown;
        ac_ground_object *o = &set->obj[set->n++];
        memset(o, 0, sizeof *o);
        o->category = -1;
        if (!*line) {
            rc = ac_errf(err, "%s:%d: empty photo name", path, line_no);
            break;
        }
        int b;
        if (!(o->photo = ac_strdup(line)) || parse_words(tab1 + 1, o) || (b = parse_boxes(tab2 + 1, o)) == -1) {
            rc = ac_errf(err, "out of memory");
            break;
        }
        if (!o->n_words) {
            rc = ac_errf(err, "%s:%d: no words name the object", path, line_no);
            break;
        }
        if (b) {
            rc = ac_errf(err, "%s:%d: boxes must be x0,y0,x1,y1 in 0..1 with x0 < x1 and y0 < y1, separated by "
                              "spaces (at most %d)", path, line_no, MAX_BOXES);
            break;
        }
    }
    free(text);
    if (!rc && !set->n) rc = ac_errf(err, "%s: no objects", path);
    if (rc) ac_ground_free(set);
    return rc;
}

static int cmp_float(const void *a, const void *b) {
    float x = *(const float *)a, y = *(const float *)b;
    return (x > y) - (x < y);
}

/* The area of (the union of the boxes) inside the rectangle r, exactly: the box edges cut r into a
 * grid of elementary rectangles, each either inside some box or outside all of them. */
static double union_area_in(const ac_box *boxes, int n, ac_box r) {
    float xs[2 * MAX_BOXES + 2], ys[2 * MAX_BOXES + 2];
    int nx = 0, ny = 0;
    xs[nx++] = r.x0, xs[nx++] = r.x1, ys[ny++] = r.y0, ys[ny++] = r.y1;
    for (int i = 0; i < n && i < MAX_BOXES; i++) {
        if (boxes[i].x0 > r.x0 && boxes[i].x0 < r.x1) xs[nx++] = boxes[i].x0;
        if (boxes[i].x1 > r.x0 && boxes[i].x1 < r.x1) xs[nx++] = boxes[i].x1;
        if (boxes[i].y0 > r.y0 && boxes[i].y0 < r.y1) ys[ny++] = boxes[i].y0;
        if (boxes[i].y1 > r.y0 && boxes[i].y1 < r.y1) ys[ny++] = boxes[i].y1;
    }
    qsort(xs, (size_t)nx, sizeof *xs, cmp_float);
    qsort(ys, (size_t)ny, sizeof *ys, cmp_float);
    double area = 0;
    for (int a = 0; a + 1 < nx; a++)
        for (int b = 0; b + 1 < ny; b++) {
            float cx = 0.5f * (xs[a] + xs[a + 1]), cy = 0.5f * (ys[b] + ys[b + 1]);
            for (int i = 0; i < n && i < MAX_BOXES; i++)
                if (cx > boxes[i].x0 && cx < boxes[i].x1 && cy > boxes[i].y0 && cy < boxes[i].y1) {
                    area += (double)(xs[a + 1] - xs[a]) * (ys[b + 1] - ys[b]);
                    break;
                }
        }
    return area;
}

static ac_box cell(int r, int c, int grid_h, int grid_w) {
    return (ac_box){(float)c / grid_w, (float)r / grid_h, (float)(c + 1) / grid_w, (float)(r + 1) / grid_h};
}

double ac_ground_area(const ac_box *boxes, int n) {
    return union_area_in(boxes, n, (ac_box){0, 0, 1, 1});
}

double ac_ground_mass(const float *alpha, int grid_h, int grid_w, const ac_box *boxes, int n) {
    double mass = 0, cell_area = 1.0 / ((double)grid_h * grid_w);
    for (int r = 0; r < grid_h; r++)
        for (int c = 0; c < grid_w; c++) {
            float a = alpha[r * grid_w + c];
            if (a != 0) mass += a * (union_area_in(boxes, n, cell(r, c, grid_h, grid_w)) / cell_area);
        }
    return mass;
}

int ac_ground_hit(const float *alpha, int grid_h, int grid_w, const ac_box *boxes, int n) {
    int best = 0;
    for (int i = 1; i < grid_h * grid_w; i++)
        if (alpha[i] > alpha[best]) best = i;
    return union_area_in(boxes, n, cell(best / grid_w, best % grid_w, grid_h, grid_w)) > 0;
}

double ac_ground_hit_chance(int grid_h, int grid_w, const ac_box *boxes, int n) {
    int overlapping = 0;
    for (int r = 0; r < grid_h; r++)
        for (int c = 0; c < grid_w; c++) overlapping += union_area_in(boxes, n, cell(r, c, grid_h, grid_w)) > 0;
    return (double)overlapping / ((double)grid_h * grid_w);
}

/* Region r's box as an ac_box. */
static ac_box region_box(const ac_region *r) { return (ac_box){r->x0, r->y0, r->x1, r->y1}; }

/* The share of box b inside the union: its area inside over its area; a box of no area, 1 if its
 * centre lies inside some box of the union. */
static double share_inside(const ac_box *boxes, int n, ac_box b) {
    const double area = (double)(b.x1 - b.x0) * (b.y1 - b.y0);
    if (area > 0) return union_area_in(boxes, n, b) / area;
    const float cx = 0.5f * (b.x0 + b.x1), cy = 0.5f * (b.y0 + b.y1);
    for (int i = 0; i < n && i < MAX_BOXES; i++)
        if (cx >= boxes[i].x0 && cx <= boxes[i].x1 && cy >= boxes[i].y0 && cy <= boxes[i].y1) return 1;
    return 0;
}

double ac_ground_row_mass(const ac_ground_attention *a, int k, const ac_box *boxes, int n) {
    const int G = a->grid_h * a->grid_w;
    const float *row = a->alpha + (size_t)k * (G + a->n_regions);
    double mass = ac_ground_mass(row, a->grid_h, a->grid_w, boxes, n);
    for (int r = 0; r < a->n_regions; r++)
        if (row[G + r] != 0) mass += row[G + r] * share_inside(boxes, n, region_box(&a->regions[r]));
    return mass;
}

int ac_ground_row_hit(const ac_ground_attention *a, int k, const ac_box *boxes, int n) {
    const int G = a->grid_h * a->grid_w;
    const float *row = a->alpha + (size_t)k * (G + a->n_regions);
    int best = 0;
    for (int i = 1; i < G + a->n_regions; i++)
        if (row[i] > row[best]) best = i;
    if (best < G) return ac_ground_hit(row, a->grid_h, a->grid_w, boxes, n);
    const ac_box b = region_box(&a->regions[best - G]);
    return b.x1 > b.x0 && b.y1 > b.y0 ? union_area_in(boxes, n, b) > 0 : share_inside(boxes, n, b) > 0;
}

int ac_ground_word_category(const char *word) {
    uint8_t present[AC_N_OBJECTS];
    if (!ac_objects_in_tokens(word, present)) return -1;
    for (int k = 0; k < AC_N_OBJECTS; k++)
        if (present[k]) return k;
    return -1;
}

static float clip01(float v) { return v < 0 ? 0 : v > 1 ? 1 : v; }

int ac_ground_add_detected(ac_ground_set *set, const char *photo, const ac_detections *d, const char *const *labels,
                           int n_labels, ac_err *err) {
    ac_ground_object *grown = ac_realloc(set->obj, (size_t)(set->n + AC_N_OBJECTS) * sizeof *grown);
    if (!grown) return ac_errf(err, "out of memory");
    set->obj = grown;
    int *cat = ac_malloc(sizeof *cat * (size_t)(d->n + 1));
    if (!cat) return ac_errf(err, "out of memory");
    for (int i = 0; i < d->n; i++) /* each detection's category, -1 for a label COCO has not */
        cat[i] = d->items[i].label >= 0 && d->items[i].label < n_labels ? ac_object_index(labels[d->items[i].label])
                                                                         : -1;
    const float w = d->width > 0 ? (float)d->width : 1, h = d->height > 0 ? (float)d->height : 1;
    int rc = 0;
    for (int k = 0; k < AC_N_OBJECTS && !rc; k++) {
        ac_ground_object *o = &set->obj[set->n++];
        memset(o, 0, sizeof *o);
        o->category = k;
        o->words = ac_malloc(sizeof *o->words);
        if (!o->words || !(o->photo = ac_strdup(photo)) || !(o->words[o->n_words++] = ac_strdup(ac_object_name(k)))) {
            rc = ac_errf(err, "out of memory");
            break;
        }
        for (int i = 0; i < d->n && o->n_boxes < MAX_BOXES; i++) {
            if (cat[i] != k) continue;
            if (!o->boxes && !(o->boxes = ac_malloc(sizeof *o->boxes * MAX_BOXES))) {
                rc = ac_errf(err, "out of memory");
                break;
            }
            const ac_detection *x = &d->items[i];
            o->boxes[o->n_boxes++] =
                (ac_box){clip01(x->x0 / w), clip01(x->y0 / h), clip01(x->x1 / w), clip01(x->y1 / h)};
        }
    }
    free(cat);
    return rc;
}

int ac_ground_detect(ac_detector *det, const char *path, const char *photo, ac_ground_set *set, ac_err *err) {
    ac_image img = {0};
    ac_detections d = {0};
    if (ac_image_load(path, &img, err)) return -1;
    const ac_detect_options o = ac_detector_options(det);
    const int n_labels = ac_detector_labels(det);
    const char **labels = ac_malloc(sizeof *labels * (size_t)(n_labels + 1));
    int rc = labels ? 0 : ac_errf(err, "out of memory");
    for (int i = 0; !rc && i < n_labels; i++) labels[i] = ac_detector_label(det, i);
    if (!rc && ac_detector_detect(det, &img, &o, &d, err)) rc = ac_err_prefix(err, "%s", path);
    if (!rc) rc = ac_ground_add_detected(set, photo, &d, labels, n_labels, err);
    free(labels);
    ac_detections_free(&d);
    ac_image_free(&img);
    return rc;
}

int ac_ground_first_of_photo(const ac_ground_set *set, int o) {
    if (o && !strcmp(set->obj[o - 1].photo, set->obj[o].photo)) return 0; /* a photo's detected objects: together */
    for (int p = 0; p < o; p++)
        if (!strcmp(set->obj[p].photo, set->obj[o].photo)) return 0;
    return 1;
}
