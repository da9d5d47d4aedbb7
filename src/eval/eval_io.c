/* eval_io.c: evaluation inputs (COCO results + references, pairs files) and outputs (the scores
 * as JSON, per-image files). */
#include <cjson/cJSON.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "attncap/dataset.h"
#include "attncap/metrics.h"
#include "json_internal.h"
#include "strmap.h"
#include "alloc_internal.h"

static int nonblank(const char *s) {
    for (; *s; s++)
        if (*s != ' ' && *s != '\t' && *s != '\n' && *s != '\r') return 1;
    return 0;
}

static int nonblank_n(const char *s, size_t n) {
    for (size_t i = 0; i < n; i++)
        if (s[i] != ' ' && s[i] != '\t' && s[i] != '\n' && s[i] != '\r') return 1;
    return 0;
}

/* A results file as a cJSON list: a JSON list, or JSON lines (one object per line, as attncap caption
 * --json prints them; what several tasks' outputs concatenated give). */
static cJSON *parse_results(const char *path, ac_err *err) {
    char *data;
    size_t len;
    if (ac_read_file(path, ac_limits_get().max_file_bytes, &data, &len, err)) return NULL;
    size_t at = strspn(data, " \t\r\n");
    cJSON *list = NULL;
    if (data[at] != '{') {
        free(data);
        return ac_json_parse_file(path, err);
    }
    list = cJSON_CreateArray();
    int line = 1;
    for (char *p = data, *e; list && p < data + len; p = e + 1, line++) {
        e = memchr(p, '\n', (size_t)(data + len - p));
        if (!e) e = data + len;
        if (!nonblank_n(p, (size_t)(e - p))) continue;
        cJSON *o = cJSON_ParseWithLength(p, (size_t)(e - p));
        if (!o || !cJSON_AddItemToArray(list, o)) {
            cJSON_Delete(o);
            cJSON_Delete(list);
            list = NULL;
            ac_errf(err, "%s:%d: not valid JSON (JSON lines: one object per line)", path, line);
        }
    }
    free(data);
    return list;
}

/* The id of a result: "image_id", else the file name of "image" (attncap caption --json). */
static int result_id(const cJSON *it, char *buf, size_t n) {
    if (!ac_json_id_text(cJSON_GetObjectItemCaseSensitive(it, "image_id"), buf, n)) return 0;
    const cJSON *img = cJSON_GetObjectItemCaseSensitive(it, "image");
    if (!cJSON_IsString(img) || !img->valuestring[0]) return -1;
    const char *slash = strrchr(img->valuestring, '/');
    snprintf(buf, n, "%s", slash ? slash + 1 : img->valuestring);
    return buf[0] ? 0 : -1;
}

int ac_eval_load_results(const char *refs_spec, const char *results_path, ac_eval_set *s, int *n_refs_images,
                         ac_err *err) {
    return ac_eval_load_results_files(refs_spec, &results_path, 1, s, n_refs_images, err);
}

int ac_eval_load_results_files(const char *refs_spec, const char *const *paths, int n_paths, ac_eval_set *s,
                               int *n_refs_images, ac_err *err) {
    return ac_eval_load_results_in(refs_spec, NULL, paths, n_paths, s, n_refs_images, err);
}

/* Where result `it` says its photo is: the "image" path attncap caption --json prints, when it is a file. */
static char *result_photo(const cJSON *it) {
    const cJSON *img = cJSON_GetObjectItemCaseSensitive(it, "image");
    return cJSON_IsString(img) && ac_is_file(img->valuestring) ? ac_strdup(img->valuestring) : NULL;
}

