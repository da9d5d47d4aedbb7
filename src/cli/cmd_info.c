/* attncap info: lists a TFLite model's inputs, outputs, ops and tensors (to choose --layer), or a
 * safetensors file's metadata and tensors (our decoder models, checkpoints and feature shards). */
#include <cjson/cJSON.h>
#include <stdio.h>
#include <string.h>

#include "attncap/safetensors.h"
#include "attncap/tflite.h"
#include "commands.h"
#include "messages.h"
#include "options.h"

static void usage(FILE *f) {
    fprintf(f, "usage: attncap info [--ops|--tensors] MODEL.tflite|FILE.safetensors\n\n"
               "For a TFLite model: its inputs and outputs, its operators (with strides, padding and fused\n"
               "activation) and its tensors (shape, type, quantization). A tensor name can be passed to\n"
               "`attncap features --layer NAME`.\n"
               "For a safetensors file (an attncap model, checkpoint or feature shard): its metadata (the\n"
               "model's configuration, encoder, training record and decoding setting; the vocabulary's\n"
               "size) and its tensors. Only the header is read.\n\n"
               "  --ops       only the operators (TFLite) or the metadata (safetensors)\n"
               "  --tensors   only the tensors\n"
               "  --vocab     a model's vocabulary, one word per line in id order, with its counts in the\n"
               "              captioned photos and in the captions without photos it was trained on\n"
               "              (WORD<TAB>PAIRED<TAB>TEXT; counts empty if the model does not record them)\n");
}

static void print_shape(const ac_tfl_tensor *t) {
    printf("[");
    for (int d = 0; d < t->ndim; d++) printf("%s%d", d ? "," : "", t->shape[d]);
    printf("]");
}

