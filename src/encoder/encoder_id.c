/* encoder_id.c: the encoder identity (encoder.h), the one owner of its JSON: the feature cache
 * writes it, models carry it from their features, and the captioner, eval and the cache's resume and
 * merge read and compare it only through these functions. */
#include "attncap/encoder.h"

#include <cjson/cJSON.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "locate_internal.h"

/* The text recorded for each policy (AC_RESIZE_ASPECT's: AC_ENCODER_ASPECT_TEXT); reading, anything
 * else is the antialiased default (identities written before the policy was recorded said nothing or
 * described it in words). */
#define RESIZE_ANTIALIASED_TEXT "squash, antialiased bilinear"
#define RESIZE_BILINEAR_TEXT "bilinear"
/* "precision": written only for int8 (identities written before it was recorded are float's) */
#define PRECISION_INT8_TEXT "int8"
#define PRECISION_FLOAT_TEXT "float32"

static void copy_str(char *dst, size_t cap, const cJSON *o, const char *key) {
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);
    dst[0] = 0;
    if (cJSON_IsString(v) && v->valuestring) snprintf(dst, cap, "%s", v->valuestring);
}

static int get_int(const cJSON *o, const char *key, int def) {
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);
    return cJSON_IsNumber(v) && v->valuedouble >= 0 && v->valuedouble < 1e6 ? (int)v->valuedouble : def;
}

int ac_encoder_id_parse(const char *json, const char *what, ac_encoder_id *id, ac_err *err) {
    memset(id, 0, sizeof *id);
    cJSON *o = json ? cJSON_Parse(json) : NULL;
    if (!cJSON_IsObject(o)) {
        cJSON_Delete(o);
        return ac_errf(err, "%s: the encoder identity is not a JSON object", what);
    }
    copy_str(id->file, sizeof id->file, o, "file");
    copy_str(id->sha256, sizeof id->sha256, o, "sha256");
    copy_str(id->layer, sizeof id->layer, o, "layer");
    copy_str(id->resize, sizeof id->resize, o, "resize");
    id->policy = !strcmp(id->resize, RESIZE_BILINEAR_TEXT)    ? AC_RESIZE_BILINEAR
                 : !strcmp(id->resize, AC_ENCODER_ASPECT_TEXT) ? AC_RESIZE_ASPECT
                                                               : AC_RESIZE_ANTIALIASED;
    id->size = get_int(o, "size", 0);
    id->grid_h = get_int(o, "grid_h", 0), id->grid_w = get_int(o, "grid_w", 0), id->dim = get_int(o, "dim", 0);
    const cJSON *m = cJSON_GetObjectItemCaseSensitive(o, "norm_mean"), *s = cJSON_GetObjectItemCaseSensitive(o, "norm_scale");
    if (cJSON_IsNumber(m) && cJSON_IsNumber(s)) id->has_norm = 1, id->norm_mean = (float)m->valuedouble, id->norm_scale = (float)s->valuedouble;
    char precision[16];
    copy_str(precision, sizeof precision, o, "precision");
    const int known = cJSON_IsString(cJSON_GetObjectItemCaseSensitive(o, "precision")) || !cJSON_HasObjectItem(o, "precision");
    cJSON_Delete(o);
    id->int8 = !strcmp(precision, PRECISION_INT8_TEXT);
    if (!known || (precision[0] && !id->int8 && strcmp(precision, PRECISION_FLOAT_TEXT)))
        return ac_errf(err, "%s: encoder precision '%s' is neither \"" PRECISION_FLOAT_TEXT "\" nor \"" PRECISION_INT8_TEXT "\"",
                       what, precision);
    /* the file name is used to build paths: a bare name only */
    if (strchr(id->file, '/') || !strcmp(id->file, "..") || !strcmp(id->file, "."))
        return ac_errf(err, "%s: encoder file name '%s' must be a bare file name", what, id->file);
    if (id->size < 0 || id->size > 4096) return ac_errf(err, "%s: encoder input size %d out of range", what, id->size);
    return 0;
}

char *ac_encoder_id_json(const ac_encoder *enc) {
    cJSON *o = cJSON_CreateObject();
    if (!o) return NULL;
    const char *base = strrchr(enc->path, '/');
    cJSON_AddStringToObject(o, "file", base ? base + 1 : enc->path);
    cJSON_AddStringToObject(o, "sha256", enc->sha256);
    cJSON_AddStringToObject(o, "layer", enc->layer);
    cJSON_AddNumberToObject(o, "size", enc->size);
    cJSON_AddNumberToObject(o, "grid_h", enc->grid_h);
    cJSON_AddNumberToObject(o, "grid_w", enc->grid_w);
    cJSON_AddNumberToObject(o, "dim", enc->dim);
    cJSON_AddNumberToObject(o, "norm_mean", enc->norm.mean);
    cJSON_AddNumberToObject(o, "norm_scale", enc->norm.scale);
    cJSON_AddStringToObject(o, "resize", enc->resize == AC_RESIZE_BILINEAR ? RESIZE_BILINEAR_TEXT
                                         : enc->resize == AC_RESIZE_ASPECT ? AC_ENCODER_ASPECT_TEXT
                                                                           : RESIZE_ANTIALIASED_TEXT);
    if (enc->cnn && ac_encoder_precision(enc) == AC_PRECISION_INT8) cJSON_AddStringToObject(o, "precision", PRECISION_INT8_TEXT);
    char *s = cJSON_PrintUnformatted(o);
    cJSON_Delete(o);
    return s;
}

int ac_encoder_id_same(const ac_encoder_id *a, const ac_encoder_id *b) {
    const int same_file = a->sha256[0] && b->sha256[0] ? !strcmp(a->sha256, b->sha256) : !strcmp(a->file, b->file);
    return same_file && !strcmp(a->layer, b->layer) && a->size == b->size && a->grid_h == b->grid_h &&
           a->grid_w == b->grid_w && a->dim == b->dim &&
           (a->policy == AC_RESIZE_ASPECT) == (b->policy == AC_RESIZE_ASPECT) && a->int8 == b->int8;
}

ac_precision ac_encoder_id_precision(const ac_encoder_id *id, ac_precision asked) {
    return asked == AC_PRECISION_AUTO && id->int8 ? AC_PRECISION_INT8 : asked;
}

void ac_encoder_id_describe(const ac_encoder_id *id, char *buf, size_t n) {
    snprintf(buf, n, "sha256 %.12s, layer %s, size %d%s%s", id->sha256[0] ? id->sha256 : "?", id->layer[0] ? id->layer : "?",
             id->size, id->policy == AC_RESIZE_ASPECT ? ", aspect kept" : "", id->int8 ? ", int8" : "");
}

int ac_find_encoder(const char *flag, const char *model_path, const ac_encoder_id *id, char **path, ac_err *err) {
    return ac_locate_encoder(flag, model_path, id->file, id->sha256, 1, path, err);
}
