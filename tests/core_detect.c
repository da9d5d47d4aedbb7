/* core_detect.c: the core API's detector (attncap.h, since 1.1) from a program that knows only that
 * header, for tests/core_detect.sh. It must compile as C99 and C++17 with -pedantic -Werror and link
 * against libattncap.so.
 *   core_detect file PHOTO...      per photo "PATH W H N", then a line "LABEL SCORE X0 Y0 X1 Y1" (%.9g)
 *                                  per box, from ac_detect_file; the photo read into memory
 *                                  (ac_detect_bytes) must give the same boxes bit for bit (exit 4 if not);
 *                                  exit 3 if a box is not inside the photo or the scores not descending
 *   core_detect draw DIR PHOTO...  DIR/<name>.png as `attncap detect --draw DIR` writes them
 *   core_detect rgb FILE H W       FILE holds H x W x 3 bytes: its boxes, as `file` prints them
 *   core_detect errors DIR         every error path; prints "ok WHAT" or "bad WHAT: why" */
#include <attncap/attncap.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static ac_detector *open_or_die(void) {
    ac_err err;
    ac_detector *d = NULL;
    if (ac_detector_open(NULL, NULL, &d, &err)) {
        fprintf(stderr, "open: %s\n", err.msg);
        exit(2);
    }
    return d;
}

/* Prints r; 3 when a box is outside the photo, a score out of order or a name not its label's. */
static int show(const ac_detector *d, const ac_detect_result *r, const char *name) {
    int bad = 0;
    printf("%s %d %d %d\n", name, r->width, r->height, r->n_boxes);
    for (int i = 0; i < r->n_boxes; i++) {
        const ac_detect_box *b = &r->boxes[i];
        printf("%s %.9g %.9g %.9g %.9g %.9g\n", b->name, b->score, b->x0, b->y0, b->x1, b->y1);
        if (!(0 <= b->x0 && b->x0 <= b->x1 && b->x1 <= r->width && 0 <= b->y0 && b->y0 <= b->y1 && b->y1 <= r->height) ||
            (i && b->score > r->boxes[i - 1].score) || !(b->score > 0 && b->score <= 1) ||
            !b->name || strcmp(b->name, ac_detector_label(d, b->label)) != 0) {
            fprintf(stderr, "%s: box %d is not a detection\n", name, i);
            bad = 3;
        }
    }
    return bad;
}

static int same_boxes(const ac_detect_result *a, const ac_detect_result *b) {
    if (a->width != b->width || a->height != b->height || a->n_boxes != b->n_boxes) return 0;
    for (int i = 0; i < a->n_boxes; i++) {
        const ac_detect_box *p = &a->boxes[i], *q = &b->boxes[i];
        if (p->x0 != q->x0 || p->y0 != q->y0 || p->x1 != q->x1 || p->y1 != q->y1 || p->score != q->score ||
            p->label != q->label)
            return 0;
    }
    return 1;
}

static void *read_all(const char *path, size_t *n) {
    FILE *f = fopen(path, "rb");
    char *buf = NULL;
    *n = 0;
    if (!f) return NULL;
    for (size_t cap = 0;;) {
        if (*n == cap && !(buf = (char *)realloc(buf, cap = cap ? 2 * cap : 1 << 16))) break;
        size_t got = fread(buf + *n, 1, cap - *n, f);
        if (!got) break;
        *n += got;
    }
    fclose(f);
    return buf;
}

static int cmd_file(int n, char **photos) {
    ac_detector *d = open_or_die();
    int rc = 0;
    for (int k = 0; k < n; k++) {
        ac_err err;
        ac_detect_result *r = NULL, *m = NULL;
        size_t size;
        void *bytes = read_all(photos[k], &size);
        if (ac_detect_file(d, photos[k], 0, &r, &err) || ac_detect_bytes(d, bytes, size, 0, &m, &err)) {
            fprintf(stderr, "%s\n", err.msg);
            rc = 1;
        } else {
            const int bad = show(d, r, photos[k]);
            if (bad) rc = bad;
            if (!same_boxes(r, m) || m->image) {
                fprintf(stderr, "%s: in memory, other boxes (%d, not %d)\n", photos[k], m->n_boxes, r->n_boxes);
                rc = 4;
            }
        }
        ac_detect_result_free(r), ac_detect_result_free(m);
        free(bytes);
    }
    ac_detector_close(d);
    return rc;
}

