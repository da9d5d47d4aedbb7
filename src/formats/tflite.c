/* tflite.c: reads a TFLite flatbuffer, written by hand from the public schema (schema.fbs).
 *
 * A flatbuffer is a tree of tables reached through 32-bit relative offsets. A table starts with a
 * signed offset back to its vtable; the vtable lists, per field, the field's byte offset inside the
 * table (0 = absent, use the default). Vectors are a u32 length followed by the elements; vectors
 * of tables hold u32 offsets relative to each element. Nothing here trusts the file: every read
 * goes through fb_* helpers that check the range against the buffer size, so a truncated or hostile
 * file ends in an error message, never an out-of-bounds read.
 *
 * Field numbers used (schema.fbs order; vtable slot = 4 + 2 * field):
 *   Model:       1 operator_codes, 2 subgraphs, 4 buffers
 *   OperatorCode:0 deprecated_builtin_code (byte), 1 custom_code, 3 builtin_code (int)
 *   SubGraph:    0 tensors, 1 inputs, 2 outputs, 3 operators, 4 name
 *   Tensor:      0 shape, 1 type (byte), 2 buffer (uint), 3 name, 4 quantization
 *   Quantization:2 scale [float], 3 zero_point [long], 6 quantized_dimension (int)
 *   Operator:    0 opcode_index, 1 inputs, 2 outputs, 3 builtin_options_type, 4 builtin_options
 *   Buffer:      0 data [ubyte], 1 offset (ulong), 2 size (ulong) (data outside the flatbuffer)
 */
#include "attncap/tflite.h"
#include "alloc_internal.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

typedef struct fb {
    const uint8_t *b;
    size_t n;
    const char *name; /* file name for messages */
    ac_err *err;
    int failed;
} fb;

typedef struct fb_table {
    size_t pos;    /* table start */
    size_t vt;     /* vtable start */
    unsigned vt_size, tbl_size;
} fb_table;

typedef struct fb_vec {
    size_t pos; /* first element */
    uint32_t len;
} fb_vec;

static int fb_fail(fb *f, const char *what, size_t at) {
    if (!f->failed) ac_errf(f->err, "%s: corrupt TFLite file: %s (at byte %zu of %zu)", f->name, what, at, f->n);
    f->failed = 1;
    return -1;
}

static int fb_has(const fb *f, size_t pos, size_t len) { return pos <= f->n && len <= f->n - pos; }

static uint32_t rd32(const uint8_t *p) { return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24; }
static uint16_t rd16(const uint8_t *p) { return (uint16_t)(p[0] | p[1] << 8); }
static uint64_t rd64(const uint8_t *p) { return (uint64_t)rd32(p) | (uint64_t)rd32(p + 4) << 32; }

static int fb_table_at(fb *f, size_t pos, fb_table *t) {
    if (!fb_has(f, pos, 4)) return fb_fail(f, "table offset out of range", pos);
    int64_t vt = (int64_t)pos - (int32_t)rd32(f->b + pos);
    if (vt < 0 || !fb_has(f, (size_t)vt, 4)) return fb_fail(f, "vtable offset out of range", pos);
    t->pos = pos;
    t->vt = (size_t)vt;
    t->vt_size = rd16(f->b + vt);
    t->tbl_size = rd16(f->b + vt + 2);
    if (t->vt_size < 4 || (t->vt_size & 1) || !fb_has(f, t->vt, t->vt_size)) return fb_fail(f, "bad vtable", t->vt);
    if (t->tbl_size < 4 || !fb_has(f, pos, t->tbl_size)) return fb_fail(f, "table runs past the end", pos);
    return 0;
}

/* Position of field `i` holding `size` bytes, or 0 when absent (0 is never a valid field position). */
static size_t fb_field(fb *f, const fb_table *t, int i, unsigned size) {
    unsigned slot = 4 + 2 * (unsigned)i;
    if (slot + 2 > t->vt_size) return 0;
    unsigned off = rd16(f->b + t->vt + slot);
    if (!off) return 0;
    if (off + size > t->tbl_size) {
        fb_fail(f, "field outside its table", t->pos);
        return 0;
    }
    return t->pos + off;
}