static void print_tensor(const ac_tfl_model *m, int i) {
    const ac_tfl_tensor *t = &m->tensors[i];
    printf("  %4d %-8s ", i, ac_tfl_typename(t->type));
    print_shape(t);
    printf(" %s", t->name);
    if (t->n_quant == 1) printf("  q: scale=%g zero_point=%lld", t->scale[0], (long long)t->zero_point[0]);
    else if (t->n_quant > 1) printf("  q: per-channel (%d scales, dim %d)", t->n_quant, t->quant_dim);
    if (t->data) printf("  const");
    printf("\n");
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

static int info_safetensors(const char *path, int meta, int tensors) {
    ac_st_file f;
    ac_err err;
    if (ac_st_read_header(path, &f, &err) < 0) {
        fprintf(stderr, "attncap info: %s%s\n", err.msg, cli_hint(&err));
        return 1;
    }
    size_t bytes = 0;
    for (int i = 0; i < f.n_tensors; i++) bytes += f.tensors[i].nbytes;
    printf("%s: safetensors, %d tensors (%zu bytes of data), %d metadata keys\n", path, f.n_tensors, bytes, f.n_meta);
    if (meta && f.n_meta) {
        printf("metadata:\n");
        for (int i = 0; i < f.n_meta; i++) {
            const char *k = f.meta_keys[i], *v = f.meta_values[i];
            const int n = v[0] == '[' && (!strcmp(k, "vocab") || strlen(v) > 400) ? json_array_length(v) : -1;
            if (n >= 0) printf("  %-10s %d entries\n", k, n);
            else if (strlen(v) > 400) printf("  %-10s %.400s... (%zu bytes)\n", k, v, strlen(v));
            else printf("  %-10s %s\n", k, v);
        }
    }
    if (tensors) {
        printf("tensors:\n");
        for (int i = 0; i < f.n_tensors; i++) {
            const ac_st_tensor *t = &f.tensors[i];
            printf("  %4d %-4s [", i, dtype_name(t->dtype));
            for (int d = 0; d < t->ndim; d++) printf("%s%lld", d ? "," : "", (long long)t->shape[d]);
            printf("] %s\n", t->name);
        }
    }
    ac_st_free(&f);
    return 0;
}

/* --vocab: the words of a model file, with their counts by source if recorded. */
static int info_vocab(const char *path) {
    ac_st_file f;
    ac_err err;
    if (ac_st_read_header(path, &f, &err)) {
        fprintf(stderr, "attncap info: %s\n", err.msg);
        return 1;
    }
    const char *v = ac_st_meta(&f, "vocab"), *c = ac_st_meta(&f, "vocab_counts");
    cJSON *words = v ? cJSON_Parse(v) : NULL, *counts = c ? cJSON_Parse(c) : NULL;
    const cJSON *paired = cJSON_GetObjectItemCaseSensitive(counts, "paired"),
                *text = cJSON_GetObjectItemCaseSensitive(counts, "text");
    int rc = 0;
    if (!cJSON_IsArray(words)) {
        fprintf(stderr, "attncap info: %s: no vocabulary (not an attncap model?)\n", path);
        rc = 1;
    }
    const int n = rc ? 0 : cJSON_GetArraySize(words);
    const int have = cJSON_IsArray(paired) && cJSON_IsArray(text) && cJSON_GetArraySize(paired) == n &&
                     cJSON_GetArraySize(text) == n;
    for (int i = 0; i < n; i++) {
        const cJSON *w = cJSON_GetArrayItem(words, i);
        if (!cJSON_IsString(w)) continue;
        if (have)
            printf("%s\t%d\t%d\n", w->valuestring, (int)cJSON_GetArrayItem(paired, i)->valuedouble,
                   (int)cJSON_GetArrayItem(text, i)->valuedouble);
        else printf("%s\t\t\n", w->valuestring);
    }
    cJSON_Delete(words), cJSON_Delete(counts);
    ac_st_free(&f);
    return rc;
}

int cmd_info(int argc, char **argv) {
    const char *path = NULL;
    int ops = 1, tensors = 1, vocab = 0;
    const cli_opt opts[] = {
        OPT_FLAG("--vocab", NULL, &vocab),
        OPT_UNSET("--ops", &tensors), /* only the operators */
        OPT_UNSET("--tensors", &ops), /* only the tensors */
        OPT_END,
    };
    const int n_args = cli_parse("info", argc, argv, opts, 1, usage);
    if (n_args < 0) return n_args == CLI_HELP ? 0 : 2;
    if (n_args == 1) path = argv[1];
    if (!path) {
        fprintf(stderr, "attncap info: missing MODEL.tflite or FILE.safetensors (try --help)\n");
        return 2;
    }
    if (vocab) return info_vocab(path);
    if (is_safetensors(path)) return info_safetensors(path, ops, tensors);
    ac_err err;
    ac_tfl_model *m;
    if (ac_tfl_load(path, &m, &err) < 0) {
        fprintf(stderr, "attncap info: %s%s\n", err.msg, cli_hint(&err));
        return 1;
    }
    printf("%s: %d operators, %d tensors\n", path, m->n_ops, m->n_tensors);
    printf("inputs:\n");
    for (int i = 0; i < m->n_inputs; i++) print_tensor(m, m->inputs[i]);
    printf("outputs:\n");
    for (int i = 0; i < m->n_outputs; i++) print_tensor(m, m->outputs[i]);
    static const char *act[] = {"", " relu", " relu_n1_to_1", " relu6", " tanh", " sign_bit"};
    if (ops) {
        printf("operators:\n");
        for (int k = 0; k < m->n_ops; k++) {
            const ac_tfl_op *op = &m->ops[k];
            printf("  %4d %-18s", k, op->opname);
            if (op->opcode == 3 || op->opcode == 4 || op->opcode == 1 || op->opcode == 17) {
                printf(" %s stride %dx%d", op->padding ? "VALID" : "SAME", op->stride_h, op->stride_w);
                if (op->opcode == 1 || op->opcode == 17) printf(" filter %dx%d", op->filter_h, op->filter_w);
                if (op->dilation_h != 1 || op->dilation_w != 1) printf(" dilation %dx%d", op->dilation_h, op->dilation_w);
                if (op->opcode == 4 && op->depth_multiplier != 1) printf(" multiplier %d", op->depth_multiplier);
            }
            if (op->activation > 0 && op->activation < 6) printf("%s", act[op->activation]);
            printf("  ->");
            for (int j = 0; j < op->n_out; j++) {
                int o = op->outputs[j];
                if (o < 0) continue;
                printf(" ");
                print_shape(&m->tensors[o]);
                printf(" %s", m->tensors[o].name);
            }
            printf("\n");
        }
    }
    if (tensors) {
        printf("tensors:\n");
        for (int i = 0; i < m->n_tensors; i++) print_tensor(m, i);
    }
    ac_tfl_free(m);
    return 0;
}