static int cmd_draw(const char *dir, int n, char **photos) {
    ac_detector *d = open_or_die();
    int rc = 0;
    for (int k = 0; k < n && !rc; k++) {
        ac_err err;
        ac_detect_result *r = NULL;
        const char *base = strrchr(photos[k], '/'), *dot;
        base = base ? base + 1 : photos[k];
        dot = strrchr(base, '.');
        char path[4096];
        snprintf(path, sizeof path, "%s/%.*s.png", dir, dot ? (int)(dot - base) : (int)strlen(base), base);
        if (ac_detect_file(d, photos[k], AC_KEEP_PHOTO, &r, &err) || ac_detect_result_draw(d, r, path, &err)) {
            fprintf(stderr, "%s\n", err.msg);
            rc = 1;
        }
        ac_detect_result_free(r);
    }
    ac_detector_close(d);
    return rc;
}

static int cmd_rgb(const char *file, int h, int w) {
    size_t size;
    unsigned char *px = (unsigned char *)read_all(file, &size);
    if (!px || size != (size_t)h * (size_t)w * 3) {
        fprintf(stderr, "%s: not %d x %d x 3 bytes\n", file, h, w);
        free(px);
        return 1;
    }
    ac_detector *d = open_or_die();
    ac_err err;
    ac_detect_result *r = NULL;
    int rc = 0;
    if (ac_detect_rgb(d, px, h, w, 0, &r, &err)) {
        fprintf(stderr, "%s\n", err.msg);
        rc = 1;
    } else {
        rc = show(d, r, file);
    }
    ac_detect_result_free(r);
    ac_detector_close(d);
    free(px);
    return rc;
}

/* One error case: rc must be -1, *out NULL, the message one non-empty line containing `want`. */
static void expect(const char *what, int rc, const void *out, const ac_err *err, const char *want, int code) {
    if (rc != -1) printf("bad %s: returned %d\n", what, rc);
    else if (out) printf("bad %s: a result on failure\n", what);
    else if (!err->msg[0] || strchr(err->msg, '\n')) printf("bad %s: message '%s'\n", what, err->msg);
    else if (want && !strstr(err->msg, want)) printf("bad %s: '%s' does not say '%s'\n", what, err->msg, want);
    else if (code >= 0 && err->code != code) printf("bad %s: code %d, not %d ('%s')\n", what, err->code, code, err->msg);
    else printf("ok %s: %s\n", what, err->msg);
}