static int64_t fb_int(fb *f, const fb_table *t, int i, unsigned size, int is_signed, int64_t def) {
    size_t p = fb_field(f, t, i, size);
    if (!p) return def;
    switch (size) {
    case 1: return is_signed ? (int64_t)(int8_t)f->b[p] : (int64_t)f->b[p];
    case 2: return is_signed ? (int64_t)(int16_t)rd16(f->b + p) : (int64_t)rd16(f->b + p);
    case 4: return is_signed ? (int64_t)(int32_t)rd32(f->b + p) : (int64_t)rd32(f->b + p);
    default: return (int64_t)rd64(f->b + p);
    }
}

static float fb_float(fb *f, const fb_table *t, int i, float def) {
    size_t p = fb_field(f, t, i, 4);
    if (!p) return def;
    uint32_t u = rd32(f->b + p);
    float x;
    memcpy(&x, &u, 4);
    return x;
}

/* Follows the offset field `i` to its target; returns 0 if absent (not an error), -1 on error. */
static int fb_ref(fb *f, const fb_table *t, int i, size_t *target) {
    *target = 0;
    size_t p = fb_field(f, t, i, 4);
    if (f->failed) return -1;
    if (!p) return 0;
    uint64_t tgt = (uint64_t)p + rd32(f->b + p);
    if (tgt >= f->n) return fb_fail(f, "offset out of range", p);
    *target = (size_t)tgt;
    return 1;
}

/* Vector field with elements of `elsize` bytes. Absent = empty vector. */
static int fb_vector(fb *f, const fb_table *t, int i, unsigned elsize, fb_vec *v) {
    v->pos = 0;
    v->len = 0;
    size_t tgt;
    int r = fb_ref(f, t, i, &tgt);
    if (r <= 0) return r;
    if (!fb_has(f, tgt, 4)) return fb_fail(f, "vector header out of range", tgt);
    v->len = rd32(f->b + tgt);
    v->pos = tgt + 4;
    if (!fb_has(f, v->pos, (uint64_t)v->len * elsize)) return fb_fail(f, "vector runs past the end", tgt);
    return 1;
}

/* Element k of a vector of tables. */
static int fb_vec_table(fb *f, const fb_vec *v, uint32_t k, fb_table *t) {
    size_t p = v->pos + (size_t)k * 4;
    uint64_t tgt = (uint64_t)p + rd32(f->b + p);
    if (tgt >= f->n) return fb_fail(f, "table offset out of range", p);
    return fb_table_at(f, (size_t)tgt, t);
}

/* String field as a malloc'd NUL-terminated copy ("" when absent); NULL on error. */
static char *fb_string(fb *f, const fb_table *t, int i) {
    fb_vec v;
    if (fb_vector(f, t, i, 1, &v) < 0) return NULL;
    char *s = ac_malloc((size_t)v.len + 1);
    if (!s) {
        fb_fail(f, "out of memory", 0);
        return NULL;
    }
    if (v.len) memcpy(s, f->b + v.pos, v.len);
    s[v.len] = 0;
    return s;
}

