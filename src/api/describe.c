/* describe.c: the core API's description of a file (attncap.h, ac_describe_file), as `attncap info`
 * prints it: a TFLite model's inputs, outputs, operators and tensors (to choose a layer), or a
 * safetensors file's metadata and tensors (our models, checkpoints and feature shards). */
#include "attncap/attncap.h"

#include <cjson/cJSON.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "attncap/safetensors.h"
#include "attncap/tflite.h"
#include "text_internal.h"

static void print_shape(ac_text *o, const ac_tfl_tensor *t) {
    ac_text_add(o, "[");
    for (int d = 0; d < t->ndim; d++) ac_text_add(o, "%s%d", d ? "," : "", t->shape[d]);
    ac_text_add(o, "]");
}

static void print_tensor(ac_text *o, const ac_tfl_model *m, int i) {
    const ac_tfl_tensor *t = &m->tensors[i];
    ac_text_add(o, "  %4d %-8s ", i, ac_tfl_typename(t->type));
    print_shape(o, t);
    ac_text_add(o, " %s", t->name);
    if (t->n_quant == 1) ac_text_add(o, "  q: scale=%g zero_point=%lld", t->scale[0], (long long)t->zero_point[0]);
    else if (t->n_quant > 1) ac_text_add(o, "  q: per-channel (%d scales, dim %d)", t->n_quant, t->quant_dim);
    if (t->data) ac_text_add(o, "  const");
    ac_text_add(o, "\n");
}

static int is_safetensors(const char *path) {
    unsigned char head[9];
    FILE *f = fopen(path, "rb");
    if (!f) return 0; /* the TFLite reader names the problem */
    const int ok = fread(head, 1, sizeof head, f) == sizeof head && head[8] == '{';
    fclose(f);
    return ok;
}

static const char *dtype_name(ac_st_dtype t) {
    switch (t) {
    case AC_ST_F32: return "F32";
    case AC_ST_F16: return "F16";
    case AC_ST_I32: return "I32";
    case AC_ST_U8: return "U8";
    case AC_ST_I64: return "I64";
    }
    return "?";
}

/* The element count of a JSON array (a vocabulary, a shard's photo names), or -1 if v is not one. */
static int json_array_length(const char *v) {
    cJSON *j = cJSON_Parse(v);
    int n = cJSON_IsArray(j) ? cJSON_GetArraySize(j) : -1;
    cJSON_Delete(j);
    return n;
}

static int describe_safetensors(ac_text *o, const char *path, int meta, int tensors, ac_err *err) {
    ac_st_file f;
    if (ac_st_read_header(path, &f, err) < 0) return -1;
    size_t bytes = 0;
    for (int i = 0; i < f.n_tensors; i++) bytes += f.tensors[i].nbytes;
    ac_text_add(o, "%s: safetensors, %d tensors (%zu bytes of data), %d metadata keys\n", path, f.n_tensors, bytes, f.n_meta);
    if (meta && f.n_meta) {
        ac_text_add(o, "metadata:\n");
        for (int i = 0; i < f.n_meta; i++) {
            const char *k = f.meta_keys[i], *v = f.meta_values[i];
            const int n = v[0] == '[' && (!strcmp(k, "vocab") || strlen(v) > 400) ? json_array_length(v) : -1;
            if (n >= 0) ac_text_add(o, "  %-10s %d entries\n", k, n);
            else if (strlen(v) > 400) ac_text_add(o, "  %-10s %.400s... (%zu bytes)\n", k, v, strlen(v));
            else ac_text_add(o, "  %-10s %s\n", k, v);
        }
    }
    if (tensors) {
        ac_text_add(o, "tensors:\n");
        for (int i = 0; i < f.n_tensors; i++) {
            const ac_st_tensor *t = &f.tensors[i];
            ac_text_add(o, "  %4d %-4s [", i, dtype_name(t->dtype));
            for (int d = 0; d < t->ndim; d++) ac_text_add(o, "%s%lld", d ? "," : "", (long long)t->shape[d]);
            ac_text_add(o, "] %s\n", t->name);
        }
    }
    ac_st_free(&f);
    return 0;
}