static int cmd_errors(const char *dir) {
    char missing[4096], text[4096], drawn[4096];
    snprintf(missing, sizeof missing, "%s/missing.jpg", dir);
    snprintf(text, sizeof text, "%s/notes.jpg", dir); /* made by the script: text named .jpg */
    snprintf(drawn, sizeof drawn, "%s/no/such/dir/x.png", dir);
    ac_err err;
    ac_detector *bad = NULL;
    expect("open_missing", ac_detector_open("/nonexistent/det.tflite", NULL, &bad, &err), bad, &err,
           "/nonexistent/det.tflite", -1);
    ac_detector_opts o;
    ac_detector_opts_init(&o);
    if (o.min_score != 0.3f || o.threads || o.labels) printf("bad opts_init: %g %d\n", o.min_score, o.threads);
    o.min_score = 1.5f;
    expect("open_min_score", ac_detector_open(NULL, &o, &bad, &err), bad, &err, "min_score", -1);
    ac_detector_opts_init(&o);
    o.labels = "/nonexistent/labels.txt";
    expect("open_labels_missing", ac_detector_open(NULL, &o, &bad, &err), bad, &err, "/nonexistent/labels.txt", -1);
    ac_detector_opts_init(&o);
    o.labels = text; /* one label for a graph of 80 */
    expect("open_labels_wrong", ac_detector_open(NULL, &o, &bad, &err), bad, &err, "labels", -1);

    ac_detector *d = open_or_die();
    const int n = ac_detector_labels(d);
    if (n != 80 || strcmp(ac_detector_label(d, 0), "person") || ac_detector_label(d, -1) || ac_detector_label(d, n))
        printf("bad labels: %d, first '%s'\n", n, ac_detector_label(d, 0) ? ac_detector_label(d, 0) : "(null)");
    else printf("ok labels: %d, %s .. %s\n", n, ac_detector_label(d, 0), ac_detector_label(d, n - 1));
    ac_detect_result *r = NULL;
    expect("file_missing", ac_detect_file(d, missing, 0, &r, &err), r, &err, missing, AC_ERR_BAD_IMAGE);
    expect("file_not_an_image", ac_detect_file(d, text, 0, &r, &err), r, &err, text, AC_ERR_BAD_IMAGE);
    expect("file_null", ac_detect_file(d, NULL, 0, &r, &err), r, &err, NULL, AC_ERR_BAD_IMAGE);
    const char junk[] = "this is not a photo at all, just some bytes";
    expect("bytes_junk", ac_detect_bytes(d, junk, sizeof junk, 0, &r, &err), r, &err, "bytes", AC_ERR_BAD_IMAGE);
    expect("bytes_empty", ac_detect_bytes(d, junk, 0, 0, &r, &err), r, &err, NULL, AC_ERR_BAD_IMAGE);
    unsigned char px[4 * 4 * 3];
    memset(px, 128, sizeof px);
    expect("rgb_bad_size", ac_detect_rgb(d, px, 0, 4, 0, &r, &err), r, &err, "bad size", AC_ERR_BAD_IMAGE);
    expect("rgb_too_many_pixels", ac_detect_rgb(d, px, 1 << 20, 1 << 20, 0, &r, &err), r, &err, "limit", AC_ERR_BAD_IMAGE);
    if (ac_detect_rgb(d, px, 4, 4, 0, &r, &err)) printf("bad rgb_grey: %s\n", err.msg);
    else {
        char *j = ac_detect_result_json(r, NULL);
        const char *want = "{\"image\":\"\",\"width\":4,\"height\":4,";
        if (r->image || r->width != 4 || r->height != 4 || !j || strncmp(j, want, strlen(want)))
            printf("bad rgb_grey: %s\n", j ? j : "(no JSON)");
        else printf("ok rgb_grey: %s\n", j);
        ac_free(j);
        expect("draw_no_photo", ac_detect_result_draw(d, r, drawn, &err), NULL, &err, "AC_KEEP_PHOTO", -1);
        ac_detect_result_free(r);
    }
    if (ac_detect_rgb(d, px, 4, 4, AC_KEEP_PHOTO, &r, &err)) printf("bad rgb_kept: %s\n", err.msg);
    else {
        expect("draw_no_folder", ac_detect_result_draw(d, r, drawn, &err), NULL, &err, drawn, -1);
        ac_detect_result_free(r);
    }
    ac_detect_result_free(NULL), ac_detector_close(NULL); /* no-ops */
    ac_detector_close(d);
    return 0;
}

int main(int argc, char **argv) {
    if (argc >= 3 && !strcmp(argv[1], "file")) return cmd_file(argc - 2, argv + 2);
    if (argc >= 4 && !strcmp(argv[1], "draw")) return cmd_draw(argv[2], argc - 3, argv + 3);
    if (argc == 5 && !strcmp(argv[1], "rgb")) return cmd_rgb(argv[2], atoi(argv[3]), atoi(argv[4]));
    if (argc == 3 && !strcmp(argv[1], "errors")) return cmd_errors(argv[2]);
    fprintf(stderr, "usage: core_detect file|draw|rgb|errors ...\n");
    return 2;
}