static const char *const op_names[] = {
    "ADD", "AVERAGE_POOL_2D", "CONCATENATION", "CONV_2D", "DEPTHWISE_CONV_2D", "DEPTH_TO_SPACE", "DEQUANTIZE",
    "EMBEDDING_LOOKUP", "FLOOR", "FULLY_CONNECTED", "HASHTABLE_LOOKUP", "L2_NORMALIZATION", "L2_POOL_2D",
    "LOCAL_RESPONSE_NORMALIZATION", "LOGISTIC", "LSH_PROJECTION", "LSTM", "MAX_POOL_2D", "MUL", "RELU",
    "RELU_N1_TO_1", "RELU6", "RESHAPE", "RESIZE_BILINEAR", "RNN", "SOFTMAX", "SPACE_TO_DEPTH", "SVDF", "TANH",
    "CONCAT_EMBEDDINGS", "SKIP_GRAM", "CALL", "CUSTOM", "EMBEDDING_LOOKUP_SPARSE", "PAD",
    "UNIDIRECTIONAL_SEQUENCE_RNN", "GATHER", "BATCH_TO_SPACE_ND", "SPACE_TO_BATCH_ND", "TRANSPOSE", "MEAN", "SUB",
    "DIV", "SQUEEZE", "UNIDIRECTIONAL_SEQUENCE_LSTM", "STRIDED_SLICE", "BIDIRECTIONAL_SEQUENCE_RNN", "EXP",
    "TOPK_V2", "SPLIT", "LOG_SOFTMAX", "DELEGATE", "BIDIRECTIONAL_SEQUENCE_LSTM", "CAST", "PRELU", "MAXIMUM",
    "ARG_MAX", "MINIMUM", "LESS", "NEG", "PADV2", "GREATER", "GREATER_EQUAL", "LESS_EQUAL", "SELECT", "SLICE", "SIN",
    "TRANSPOSE_CONV", "SPARSE_TO_DENSE", "TILE", "EXPAND_DIMS", "EQUAL", "NOT_EQUAL", "LOG", "SUM", "SQRT", "RSQRT",
    "SHAPE", "POW", "ARG_MIN", "FAKE_QUANT", "REDUCE_PROD", "REDUCE_MAX", "PACK", "LOGICAL_OR", "ONE_HOT",
    "LOGICAL_AND", "LOGICAL_NOT", "UNPACK", "REDUCE_MIN", "FLOOR_DIV", "REDUCE_ANY", "SQUARE", "ZEROS_LIKE", "FILL",
    "FLOOR_MOD", "RANGE", "RESIZE_NEAREST_NEIGHBOR", "LEAKY_RELU", "SQUARED_DIFFERENCE", "MIRROR_PAD", "ABS",
    "SPLIT_V", "UNIQUE", "CEIL", "REVERSE_V2", "ADD_N", "GATHER_ND", "COS", "WHERE", "RANK", "ELU",
    "REVERSE_SEQUENCE", "MATRIX_DIAG", "QUANTIZE", "MATRIX_SET_DIAG", "ROUND", "HARD_SWISH", "IF", "WHILE",
    "NON_MAX_SUPPRESSION_V4", "NON_MAX_SUPPRESSION_V5", "SCATTER_ND", "SELECT_V2", "DENSIFY", "SEGMENT_SUM",
    "BATCH_MATMUL", "PLACEHOLDER_FOR_GREATER_OP_CODES", "CUMSUM", "CALL_ONCE", "BROADCAST_TO",
};

const char *ac_tfl_opname(int code) {
    if (code >= 0 && code < (int)(sizeof op_names / sizeof *op_names)) return op_names[code];
    return NULL;
}

const char *ac_tfl_typename(int type) {
    static const char *const names[] = {"FLOAT32", "FLOAT16", "INT32", "UINT8", "INT64", "STRING", "BOOL",
                                        "INT16", "COMPLEX64", "INT8", "FLOAT64"};
    return type >= 0 && type < (int)(sizeof names / sizeof *names) ? names[type] : "?";
}

static int type_size(int type) {
    switch (type) {
    case 0: return 4;  /* FLOAT32 */
    case 1: return 2;  /* FLOAT16 */
    case 2: return 4;  /* INT32 */
    case 3: return 1;  /* UINT8 */
    case 4: return 8;  /* INT64 */
    case 9: return 1;  /* INT8 */
    default: return 0; /* not a numeric type we dequantize */
    }
}

/* Reads an int vector of tensor indices, each -1 (absent) or in [0, n_tensors). */
static int read_indices(fb *f, const fb_table *t, int field, int n_tensors, int **out, int *n, const char *what) {
    fb_vec v;
    *out = NULL;
    *n = 0;
    if (fb_vector(f, t, field, 4, &v) < 0) return -1;
    if (v.len > 1u << 20) return fb_fail(f, "absurd number of operands", v.pos);
    *out = ac_malloc(((size_t)v.len + 1) * sizeof **out);
    if (!*out) return fb_fail(f, "out of memory", 0);
    for (uint32_t k = 0; k < v.len; k++) {
        int32_t idx = (int32_t)rd32(f->b + v.pos + 4 * (size_t)k);
        if (idx < -1 || idx >= n_tensors) {
            ac_errf(f->err, "%s: corrupt TFLite file: %s refers to tensor %d, the subgraph has %d", f->name, what,
                    (int)idx, n_tensors);
            f->failed = 1;
            return -1;
        }
        (*out)[k] = idx;
    }
    *n = (int)v.len;
    return 0;
}