/* --vocab: the words of a model file, with their counts by source if recorded. */
static int describe_vocab(ac_text *o, const char *path, ac_err *err) {
    ac_st_file f;
    if (ac_st_read_header(path, &f, err)) return -1;
    const char *v = ac_st_meta(&f, "vocab"), *c = ac_st_meta(&f, "vocab_counts");
    cJSON *words = v ? cJSON_Parse(v) : NULL, *counts = c ? cJSON_Parse(c) : NULL;
    const cJSON *paired = cJSON_GetObjectItemCaseSensitive(counts, "paired"),
                *text = cJSON_GetObjectItemCaseSensitive(counts, "text");
    int rc = 0;
    if (!cJSON_IsArray(words)) rc = ac_errf(err, "%s: no vocabulary (not an attncap model?)", path);
    const int n = rc ? 0 : cJSON_GetArraySize(words);
    const int have = cJSON_IsArray(paired) && cJSON_IsArray(text) && cJSON_GetArraySize(paired) == n &&
                     cJSON_GetArraySize(text) == n;
    for (int i = 0; i < n; i++) {
        const cJSON *w = cJSON_GetArrayItem(words, i);
        if (!cJSON_IsString(w)) continue;
        if (have)
            ac_text_add(o, "%s\t%d\t%d\n", w->valuestring, (int)cJSON_GetArrayItem(paired, i)->valuedouble,
                   (int)cJSON_GetArrayItem(text, i)->valuedouble);
        else ac_text_add(o, "%s\t\t\n", w->valuestring);
    }
    cJSON_Delete(words), cJSON_Delete(counts);
    ac_st_free(&f);
    return rc;
}

/* A TFLite model. */
static int describe_tflite(ac_text *out, const char *path, int ops, int tensors, ac_err *err) {
    ac_tfl_model *m;
    if (ac_tfl_load(path, &m, err) < 0) return -1;
    ac_text_add(out, "%s: %d operators, %d tensors\n", path, m->n_ops, m->n_tensors);
    ac_text_add(out, "inputs:\n");
    for (int i = 0; i < m->n_inputs; i++) print_tensor(out, m, m->inputs[i]);
    ac_text_add(out, "outputs:\n");
    for (int i = 0; i < m->n_outputs; i++) print_tensor(out, m, m->outputs[i]);
    static const char *act[] = {"", " relu", " relu_n1_to_1", " relu6", " tanh", " sign_bit"};
    if (ops) {
        ac_text_add(out, "operators:\n");
        for (int k = 0; k < m->n_ops; k++) {
            const ac_tfl_op *op = &m->ops[k];
            ac_text_add(out, "  %4d %-18s", k, op->opname);
            if (op->opcode == 3 || op->opcode == 4 || op->opcode == 1 || op->opcode == 17) {
                ac_text_add(out, " %s stride %dx%d", op->padding ? "VALID" : "SAME", op->stride_h, op->stride_w);
                if (op->opcode == 1 || op->opcode == 17) ac_text_add(out, " filter %dx%d", op->filter_h, op->filter_w);
                if (op->dilation_h != 1 || op->dilation_w != 1) ac_text_add(out, " dilation %dx%d", op->dilation_h, op->dilation_w);
                if (op->opcode == 4 && op->depth_multiplier != 1) ac_text_add(out, " multiplier %d", op->depth_multiplier);
            }
            if (op->activation > 0 && op->activation < 6) ac_text_add(out, "%s", act[op->activation]);
            ac_text_add(out, "  ->");
            for (int j = 0; j < op->n_out; j++) {
                int o = op->outputs[j];
                if (o < 0) continue;
                ac_text_add(out, " ");
                print_shape(out, &m->tensors[o]);
                ac_text_add(out, " %s", m->tensors[o].name);
            }
            ac_text_add(out, "\n");
        }
    }
    if (tensors) {
        ac_text_add(out, "tensors:\n");
        for (int i = 0; i < m->n_tensors; i++) print_tensor(out, m, i);
    }
    ac_tfl_free(m);
    return 0;
}

int ac_describe_file(const char *path, unsigned flags, char **text, ac_err *err) {
    *text = NULL;
    if (!path) return ac_errc(err, AC_ERR_OPTIONS, "describe: no file given");
    ac_text t = ac_text_new();
    const int ops = !(flags & AC_DESCRIBE_NO_OPS), tensors = !(flags & AC_DESCRIBE_NO_TENSORS);
    int rc = flags & AC_DESCRIBE_VOCAB ? describe_vocab(&t, path, err)
             : is_safetensors(path)    ? describe_safetensors(&t, path, ops, tensors, err)
                                       : describe_tflite(&t, path, ops, tensors, err);
    if (!rc && !t.s) rc = ac_errf(err, "out of memory");
    if (rc) free(t.s);
    else *text = t.s;
    return rc;
}