int ac_eval_load_results_in(const char *refs_spec, const char *images_dir, const char *const *paths, int n_paths,
                            ac_eval_set *s, int *n_refs_images, ac_err *err) {
    memset(s, 0, sizeof *s);
    ac_dataset ds;
    if (ac_dataset_load(refs_spec, images_dir, &ds, err)) return -1;
    if (n_refs_images) *n_refs_images = ds.n;
    /* index: id, key, key without extension */
    ac_strmap idx = {0};
    int rc = 0;
    for (int k = 0; k < ds.n && !rc; k++) {
        const ac_ds_image *im = &ds.images[k];
        if (ac_strmap_put(&idx, im->id, k) == -2 || ac_strmap_put(&idx, im->key, k) == -2) rc = -1;
        char *dot = strrchr(im->key, '.');
        if (!rc && dot) {
            char *stem = ac_strndup(im->key, (size_t)(dot - im->key));
            if (!stem || ac_strmap_put(&idx, stem, k) == -2) rc = -1;
            free(stem);
        }
    }
    if (rc) rc = ac_errf(err, "out of memory");
    ac_strmap seen = {0}; /* image id -> the file it came from */
    for (int f = 0; f < n_paths && !rc; f++) {
        const char *results_path = paths[f];
        cJSON *res = parse_results(results_path, err);
        if (!res) rc = -1;
        if (!rc && !cJSON_IsArray(res))
            rc = ac_errf(err, "%s: expected a JSON list of {\"image_id\": ..., \"caption\": \"...\"}", results_path);
        /* one empty file among several is an empty share of a sharded run */
        if (!rc && n_paths == 1 && cJSON_GetArraySize(res) == 0) rc = ac_errf(err, "%s: no results", results_path);
        int i = 0;
        cJSON *it;
        char idb[512];
        if (!rc) cJSON_ArrayForEach(it, res) {
            cJSON *cap = cJSON_GetObjectItemCaseSensitive(it, "caption");
            if (!cJSON_IsObject(it) || result_id(it, idb, sizeof idb)) {
                rc = ac_errf(err, "%s: results[%d] has no \"image_id\" (or \"image\")", results_path, i);
                break;
            }
            if (!cJSON_IsString(cap)) {
                rc = ac_errf(err, "%s: results[%d] (image_id %s) has no \"caption\" string", results_path, i, idb);
                break;
            }
            if (!nonblank(cap->valuestring)) {
                rc = ac_errf(err, "%s: results[%d] (image_id %s) has an empty caption", results_path, i, idb);
                break;
            }
            int k = ac_strmap_get(&idx, idb);
            if (k < 0) {
                rc = ac_errf(err, "%s: results[%d]: image_id %s is not in the references %s", results_path, i, idb, refs_spec);
                break;
            }
            int before = ac_strmap_get(&seen, ds.images[k].id);
            if (before >= 0 && before == f) {
                rc = ac_errf(err, "%s: results[%d]: image_id %s appears twice", results_path, i, idb);
                break;
            }
            if (before >= 0) {
                rc = ac_errf(err, "%s: results[%d]: image_id %s is also in %s (overlapping shares?)", results_path, i, idb,
                             paths[before]);
                break;
            }
            if (ac_strmap_put(&seen, ds.images[k].id, f) == -2) { rc = ac_errf(err, "out of memory"); break; }
            const ac_ds_image *im = &ds.images[k];
            if (im->n_caps == 0) {
                rc = ac_errf(err, "%s: image %s has no reference captions", refs_spec, im->id);
                break;
            }
            if (ac_eval_set_add(s, im->id, (const char *const *)im->caps, im->n_caps, cap->valuestring, 1, err)) {
                ac_err_prefix(err, "%s: results[%d]", results_path, i);
                rc = -1;
                break;
            }
            ac_eval_item *added = &s->items[s->n - 1];
            added->path = im->path && ac_is_file(im->path) ? ac_strdup(im->path) : result_photo(it);
            const cJSON *model = cJSON_GetObjectItemCaseSensitive(it, "model");
            if (cJSON_IsString(model) && model->valuestring[0]) added->model = ac_strdup(model->valuestring);
            i++;
        }
        cJSON_Delete(res);
    }
    if (!rc && s->n == 0) rc = ac_errf(err, "%s: no results in any of the %d files", paths[0], n_paths);
    ac_strmap_free(&seen);
    ac_strmap_free(&idx);
    ac_dataset_free(&ds);
    if (rc) ac_eval_set_free(s);
    return rc;
}