/* Raw constant data of buffer `bi`: pointer and byte count (0 when the tensor has no data). */
static int buffer_data(fb *f, const fb_vec *buffers, uint32_t bi, const uint8_t **data, uint64_t *len) {
    *data = NULL;
    *len = 0;
    if (bi >= buffers->len) return fb_fail(f, "tensor refers to a buffer that does not exist", buffers->pos);
    fb_table bt;
    if (fb_vec_table(f, buffers, bi, &bt) < 0) return -1;
    fb_vec v;
    if (fb_vector(f, &bt, 0, 1, &v) < 0) return -1;
    if (v.len) {
        *data = f->b + v.pos;
        *len = v.len;
        return 0;
    }
    /* Models over 2 GB keep data after the flatbuffer: offset/size from the start of the file. */
    uint64_t off = (uint64_t)fb_int(f, &bt, 1, 8, 0, 0), size = (uint64_t)fb_int(f, &bt, 2, 8, 0, 0);
    if (f->failed) return -1;
    if (off > 1 && size) {
        if (off > f->n || size > f->n - off) return fb_fail(f, "external buffer range out of the file", bt.pos);
        *data = f->b + off;
        *len = size;
    }
    return 0;
}

static int read_quant(fb *f, const fb_table *tt, ac_tfl_tensor *t) {
    size_t qpos;
    int r = fb_ref(f, tt, 4, &qpos);
    if (r <= 0) return r;
    fb_table q;
    if (fb_table_at(f, qpos, &q) < 0) return -1;
    fb_vec sc, zp;
    if (fb_vector(f, &q, 2, 4, &sc) < 0 || fb_vector(f, &q, 3, 8, &zp) < 0) return -1;
    if (sc.len == 0) return 0; /* min/max only, or custom: treat as unquantized */
    if (sc.len > 1u << 24) return fb_fail(f, "absurd number of quantization scales", sc.pos);
    if (zp.len != 0 && zp.len != sc.len) return fb_fail(f, "zero_point and scale counts differ", zp.pos);
    t->n_quant = (int)sc.len;
    t->scale = ac_malloc(sc.len * sizeof *t->scale);
    t->zero_point = ac_calloc(sc.len, sizeof *t->zero_point);
    if (!t->scale || !t->zero_point) return fb_fail(f, "out of memory", 0);
    for (uint32_t k = 0; k < sc.len; k++) {
        uint32_t u = rd32(f->b + sc.pos + 4 * (size_t)k);
        memcpy(&t->scale[k], &u, 4);
        if (!isfinite(t->scale[k])) return fb_fail(f, "quantization scale is not finite", sc.pos);
        if (zp.len) t->zero_point[k] = (int64_t)rd64(f->b + zp.pos + 8 * (size_t)k);
    }
    t->quant_dim = (int)fb_int(f, &q, 6, 4, 1, 0);
    return f->failed ? -1 : 0;
}

