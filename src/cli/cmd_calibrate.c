/* attncap calibrate: fit a model's caption confidence on dev photos (confidence.h). */
#include <cjson/cJSON.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "attncap/confidence.h"
#include "attncap/dataset.h"
#include "attncap/model.h"
#include "attncap/objects.h"
#include "commands.h"

static void usage(FILE *f) {
    fprintf(f,
            "usage: attncap calibrate --refs SPEC --results CAPTIONS.jsonl [--refs SPEC --results ...] [--write MODEL]\n\n"
            "Fits the confidence of a model's captions (Platt scaling of the mean log-probability per token) on\n"
            "photos with references: a caption counts as right when every object it names (COCO's 80\n"
            "categories, as attncap eval counts them) is named by at least one of its references. The\n"
            "captions are `attncap caption --json` output of the same model, with the tags it will be used\n"
            "with; photos are matched to the references by file name. Prints the fit and its calibration\n"
            "error (fitted on half the photos, measured on the other half, and on all); --write records it in\n"
            "MODEL (metadata \"confidence\"), and attncap caption then prints it.\n\n"
            "  --refs SPEC        references: COCO captions JSON, Flickr8k dir, Karpathy JSON or TSV (all splits)\n"
            "  --results FILE     caption --json lines for photos of the previous --refs (repeat the pair)\n"
            "  --write MODEL      record the fit in MODEL (atomic; weights untouched)\n");
}

typedef struct sample_set {
    int n, cap;
    double *x;
    int *y;
} sample_set;

static int push(sample_set *s, double x, int y) {
    if (s->n == s->cap) {
        int cap = s->cap ? 2 * s->cap : 256;
        double *nx = realloc(s->x, sizeof(double) * (size_t)cap);
        if (nx) s->x = nx;
        int *ny = realloc(s->y, sizeof(int) * (size_t)cap);
        if (ny) s->y = ny;
        if (!nx || !ny) return -1;
        s->cap = cap;
    }
    s->x[s->n] = x, s->y[s->n++] = y;
    return 0;
}

/* One (refs, results) pair: every result line with a photo in refs becomes a sample. */
static int add_pair(const char *refs, const char *results, sample_set *s) {
    ac_dataset ds;
    ac_err err;
    if (ac_dataset_load(refs, NULL, &ds, &err)) {
        fprintf(stderr, "attncap calibrate: %s\n", err.msg);
        return -1;
    }
    FILE *f = fopen(results, "r");
    if (!f) {
        fprintf(stderr, "attncap calibrate: %s: cannot open\n", results);
        ac_dataset_free(&ds);
        return -1;
    }
    char *line = NULL;
    size_t cap = 0;
    int rc = 0, lineno = 0, used = 0;
    while (!rc && getline(&line, &cap, f) > 0) {
        lineno++;
        cJSON *o = cJSON_Parse(line);
        const cJSON *img = cJSON_GetObjectItemCaseSensitive(o, "image"), *lp = cJSON_GetObjectItemCaseSensitive(o, "logprob"),
                    *tok = cJSON_GetObjectItemCaseSensitive(o, "tokens"), *capn = cJSON_GetObjectItemCaseSensitive(o, "caption");
        if (!cJSON_IsString(img) || !cJSON_IsNumber(lp) || !cJSON_IsArray(tok) || !cJSON_IsString(capn)) {
            fprintf(stderr, "attncap calibrate: %s:%d: not a caption --json line\n", results, lineno);
            rc = -1;
        } else {
            const char *base = strrchr(img->valuestring, '/');
            base = base ? base + 1 : img->valuestring;
            const ac_ds_image *im = NULL;
            for (int i = 0; i < ds.n && !im; i++)
                if (!strcmp(ds.images[i].key, base)) im = &ds.images[i];
            if (im) {
                uint8_t cand[AC_N_OBJECTS], truth[AC_N_OBJECTS] = {0}, r[AC_N_OBJECTS];
                if (ac_objects_in_text(capn->valuestring, cand, &err) < 0) rc = -1;
                for (int k = 0; !rc && k < im->n_caps; k++) {
                    if (ac_objects_in_text(im->caps[k], r, &err) < 0) rc = -1;
                    for (int c = 0; c < AC_N_OBJECTS; c++) truth[c] |= r[c];
                }
                int right = 1;
                for (int c = 0; c < AC_N_OBJECTS; c++) right &= !cand[c] || truth[c];
                const double mean = lp->valuedouble / (cJSON_GetArraySize(tok) + 1);
                if (rc) fprintf(stderr, "attncap calibrate: %s:%d: %s\n", results, lineno, err.msg);
                else if (push(s, mean, right)) rc = -1, fprintf(stderr, "attncap calibrate: out of memory\n");
                used++;
            }
        }
        cJSON_Delete(o);
    }
    free(line);
    fclose(f);
    ac_dataset_free(&ds);
    if (!rc && used == 0) {
        fprintf(stderr, "attncap calibrate: %s: no photo of %s in its references\n", results, refs);
        rc = -1;
    }
    return rc;
}