int ac_eval_load_pairs(const char *path, ac_eval_set *s, ac_err *err) {
    memset(s, 0, sizeof *s);
    cJSON *j = ac_json_parse_file(path, err);
    if (!j) return -1;
    int rc = 0, i = 0;
    if (!cJSON_IsArray(j) || cJSON_GetArraySize(j) == 0)
        rc = ac_errf(err, "%s: expected a non-empty JSON list of {\"captions\": [...], \"prediction\": \"...\"}", path);
    cJSON *it;
    char idb[512];
    if (!rc) cJSON_ArrayForEach(it, j) {
        cJSON *caps = cJSON_GetObjectItemCaseSensitive(it, "captions");
        cJSON *pred = cJSON_GetObjectItemCaseSensitive(it, "prediction");
        if (ac_json_id_text(cJSON_GetObjectItemCaseSensitive(it, "image_id"), idb, sizeof idb) &&
            ac_json_id_text(cJSON_GetObjectItemCaseSensitive(it, "image_name"), idb, sizeof idb))
            snprintf(idb, sizeof idb, "%d", i);
        if (!cJSON_IsArray(caps) || cJSON_GetArraySize(caps) == 0) {
            rc = ac_errf(err, "%s: [%d] needs a non-empty \"captions\" list", path, i);
            break;
        }
        if (!cJSON_IsString(pred) || !nonblank(pred->valuestring)) {
            rc = ac_errf(err, "%s: [%d] needs a non-empty \"prediction\" string", path, i);
            break;
        }
        int n = cJSON_GetArraySize(caps), k = 0;
        const char **refs = ac_malloc((size_t)n * sizeof *refs);
        if (!refs) { rc = ac_errf(err, "out of memory"); break; }
        cJSON *c;
        cJSON_ArrayForEach(c, caps) {
            if (!cJSON_IsString(c) || !nonblank(c->valuestring)) {
                rc = ac_errf(err, "%s: [%d].captions[%d] is not a non-empty string", path, i, k);
                break;
            }
            refs[k++] = c->valuestring;
        }
        if (!rc && ac_eval_set_add(s, idb, refs, n, pred->valuestring, 1, err)) {
            ac_err_prefix(err, "%s: [%d]", path, i);
            rc = -1;
        }
        free(refs);
        if (rc) break;
        i++;
    }
    cJSON_Delete(j);
    if (rc) ac_eval_set_free(s);
    return rc;
}

/* Rounds to 6 decimals through text so JSON shows clean numbers. */
static cJSON *num(double x) {
    if (isnan(x)) return cJSON_CreateNull();
    char b[64];
    snprintf(b, sizeof b, "%.6f", x);
    return cJSON_CreateNumber(strtod(b, NULL));
}

char *ac_scores_to_json(const ac_scores *sc) { return ac_scores_to_json_flags(sc, 0); }

char *ac_scores_to_json_flags(const ac_scores *sc, int flags) {
    cJSON *o = cJSON_CreateObject();
    if (!o) return NULL;
    static const char *const bn[4] = {"BLEU-1", "BLEU-2", "BLEU-3", "BLEU-4"};
    for (int k = 0; k < 4; k++) cJSON_AddItemToObject(o, bn[k], num(sc->bleu[k]));
    cJSON_AddItemToObject(o, "METEOR", num(sc->meteor));
    cJSON_AddItemToObject(o, "ROUGE-L", num(sc->rouge_l));
    cJSON_AddItemToObject(o, "CIDEr-D", num(sc->cider_d));
    cJSON *c = cJSON_CreateObject();
    cJSON_AddNumberToObject(c, "testlen", (double)sc->counts.testlen);
    cJSON_AddNumberToObject(c, "reflen", (double)sc->counts.reflen);
    double g[4], r[4];
    for (int k = 0; k < 4; k++) g[k] = (double)sc->counts.guess[k], r[k] = (double)sc->counts.correct[k];
    cJSON_AddItemToObject(c, "guess", cJSON_CreateDoubleArray(g, 4));
    cJSON_AddItemToObject(c, "correct", cJSON_CreateDoubleArray(r, 4));
    cJSON_AddItemToObject(o, "bleu_counts", c);
    cJSON_AddNumberToObject(o, "images", sc->n);
    if (sc->objects.cand) cJSON_AddItemToObject(o, "objects", ac_object_scores_json(&sc->objects, flags & AC_SCORES_JSON_PER_CATEGORY));
    char *out = cJSON_Print(o);
    cJSON_Delete(o);
    return out;
}

static void csv_field(ac_atomic_file *af, const char *s, ac_err *err) {
    ac_atomic_write(af, "\"", 1, err);
    for (const char *p = s; *p; p++) {
        if (*p == '"') ac_atomic_write(af, "\"", 1, err);
        ac_atomic_write(af, p, 1, err);
    }
    ac_atomic_write(af, "\"", 1, err);
}

/* ",objects,truth,hallucinated,missed" of photo i: category names joined by "; ". */
static void object_fields(ac_atomic_file *af, const ac_object_scores *ob, int i, ac_err *err) {
    uint8_t lists[4][AC_N_OBJECTS] = {{0}};
    if (ob->cand) ac_object_scores_image(ob, i, lists[0], lists[1], lists[2], lists[3]);
    for (int f = 0; f < 4; f++) {
        char names[2048];
        ac_objects_join(lists[f], "; ", names, sizeof names);
        ac_atomic_write(af, ",", 1, err);
        csv_field(af, names, err);
    }
}