/* Dequantizes the constant data of tensor t to float32. */
static int dequantize(fb *f, ac_tfl_tensor *t, const uint8_t *p, uint64_t len, uint64_t count) {
    int es = type_size(t->type);
    if (!es) return 0; /* strings, bools...: no float view; an op using them will report it */
    if (len != count * (uint64_t)es) {
        ac_errf(f->err, "%s: corrupt TFLite file: tensor '%s' has %llu bytes of data, its shape needs %llu", f->name,
                t->name, (unsigned long long)len, (unsigned long long)(count * (uint64_t)es));
        f->failed = 1;
        return -1;
    }
    t->data = ac_malloc((count ? count : 1) * sizeof(float));
    if (!t->data) return fb_fail(f, "out of memory for tensor data", 0);
    /* per-channel: element i belongs to channel (i / inner) % nch */
    uint64_t inner = 1, nch = 1;
    if (t->n_quant > 1) {
        if (t->quant_dim < 0 || t->quant_dim >= t->ndim || t->shape[t->quant_dim] != t->n_quant) {
            ac_errf(f->err, "%s: corrupt TFLite file: tensor '%s' has %d quantization scales along dimension %d "
                    "that does not have that size", f->name, t->name, t->n_quant, t->quant_dim);
            f->failed = 1;
            return -1;
        }
        for (int d = t->quant_dim + 1; d < t->ndim; d++) inner *= (uint64_t)t->shape[d];
        nch = (uint64_t)t->n_quant;
    }
    /* Blocks of one channel (the whole tensor when per tensor), one loop per type: no division and
     * no branch per element. Unquantized integers get zp 0, scale 1: (q - 0) * 1 is q exactly. */
    const int quant = t->n_quant > 0 && t->type != 0 && t->type != 1;
    const uint64_t block = t->n_quant > 1 ? inner : count;
    for (uint64_t i0 = 0, c = 0; i0 < count; i0 += block, c = (c + 1) % nch) {
        const double zp = quant ? (double)t->zero_point[c] : 0, sc = quant ? (double)t->scale[c] : 1;
        const uint64_t end = count - i0 < block ? count : i0 + block;
        float *d = t->data;
        switch (t->type) {
        case 0: /* float32 as stored, read little-endian */
            for (uint64_t i = i0; i < end; i++) {
                const uint32_t u = rd32(p + 4 * i);
                memcpy(&d[i], &u, 4);
            }
            break;
        case 1: ac_f16_to_f32_n(p + 2 * i0, d + i0, end - i0); break;
        case 2: for (uint64_t i = i0; i < end; i++) d[i] = (float)(((double)(int32_t)rd32(p + 4 * i) - zp) * sc); break;
        case 3: for (uint64_t i = i0; i < end; i++) d[i] = (float)(((double)p[i] - zp) * sc); break;
        case 4: for (uint64_t i = i0; i < end; i++) d[i] = (float)(((double)(int64_t)rd64(p + 8 * i) - zp) * sc); break;
        default: for (uint64_t i = i0; i < end; i++) d[i] = (float)(((double)(int8_t)p[i] - zp) * sc); break;
        }
    }
    if (t->type == 2) {
        if (!(t->ints = ac_malloc((count ? count : 1) * sizeof *t->ints))) return fb_fail(f, "out of memory for tensor data", 0);
        for (uint64_t i = 0; i < count; i++) t->ints[i] = (int32_t)rd32(p + 4 * i);
    }
    return 0;
}

static int read_tensor(fb *f, const fb_vec *tensors, uint32_t k, const fb_vec *buffers, ac_tfl_tensor *t) {
    fb_table tt;
    if (fb_vec_table(f, tensors, k, &tt) < 0) return -1;
    if (!(t->name = fb_string(f, &tt, 3))) return -1;
    fb_vec sh;
    if (fb_vector(f, &tt, 0, 4, &sh) < 0) return -1;
    if (sh.len > AC_TFL_MAX_DIMS) {
        ac_errf(f->err, "%s: tensor '%s' has %u dimensions, at most %d are supported", f->name, t->name, sh.len,
                AC_TFL_MAX_DIMS);
        f->failed = 1;
        return -1;
    }
    t->ndim = (int)sh.len;
    uint64_t count = 1, limit = ac_limits_get().max_tensor_elems;
    for (int d = 0; d < t->ndim; d++) {
        int32_t v = (int32_t)rd32(f->b + sh.pos + 4 * (size_t)d);
        if (v < 0) {
            ac_errf(f->err, "%s: tensor '%s' has a negative dimension %d", f->name, t->name, (int)v);
            f->failed = 1;
            return -1;
        }
        t->shape[d] = v;
        count *= (uint64_t)v;
        if (count > limit) {
            ac_errf(f->err, "%s: tensor '%s' has more than %llu elements (raise ATTNCAP_MAX_TENSOR_ELEMS)", f->name,
                    t->name, (unsigned long long)limit);
            f->failed = 1;
            return -1;
        }
    }
    t->type = (int)fb_int(f, &tt, 1, 1, 1, 0);
    uint32_t bi = (uint32_t)fb_int(f, &tt, 2, 4, 0, 0);
    if (f->failed || read_quant(f, &tt, t) < 0) return -1;
    const uint8_t *data;
    uint64_t len;
    if (buffer_data(f, buffers, bi, &data, &len) < 0) return -1;
    if (data && len) return dequantize(f, t, data, len, count);
    return 0;
}