int cmd_calibrate(int argc, char **argv) {
    const char *refs[8] = {0}, *results[8] = {0}, *write = NULL;
    int nr = 0, nres = 0, rc = 1;
    for (int i = 1; i < argc; i++) { /* --refs/--results pairs repeat, which the option table does not do */
        const char *a = argv[i];
        if (!strcmp(a, "--help") || !strcmp(a, "-h")) return usage(stdout), 0;
        if (i + 1 >= argc || (strcmp(a, "--refs") && strcmp(a, "--results") && strcmp(a, "--write"))) {
            fprintf(stderr, "attncap calibrate: unexpected '%s' (see --help)\n", a);
            return 2;
        }
        if (!strcmp(a, "--write")) write = argv[++i];
        else if ((!strcmp(a, "--refs") ? nr : nres) == 8) {
            fprintf(stderr, "attncap calibrate: at most 8 %s\n", a);
            return 2;
        } else if (!strcmp(a, "--refs")) refs[nr++] = argv[++i];
        else results[nres++] = argv[++i];
    }
    if (nr == 0 || nr != nres) {
        fprintf(stderr, "attncap calibrate: give --refs SPEC --results FILE pairs (see --help)\n");
        return 2;
    }
    sample_set s = {0};
    for (int i = 0; i < nr; i++)
        if (add_pair(refs[i], results[i], &s)) goto out;
    ac_confidence half, all;
    ac_err err;
    /* Halves by position (even / odd): fit on one, measure on the other. */
    sample_set a = {0}, b = {0};
    for (int i = 0; i < s.n; i++)
        if (push(i % 2 ? &b : &a, s.x[i], s.y[i])) goto out;
    int right = 0;
    for (int i = 0; i < s.n; i++) right += s.y[i];
    if (ac_confidence_fit(a.x, a.y, a.n, &half, &err) || ac_confidence_fit(s.x, s.y, s.n, &all, &err)) {
        fprintf(stderr, "attncap calibrate: %s\n", err.msg);
        free(a.x), free(a.y), free(b.x), free(b.y);
        goto out;
    }
    const double base = (double)right / s.n;
    printf("captions %d, right %d (%.3f)\n", s.n, right, base);
    printf("fit on half, measured on the other half: calibration error %.3f, log-loss %.4f (a constant %.3f: %.4f)\n",
           ac_confidence_ece(&half, b.x, b.y, b.n, 10), ac_confidence_nll(&half, b.x, b.y, b.n),
           base, -(base * log(base) + (1 - base) * log(1 - base)));
    printf("fit on all: a %.4f, b %.4f; calibration error %.3f, log-loss %.4f\n", all.a, all.b,
           ac_confidence_ece(&all, s.x, s.y, s.n, 10), ac_confidence_nll(&all, s.x, s.y, s.n));
    free(a.x), free(a.y), free(b.x), free(b.y);
    if (write) {
        char *j = ac_confidence_to_json(&all);
        if (!j || ac_model_set_meta(write, "confidence", j, &err)) {
            fprintf(stderr, "attncap calibrate: %s\n", j ? err.msg : "out of memory");
            free(j);
            goto out;
        }
        free(j);
        printf("written to %s\n", write);
    }
    rc = 0;
out:
    free(s.x), free(s.y);
    return rc;
}