int ac_scores_write_per_image(const char *path, const ac_eval_set *s, const ac_scores *sc, ac_err *err) {
    size_t pl = strlen(path);
    int csv = pl >= 4 && !strcmp(path + pl - 4, ".csv");
    if (csv) {
        ac_atomic_file af;
        if (ac_atomic_open(&af, path, err)) return -1;
        const char *hdr = "image_id,BLEU-4,METEOR,ROUGE-L,CIDEr-D,candidate,objects,truth,hallucinated,missed\n";
        ac_atomic_write(&af, hdr, strlen(hdr), err);
        for (int i = 0; i < s->n; i++) {
            char b[256];
            csv_field(&af, s->items[i].id ? s->items[i].id : "", err);
            double m = sc->img_meteor ? sc->img_meteor[i] : NAN;
            int n = snprintf(b, sizeof b, ",%.6f,", sc->img_bleu4[i]);
            if (!isnan(m)) n += snprintf(b + n, sizeof b - (size_t)n, "%.6f", m);
            snprintf(b + n, sizeof b - (size_t)n, ",%.6f,%.6f,", sc->img_rouge_l[i], sc->img_cider_d[i]);
            ac_atomic_write(&af, b, strlen(b), err);
            csv_field(&af, s->items[i].cand, err);
            object_fields(&af, &sc->objects, i, err);
            ac_atomic_write(&af, "\n", 1, err);
        }
        return ac_atomic_commit(&af, err);
    }
    cJSON *a = cJSON_CreateArray();
    if (!a) return ac_errf(err, "%s: out of memory", path);
    for (int i = 0; i < s->n; i++) {
        const ac_eval_item *it = &s->items[i];
        cJSON *o = cJSON_CreateObject();
        cJSON_AddItemToArray(a, o);
        cJSON_AddStringToObject(o, "image_id", it->id ? it->id : "");
        cJSON_AddStringToObject(o, "candidate", it->cand);
        cJSON_AddItemToObject(o, "references", cJSON_CreateStringArray((const char *const *)it->refs, it->n_refs));
        cJSON_AddItemToObject(o, "BLEU-4", num(sc->img_bleu4[i]));
        cJSON_AddItemToObject(o, "METEOR", num(sc->img_meteor ? sc->img_meteor[i] : NAN));
        cJSON_AddItemToObject(o, "ROUGE-L", num(sc->img_rouge_l[i]));
        cJSON_AddItemToObject(o, "CIDEr-D", num(sc->img_cider_d[i]));
        if (sc->objects.cand) cJSON_AddItemToObject(o, "objects", ac_object_image_json(&sc->objects, i));
    }
    char *txt = cJSON_Print(a);
    cJSON_Delete(a);
    if (!txt) return ac_errf(err, "%s: out of memory", path);
    int rc = ac_write_file_atomic(path, txt, strlen(txt), err);
    free(txt);
    return rc;
}

int ac_eval_write_results(const char *path, const ac_eval_set *s, const char *model, ac_err *err) {
    const char *slash = model ? strrchr(model, '/') : NULL, *model_name = slash ? slash + 1 : model;
    ac_atomic_file af;
    if (ac_atomic_open(&af, path, err)) return -1;
    ac_atomic_write(&af, "[\n", 2, err);
    for (int i = 0; i < s->n; i++) {
        const char *id = s->items[i].id ? s->items[i].id : "";
        /* a COCO id stays a number, as COCO's own results files have it (exact in a double up to 15 digits) */
        const int numeric = *id && strspn(id, "0123456789") == strlen(id) && strlen(id) <= 15;
        cJSON *o = cJSON_CreateObject();
        if (numeric) cJSON_AddNumberToObject(o, "image_id", strtod(id, NULL));
        else cJSON_AddStringToObject(o, "image_id", id);
        cJSON_AddStringToObject(o, "caption", s->items[i].cand);
        if (model_name) cJSON_AddStringToObject(o, "model", model_name);
        char *line = cJSON_PrintUnformatted(o);
        cJSON_Delete(o);
        if (!line) {
            ac_atomic_abort(&af);
            return ac_errf(err, "%s: out of memory", path);
        }
        ac_atomic_write(&af, "  ", 2, err);
        ac_atomic_write(&af, line, strlen(line), err);
        ac_atomic_write(&af, i + 1 < s->n ? ",\n" : "\n", i + 1 < s->n ? 2 : 1, err);
        free(line);
    }
    ac_atomic_write(&af, "]\n", 2, err);
    return ac_atomic_commit(&af, err);
}