static int read_op(fb *f, const fb_vec *ops, uint32_t k, const int *codes, char **custom, uint32_t n_codes,
                   int n_tensors, ac_tfl_op *op) {
    fb_table ot;
    if (fb_vec_table(f, ops, k, &ot) < 0) return -1;
    uint32_t ci = (uint32_t)fb_int(f, &ot, 0, 4, 0, 0);
    if (f->failed) return -1;
    if (ci >= n_codes) return fb_fail(f, "operator refers to an operator code that does not exist", ot.pos);
    op->opcode = codes[ci];
    const char *nm = ac_tfl_opname(op->opcode);
    if (op->opcode == 32 && custom[ci] && custom[ci][0]) snprintf(op->opname, sizeof op->opname, "CUSTOM:%.24s", custom[ci]);
    else if (nm) snprintf(op->opname, sizeof op->opname, "%s", nm);
    else snprintf(op->opname, sizeof op->opname, "BUILTIN_%d", op->opcode);
    if (read_indices(f, &ot, 1, n_tensors, &op->inputs, &op->n_in, "an operator input") < 0) return -1;
    if (read_indices(f, &ot, 2, n_tensors, &op->outputs, &op->n_out, "an operator output") < 0) return -1;
    /* defaults, overridden by the options table */
    op->stride_w = op->stride_h = op->dilation_w = op->dilation_h = 1;
    op->filter_w = op->filter_h = 1;
    op->depth_multiplier = 1;
    op->beta = 1.0f;
    size_t opos;
    int r = fb_ref(f, &ot, 4, &opos);
    if (r < 0) return -1;
    if (r == 0) return 0;
    fb_table o;
    if (fb_table_at(f, opos, &o) < 0) return -1;
    int otype = (int)fb_int(f, &ot, 3, 1, 0, 0);
    switch (op->opcode) {
    case 3: /* CONV_2D: Conv2DOptions = 1 */
        if (otype != 1) break;
        op->padding = (int)fb_int(f, &o, 0, 1, 1, 0);
        op->stride_w = (int)fb_int(f, &o, 1, 4, 1, 0);
        op->stride_h = (int)fb_int(f, &o, 2, 4, 1, 0);
        op->activation = (int)fb_int(f, &o, 3, 1, 1, 0);
        op->dilation_w = (int)fb_int(f, &o, 4, 4, 1, 1);
        op->dilation_h = (int)fb_int(f, &o, 5, 4, 1, 1);
        break;
    case 4: /* DEPTHWISE_CONV_2D: DepthwiseConv2DOptions = 2 */
        if (otype != 2) break;
        op->padding = (int)fb_int(f, &o, 0, 1, 1, 0);
        op->stride_w = (int)fb_int(f, &o, 1, 4, 1, 0);
        op->stride_h = (int)fb_int(f, &o, 2, 4, 1, 0);
        op->depth_multiplier = (int)fb_int(f, &o, 3, 4, 1, 0);
        op->activation = (int)fb_int(f, &o, 4, 1, 1, 0);
        op->dilation_w = (int)fb_int(f, &o, 5, 4, 1, 1);
        op->dilation_h = (int)fb_int(f, &o, 6, 4, 1, 1);
        break;
    case 1: case 17: case 12: /* pools: Pool2DOptions = 5 */
        if (otype != 5) break;
        op->padding = (int)fb_int(f, &o, 0, 1, 1, 0);
        op->stride_w = (int)fb_int(f, &o, 1, 4, 1, 0);
        op->stride_h = (int)fb_int(f, &o, 2, 4, 1, 0);
        op->filter_w = (int)fb_int(f, &o, 3, 4, 1, 0);
        op->filter_h = (int)fb_int(f, &o, 4, 4, 1, 0);
        op->activation = (int)fb_int(f, &o, 5, 1, 1, 0);
        break;
    case 9: /* FULLY_CONNECTED: FullyConnectedOptions = 8 */
        if (otype == 8) op->activation = (int)fb_int(f, &o, 0, 1, 1, 0);
        break;
    case 25: /* SOFTMAX: SoftmaxOptions = 9 */
        if (otype == 9) op->beta = fb_float(f, &o, 0, 0.0f);
        break;
    case 2: /* CONCATENATION: ConcatenationOptions = 10 */
        if (otype != 10) break;
        op->axis = (int)fb_int(f, &o, 0, 4, 1, 0);
        op->activation = (int)fb_int(f, &o, 1, 1, 1, 0);
        break;
    case 0: /* ADD: AddOptions = 11 */
        if (otype == 11) op->activation = (int)fb_int(f, &o, 0, 1, 1, 0);
        break;
    case 18: /* MUL: MulOptions = 21 */
        if (otype == 21) op->activation = (int)fb_int(f, &o, 0, 1, 1, 0);
        break;
    case 41: /* SUB: SubOptions = 28 */
        if (otype == 28) op->activation = (int)fb_int(f, &o, 0, 1, 1, 0);
        break;
    case 45: /* STRIDED_SLICE: StridedSliceOptions = 32 (begin, end, ellipsis, new_axis, shrink_axis masks; offset) */
        if (otype != 32) break;
        op->begin_mask = (int)fb_int(f, &o, 0, 4, 1, 0);
        op->end_mask = (int)fb_int(f, &o, 1, 4, 1, 0);
        op->ellipsis_mask = (int)fb_int(f, &o, 2, 4, 1, 0);
        op->new_axis_mask = (int)fb_int(f, &o, 3, 4, 1, 0);
        op->shrink_axis_mask = (int)fb_int(f, &o, 4, 4, 1, 0);
        op->slice_offset = (int)fb_int(f, &o, 5, 1, 0, 0);
        break;
    case 97: /* RESIZE_NEAREST_NEIGHBOR: ResizeNearestNeighborOptions = 74 */
        if (otype != 74) break;
        op->align_corners = (int)fb_int(f, &o, 0, 1, 0, 0);
        op->half_pixel_centers = (int)fb_int(f, &o, 1, 1, 0, 0);
        break;
    case 22: { /* RESHAPE: ReshapeOptions = 17, new_shape kept in the op's inputs when absent */
        if (otype != 17) break;
        fb_vec ns;
        if (fb_vector(f, &o, 0, 4, &ns) < 0) return -1;
        if (ns.len > AC_TFL_MAX_DIMS) return fb_fail(f, "RESHAPE new_shape has too many dimensions", ns.pos);
        op->n_new_shape = (int)ns.len;
        for (uint32_t d = 0; d < ns.len; d++) op->new_shape[d] = (int32_t)rd32(f->b + ns.pos + 4 * (size_t)d);
        break;
    }
    case 40: case 74: case 82: /* MEAN, SUM, REDUCE_MAX: ReducerOptions = 27 */
        if (otype == 27) op->keep_dims = (int)fb_int(f, &o, 0, 1, 0, 0);
        break;
    default: break;
    }
    return f->failed ? -1 : 0;
}

int ac_tfl_load_mem(const void *data, size_t len, const char *name, ac_tfl_model **model, ac_err *err) {
    *model = NULL;
    fb F = {data, len, name ? name : "<memory>", err, 0}, *f = &F;
    if (len < 8) return ac_errf(err, "%s: not a TFLite file (only %zu bytes)", f->name, len);
    if (memcmp(f->b + 4, "TFL3", 4) != 0) return ac_errf(err, "%s: not a TFLite file (no TFL3 identifier)", f->name);
    ac_tfl_model *m = ac_calloc(1, sizeof *m);
    int *codes = NULL;
    char **custom = NULL;
    uint32_t n_codes = 0;
    if (!m) return ac_errf(err, "%s: out of memory", f->name);
    m->path = ac_strdup(f->name);
    fb_table root, sg;
    fb_vec vcodes, vsubs, vbufs, vtens, vops;
    if (fb_table_at(f, rd32(f->b), &root) < 0) goto fail;
    if (fb_vector(f, &root, 1, 4, &vcodes) < 0 || fb_vector(f, &root, 2, 4, &vsubs) < 0 ||
        fb_vector(f, &root, 4, 4, &vbufs) < 0)
        goto fail;
    if (vsubs.len < 1) {
        fb_fail(f, "model has no subgraph", root.pos);
        goto fail;
    }
    n_codes = vcodes.len;
    codes = ac_calloc(n_codes + 1, sizeof *codes);
    custom = ac_calloc(n_codes + 1, sizeof *custom);
    if (!codes || !custom) {
        fb_fail(f, "out of memory", 0);
        goto fail;
    }
    for (uint32_t k = 0; k < n_codes; k++) {
        fb_table ct;
        if (fb_vec_table(f, &vcodes, k, &ct) < 0) goto fail;
        /* builtin_code (int) replaced the byte-sized deprecated_builtin_code once codes passed 127;
         * older writers fill only the byte, newer ones both: the larger is the real one. */
        int64_t dep = fb_int(f, &ct, 0, 1, 1, 0), full = fb_int(f, &ct, 3, 4, 1, 0);
        codes[k] = (int)(full > dep ? full : dep);
        if (!(custom[k] = fb_string(f, &ct, 1))) goto fail;
        if (f->failed) goto fail;
    }
    if (fb_vec_table(f, &vsubs, 0, &sg) < 0) goto fail;
    if (fb_vector(f, &sg, 0, 4, &vtens) < 0 || fb_vector(f, &sg, 3, 4, &vops) < 0) goto fail;
    if (vtens.len > 1u << 24 || vops.len > 1u << 24) {
        fb_fail(f, "absurd number of tensors or operators", sg.pos);
        goto fail;
    }
    m->tensors = ac_calloc((size_t)vtens.len + 1, sizeof *m->tensors);
    m->ops = ac_calloc((size_t)vops.len + 1, sizeof *m->ops);
    if (!m->tensors || !m->ops) {
        fb_fail(f, "out of memory", 0);
        goto fail;
    }
    m->n_tensors = (int)vtens.len;
    for (uint32_t k = 0; k < vtens.len; k++)
        if (read_tensor(f, &vtens, k, &vbufs, &m->tensors[k]) < 0) goto fail;
    m->n_ops = (int)vops.len;
    for (uint32_t k = 0; k < vops.len; k++)
        if (read_op(f, &vops, k, codes, custom, n_codes, m->n_tensors, &m->ops[k]) < 0) goto fail;
    if (read_indices(f, &sg, 1, m->n_tensors, &m->inputs, &m->n_inputs, "the subgraph input list") < 0 ||
        read_indices(f, &sg, 2, m->n_tensors, &m->outputs, &m->n_outputs, "the subgraph output list") < 0)
        goto fail;
    for (int i = 0; i < m->n_inputs; i++)
        if (m->inputs[i] < 0) {
            fb_fail(f, "subgraph input is -1", sg.pos);
            goto fail;
        }
    for (int i = 0; i < m->n_outputs; i++)
        if (m->outputs[i] < 0) {
            fb_fail(f, "subgraph output is -1", sg.pos);
            goto fail;
        }
    for (uint32_t k = 0; k < n_codes; k++) free(custom[k]);
    free(custom);
    free(codes);
    *model = m;
    return 0;
fail:
    if (custom)
        for (uint32_t k = 0; k < n_codes; k++) free(custom[k]);
    free(custom);
    free(codes);
    ac_tfl_free(m);
    return -1;
}

int ac_tfl_load(const char *path, ac_tfl_model **model, ac_err *err) {
    char *data;
    size_t len;
    *model = NULL;
    if (ac_read_file(path, ac_limits_get().max_file_bytes, &data, &len, err) < 0) return -1;
    int r = ac_tfl_load_mem(data, len, path, model, err);
    free(data);
    return r;
}

void ac_tfl_free(ac_tfl_model *m) {
    if (!m) return;
    if (m->tensors)
        for (int i = 0; i < m->n_tensors; i++) {
            free(m->tensors[i].name);
            free(m->tensors[i].scale);
            free(m->tensors[i].zero_point);
            free(m->tensors[i].data);
            free(m->tensors[i].ints);
        }
    if (m->ops)
        for (int i = 0; i < m->n_ops; i++) {
            free(m->ops[i].inputs);
            free(m->ops[i].outputs);
        }
    free(m->tensors);
    free(m->ops);
    free(m->inputs);
    free(m->outputs);
    free(m->path);
    free(m);
}

int ac_tfl_find_tensor(const ac_tfl_model *m, const char *name) {
    if (!m || !name) return -1;
    for (int i = 0; i < m->n_tensors; i++)
        if (m->tensors[i].name && !strcmp(m->tensors[i].name, name)) return i;
    return -1;
}
