/* safetensors.c: the safetensors format (https://github.com/huggingface/safetensors), read and write.
 *
 * Layout: u64 little-endian N, then N bytes of JSON header, then the data section. The header maps
 * tensor names to {"dtype", "shape", "data_offsets": [begin, end]} (offsets relative to the data
 * section) plus an optional "__metadata__" object of string -> string.
 *
 * The reader trusts nothing: header length against the file size and a 100 MB cap (the format's own
 * limit), JSON that must be one object with nothing after it, known dtypes, integral non-negative
 * shapes whose element count fits the tensor limit without overflow, offsets inside the data
 * section whose length equals dtype size x elements, unique names. Tensor data stays in the file
 * buffer; it is 8-byte aligned when the file came from our writer (or the Python library), but a
 * foreign file may leave it unaligned, so consumers should copy (ac_st_to_f32 does) rather than cast.
 * Byte order: little-endian on disk and in memory (x86-64, aarch64). */
#include "attncap/safetensors.h"
#include "common_internal.h"
#include "alloc_internal.h"

#include <cjson/cJSON.h>
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define ST_MAX_HEADER (100u << 20)

static const struct {
    const char *name;
    size_t size;
} dtypes[] = {
    [AC_ST_F32] = {"F32", 4}, [AC_ST_F16] = {"F16", 2}, [AC_ST_I32] = {"I32", 4},
    [AC_ST_U8] = {"U8", 1},   [AC_ST_I64] = {"I64", 8},
};
#define N_DTYPES ((int)(sizeof dtypes / sizeof *dtypes))

/* Element count and byte size of a shape, refusing negative dims, overflow and the tensor limit. */
static int shape_bytes(const char *path, const char *name, ac_st_dtype dt, int ndim, const int64_t *shape,
                       size_t *nbytes, ac_err *err) {
    uint64_t max_elems = ac_limits_get().max_tensor_elems;
    uint64_t n = 1;
    for (int i = 0; i < ndim; i++) {
        if (shape[i] < 0) return ac_errf(err, "%s: tensor '%s': negative dimension %lld", path, name, (long long)shape[i]);
        uint64_t d = (uint64_t)shape[i];
        if (d && n > max_elems / d)
            return ac_errf(err, "%s: tensor '%s': more than %llu elements, over the tensor limit (raise ATTNCAP_MAX_TENSOR_ELEMS)",
                           path, name, (unsigned long long)max_elems);
        n *= d;
    }
    if (n > max_elems)
        return ac_errf(err, "%s: tensor '%s': %llu elements, over the tensor limit of %llu (raise ATTNCAP_MAX_TENSOR_ELEMS)",
                       path, name, (unsigned long long)n, (unsigned long long)max_elems);
    if (n > SIZE_MAX / dtypes[dt].size) return ac_errf(err, "%s: tensor '%s': too large", path, name);
    *nbytes = (size_t)n * dtypes[dt].size;
    return 0;
}

/* A name from the file made fit for a one-line error message: at most 48 bytes, control characters
 * (a hostile name may hold newlines) replaced by '?'. */
static const char *clean(const char *s, char out[64]) {
    size_t i = 0;
    for (; s[i] && i < 48; i++) out[i] = (unsigned char)s[i] < 0x20 || s[i] == 0x7f ? '?' : s[i];
    if (s[i]) memcpy(out + i, "...", 3), i += 3;
    out[i] = 0;
    return out;
}

/* A JSON number that must be an integer in [0, 2^53] (doubles are exact up to there). */
static int json_uint(const cJSON *j, uint64_t *out) {
    if (!cJSON_IsNumber(j)) return -1;
    double v = j->valuedouble;
    if (!(v >= 0 && v <= 9007199254740992.0) || v != floor(v)) return -1;
    *out = (uint64_t)v;
    return 0;
}

static int cmp_tensor_names(const void *a, const void *b) {
    return strcmp(((const ac_st_tensor *)a)->name, ((const ac_st_tensor *)b)->name);
}

static int parse_tensor(const char *path, const cJSON *item, const char *data, size_t data_len, uint64_t data_start,
                        ac_st_tensor *t, ac_err *err) {
    char nbuf[64], dbuf[64];
    const char *name = clean(item->string, nbuf);
    if (!cJSON_IsObject(item)) return ac_errf(err, "%s: tensor '%s': header entry is not an object", path, name);
    const cJSON *jd = cJSON_GetObjectItemCaseSensitive(item, "dtype");
    const cJSON *js = cJSON_GetObjectItemCaseSensitive(item, "shape");
    const cJSON *jo = cJSON_GetObjectItemCaseSensitive(item, "data_offsets");
    if (!cJSON_IsString(jd)) return ac_errf(err, "%s: tensor '%s': missing or non-string \"dtype\"", path, name);
    int dt = -1;
    for (int i = 0; i < N_DTYPES; i++)
        if (!strcmp(jd->valuestring, dtypes[i].name)) dt = i;
    if (dt < 0) return ac_errf(err, "%s: tensor '%s': unsupported dtype \"%s\" (want F32, F16, I32, U8 or I64)", path, name, clean(jd->valuestring, dbuf));
    t->dtype = (ac_st_dtype)dt;
    if (!cJSON_IsArray(js)) return ac_errf(err, "%s: tensor '%s': missing or non-array \"shape\"", path, name);
    int nd = cJSON_GetArraySize(js);
    if (nd > AC_ST_MAX_DIMS) return ac_errf(err, "%s: tensor '%s': %d dimensions, at most %d supported", path, name, nd, AC_ST_MAX_DIMS);
    t->ndim = 0;
    const cJSON *d;
    cJSON_ArrayForEach(d, js) {
        uint64_t v;
        if (json_uint(d, &v)) return ac_errf(err, "%s: tensor '%s': shape entries must be non-negative integers", path, name);
        t->shape[t->ndim++] = (int64_t)v;
    }
    if (shape_bytes(path, name, t->dtype, t->ndim, t->shape, &t->nbytes, err)) return -1;
    uint64_t b, e;
    if (!cJSON_IsArray(jo) || cJSON_GetArraySize(jo) != 2 || json_uint(jo->child, &b) || json_uint(jo->child->next, &e))
        return ac_errf(err, "%s: tensor '%s': \"data_offsets\" must be two non-negative integers", path, name);
    if (b > e || e > data_len)
        return ac_errf(err, "%s: tensor '%s': data_offsets [%llu, %llu] outside the data section of %zu bytes (truncated or corrupt file)",
                       path, name, (unsigned long long)b, (unsigned long long)e, data_len);
    if (e - b != t->nbytes)
        return ac_errf(err, "%s: tensor '%s': data_offsets span %llu bytes but %s x shape needs %zu", path, name,
                       (unsigned long long)(e - b), dtypes[t->dtype].name, t->nbytes);
    t->data = data ? data + b : NULL;
    t->offset = data_start + b;
    return 0;
}

static int parse_meta(const char *path, const cJSON *item, ac_st_file *f, ac_err *err) {
    if (!cJSON_IsObject(item)) return ac_errf(err, "%s: \"__metadata__\" is not an object", path);
    int n = cJSON_GetArraySize(item);
    f->meta_keys = ac_calloc((size_t)n + 1, sizeof *f->meta_keys);
    f->meta_values = ac_calloc((size_t)n + 1, sizeof *f->meta_values);
    if (!f->meta_keys || !f->meta_values) return ac_errf(err, "%s: out of memory", path);
    const cJSON *m;
    char kbuf[64];
    cJSON_ArrayForEach(m, item) {
        if (!cJSON_IsString(m)) return ac_errf(err, "%s: __metadata__ '%s' is not a string", path, clean(m->string, kbuf));
        for (int i = 0; i < f->n_meta; i++)
            if (!strcmp(f->meta_keys[i], m->string))
                return ac_errf(err, "%s: duplicate __metadata__ key '%s'", path, clean(m->string, kbuf));
        f->meta_keys[f->n_meta] = ac_strdup(m->string);
        f->meta_values[f->n_meta] = ac_strdup(m->valuestring);
        f->n_meta++;
        if (!f->meta_keys[f->n_meta - 1] || !f->meta_values[f->n_meta - 1]) return ac_errf(err, "%s: out of memory", path);
    }
    return 0;
}

/* The header length of a file of file_len bytes whose first 8 bytes are p. */
static int st_header_len(const char *path, const char *p, size_t file_len, uint64_t *hlen, ac_err *err) {
    if (file_len < 8) return ac_errf(err, "%s: not a safetensors file (only %zu bytes, truncated)", path, file_len);
    *hlen = 0;
    for (int i = 7; i >= 0; i--) *hlen = *hlen << 8 | (uint8_t)p[i];
    if (*hlen > ST_MAX_HEADER)
        return ac_errf(err, "%s: not a safetensors file (header length %llu over the 100 MB maximum)", path, (unsigned long long)*hlen);
    if (*hlen > file_len - 8)
        return ac_errf(err, "%s: truncated safetensors file (header of %llu bytes, file has %zu)", path,
                       (unsigned long long)*hlen, file_len - 8);
    return 0;
}

/* Parses f->buf (the whole file, or at least 8 + header bytes of a file of file_len bytes) into
 * tensors and metadata. Data pointers are set only when the whole file is in f->buf. */
static int st_parse(const char *path, ac_st_file *f, size_t file_len, ac_err *err) {
    uint64_t hlen;
    if (st_header_len(path, f->buf, file_len, &hlen, err)) return -1;
    if (f->buf_len < 8 + hlen) return ac_errf(err, "%s: short read", path);
    const char *h = f->buf + 8, *end = NULL;
    cJSON *root = cJSON_ParseWithLengthOpts(h, (size_t)hlen, &end, 0);
    if (!root) return ac_errf(err, "%s: not a safetensors file (header is not valid JSON)", path);
    /* The format pads the header with spaces; anything else after the JSON is corruption. */
    for (const char *p = end; p && p < h + hlen; p++)
        if (*p != ' ' && *p != '\t' && *p != '\n' && *p != '\r') {
            cJSON_Delete(root);
            return ac_errf(err, "%s: corrupt safetensors header (bytes after the JSON)", path);
        }
    if (!cJSON_IsObject(root)) {
        cJSON_Delete(root);
        return ac_errf(err, "%s: corrupt safetensors header (not a JSON object)", path);
    }
    const char *data = f->buf_len == file_len ? h + hlen : NULL;
    size_t data_len = file_len - 8 - (size_t)hlen;
    int n = cJSON_GetArraySize(root);
    f->tensors = ac_calloc((size_t)n + 1, sizeof *f->tensors);
    if (!f->tensors) {
        cJSON_Delete(root);
        return ac_errf(err, "%s: out of memory", path);
    }
    int rc = 0, seen_meta = 0;
    const cJSON *item;
    cJSON_ArrayForEach(item, root) {
        if (!strcmp(item->string, "__metadata__")) {
            if (seen_meta++) rc = ac_errf(err, "%s: duplicate \"__metadata__\"", path);
            else rc = parse_meta(path, item, f, err);
        } else {
            ac_st_tensor *t = &f->tensors[f->n_tensors];
            t->name = ac_strdup(item->string);
            if (!t->name) rc = ac_errf(err, "%s: out of memory", path);
            else {
                f->n_tensors++;
                rc = parse_tensor(path, item, data, data_len, 8 + hlen, t, err);
            }
        }
        if (rc) break;
    }
    cJSON_Delete(root);
    if (rc) return -1;
    /* Sorted by name: lookups by binary search, duplicates adjacent. */
    qsort(f->tensors, (size_t)f->n_tensors, sizeof *f->tensors, cmp_tensor_names);
    char nbuf[64];
    for (int i = 1; i < f->n_tensors; i++)
        if (!strcmp(f->tensors[i - 1].name, f->tensors[i].name))
            return ac_errf(err, "%s: duplicate tensor name '%s'", path, clean(f->tensors[i].name, nbuf));
    return 0;
}

/* A file of at least MAP_MIN bytes is mapped (read-only, private) instead of read: its pages are the
 * page cache's own, where reading copied them into fresh memory that first had to be faulted in and
 * zeroed (the shipped model: 22 MB, an eighth of a one-photo caption's time). 0 if mapped; 1 if not
 * (too small, not a regular file, over the limit, or mmap refused): ac_read_file then reads it and
 * says what is wrong. */
enum { MAP_MIN = 1 << 20 };
static int map_file(const char *path, ac_st_file *f) {
    ac_err ignored; /* ac_read_file opens it again and says why it cannot */
    const int fd = ac_open_regular(path, &ignored); /* never waits on a FIFO */
    if (fd < 0) return 1;
    struct stat st;
    void *p = MAP_FAILED;
    if (fstat(fd, &st) == 0 && st.st_size >= MAP_MIN &&
        (uint64_t)st.st_size <= ac_limits_get().max_file_bytes)
        p = mmap(NULL, (size_t)st.st_size, PROT_READ, MAP_PRIVATE, fd, 0);
    close(fd); /* the mapping keeps the file */
    if (p == MAP_FAILED) return 1;
    f->buf = p, f->buf_len = (size_t)st.st_size, f->mapped = 1;
    return 0;
}

int ac_st_read(const char *path, ac_st_file *f, ac_err *err) {
    memset(f, 0, sizeof *f);
    if (map_file(path, f) && ac_read_file(path, ac_limits_get().max_file_bytes, &f->buf, &f->buf_len, err)) return -1;
    if (st_parse(path, f, f->buf_len, err)) {
        ac_st_free(f);
        return -1;
    }
    return 0;
}

int ac_st_read_mem(const void *data, size_t len, const char *name, ac_st_file *f, ac_err *err) {
    memset(f, 0, sizeof *f);
    if (!name) name = "safetensors";
    f->buf = ac_malloc(len + 1);
    if (!f->buf) return ac_errf(err, "%s: out of memory", name);
    if (len) memcpy(f->buf, data, len);
    f->buf[len] = 0;
    f->buf_len = len;
    if (st_parse(name, f, len, err)) {
        ac_st_free(f);
        return -1;
    }
    return 0;
}

int ac_st_read_header(const char *path, ac_st_file *f, ac_err *err) {
    memset(f, 0, sizeof *f);
    int fd = ac_open_regular(path, err);
    FILE *fp = fd < 0 ? NULL : fdopen(fd, "rb");
    if (!fp) {
        if (fd >= 0) close(fd);
        return fd < 0 ? -1 : ac_errf(err, "%s: %s", path, ac_strerror(errno));
    }
    struct stat st;
    char lenb[8];
    uint64_t hlen;
    int rc = -1;
    if (fstat(fileno(fp), &st) != 0 || !S_ISREG(st.st_mode)) {
        ac_errf(err, "%s: not a regular file", path);
    } else if ((uint64_t)st.st_size > ac_limits_get().max_file_bytes) {
        ac_errf(err, "%s: file is %lld bytes, over the limit of %llu (raise ATTNCAP_MAX_FILE_BYTES)", path,
                (long long)st.st_size, (unsigned long long)ac_limits_get().max_file_bytes);
    } else if (st.st_size < 8 || fread(lenb, 1, 8, fp) != 8) {
        ac_errf(err, "%s: not a safetensors file (truncated)", path);
    } else if (st_header_len(path, lenb, (size_t)st.st_size, &hlen, err) == 0) {
        f->buf = ac_malloc(8 + hlen + 1);
        if (!f->buf) {
            ac_errf(err, "%s: out of memory", path);
        } else {
            memcpy(f->buf, lenb, 8);
            f->buf_len = 8 + hlen;
            if (fread(f->buf + 8, 1, hlen, fp) != hlen) ac_errf(err, "%s: read error", path);
            else rc = st_parse(path, f, (size_t)st.st_size, err);
        }
    }
    fclose(fp);
    if (rc) ac_st_free(f);
    return rc;
}

void ac_st_free(ac_st_file *f) {
    if (!f) return;
    for (int i = 0; i < f->n_tensors; i++) free(f->tensors[i].name);
    free(f->tensors);
    for (int i = 0; i < f->n_meta; i++) {
        free(f->meta_keys[i]);
        free(f->meta_values[i]);
    }
    free(f->meta_keys);
    free(f->meta_values);
    if (f->mapped) munmap(f->buf, f->buf_len);
    else free(f->buf);
    memset(f, 0, sizeof *f);
}

const ac_st_tensor *ac_st_find(const ac_st_file *f, const char *name) {
    int lo = 0, hi = f->n_tensors - 1;
    while (lo <= hi) {
        int mid = lo + (hi - lo) / 2, c = strcmp(f->tensors[mid].name, name);
        if (!c) return &f->tensors[mid];
        if (c < 0) lo = mid + 1;
        else hi = mid - 1;
    }
    return NULL;
}

const char *ac_st_meta(const ac_st_file *f, const char *key) {
    for (int i = 0; i < f->n_meta; i++)
        if (!strcmp(f->meta_keys[i], key)) return f->meta_values[i];
    return NULL;
}

int ac_st_to_f32(const ac_st_tensor *t, float *out, size_t n, const char *path, ac_err *err) {
    if (!path) path = "safetensors";
    size_t elems = t->nbytes / dtypes[t->dtype].size;
    char nbuf[64];
    if (elems != n) return ac_errf(err, "%s: tensor '%s' has %zu elements, expected %zu", path, clean(t->name, nbuf), elems, n);
    const unsigned char *p = t->data;
    if (t->dtype == AC_ST_F32) {
        memcpy(out, p, n * sizeof(float));
    } else if (t->dtype == AC_ST_F16) {
        ac_f16_to_f32_n(p, out, n);
    } else {
        return ac_errf(err, "%s: tensor '%s' is %s, expected F32 or F16", path, clean(t->name, nbuf), dtypes[t->dtype].name);
    }
    return 0;
}

/* ---- writer ---- */

void ac_st_writer_init(ac_st_writer *w) { memset(w, 0, sizeof *w); }

void ac_st_writer_free(ac_st_writer *w) {
    for (int i = 0; i < w->n_tensors; i++) free(w->tensors[i].name);
    free(w->tensors);
    for (int i = 0; i < w->n_meta; i++) {
        free(w->meta_keys[i]);
        free(w->meta_values[i]);
    }
    free(w->meta_keys);
    free(w->meta_values);
    memset(w, 0, sizeof *w);
}

int ac_st_writer_add(ac_st_writer *w, const char *name, ac_st_dtype dtype, int ndim, const int64_t *shape,
                     const void *data, ac_err *err) {
    if ((int)dtype < 0 || (int)dtype >= N_DTYPES) return ac_errf(err, "safetensors: tensor '%s': bad dtype", name);
    if (ndim < 0 || ndim > AC_ST_MAX_DIMS) return ac_errf(err, "safetensors: tensor '%s': %d dimensions", name, ndim);
    if (!strcmp(name, "__metadata__")) return ac_errf(err, "safetensors: '__metadata__' is not a valid tensor name");
    for (int i = 0; i < w->n_tensors; i++)
        if (!strcmp(w->tensors[i].name, name)) return ac_errf(err, "safetensors: duplicate tensor name '%s'", name);
    ac_st_tensor t = {0};
    t.dtype = dtype;
    t.ndim = ndim;
    for (int i = 0; i < ndim; i++) t.shape[i] = shape[i];
    if (shape_bytes("safetensors", name, dtype, ndim, shape, &t.nbytes, err)) return -1;
    if (t.nbytes && !data) return ac_errf(err, "safetensors: tensor '%s': no data", name);
    t.data = data;
    if (w->n_tensors == w->cap_tensors) {
        int cap = w->cap_tensors ? 2 * w->cap_tensors : 16;
        ac_st_tensor *nt = ac_realloc(w->tensors, (size_t)cap * sizeof *nt);
        if (!nt) return ac_errf(err, "safetensors: out of memory");
        w->tensors = nt, w->cap_tensors = cap;
    }
    t.name = ac_strdup(name);
    if (!t.name) return ac_errf(err, "safetensors: out of memory");
    w->tensors[w->n_tensors++] = t;
    return 0;
}

int ac_st_writer_meta(ac_st_writer *w, const char *key, const char *value, ac_err *err) {
    char *v = ac_strdup(value);
    if (!v) return ac_errf(err, "safetensors: out of memory");
    for (int i = 0; i < w->n_meta; i++)
        if (!strcmp(w->meta_keys[i], key)) { /* last value wins */
            free(w->meta_values[i]);
            w->meta_values[i] = v;
            return 0;
        }
    if (w->n_meta == w->cap_meta) {
        int cap = w->cap_meta ? 2 * w->cap_meta : 8;
        char **nk = ac_realloc(w->meta_keys, (size_t)cap * sizeof *nk);
        if (nk) w->meta_keys = nk;
        char **nv = nk ? ac_realloc(w->meta_values, (size_t)cap * sizeof *nv) : NULL;
        if (nv) w->meta_values = nv;
        if (!nk || !nv) {
            free(v);
            return ac_errf(err, "safetensors: out of memory");
        }
        w->cap_meta = cap;
    }
    char *k = ac_strdup(key);
    if (!k) {
        free(v);
        return ac_errf(err, "safetensors: out of memory");
    }
    w->meta_keys[w->n_meta] = k;
    w->meta_values[w->n_meta] = v;
    w->n_meta++;
    return 0;
}

/* Data layout order: larger element sizes first (stable), so that every tensor starts at a multiple
 * of its own element size (the header is padded to 8) and readers may use the data in place. */
static int *layout_order(const ac_st_writer *w) {
    int *ord = ac_malloc(((size_t)w->n_tensors + 1) * sizeof *ord), k = 0;
    if (!ord) return NULL;
    for (size_t sz = 8; sz >= 1; sz /= 2)
        for (int i = 0; i < w->n_tensors; i++)
            if (dtypes[w->tensors[i].dtype].size == sz) ord[k++] = i;
    return ord;
}

/* The JSON header, unpadded, malloc'd. */
static char *build_header(const ac_st_writer *w, const int *ord) {
    cJSON *root = cJSON_CreateObject();
    if (!root) return NULL;
    int ok = 1;
    if (w->n_meta) {
        cJSON *m = cJSON_AddObjectToObject(root, "__metadata__");
        ok = m != NULL;
        for (int i = 0; ok && i < w->n_meta; i++) ok = cJSON_AddStringToObject(m, w->meta_keys[i], w->meta_values[i]) != NULL;
    }
    uint64_t off = 0;
    for (int i = 0; ok && i < w->n_tensors; i++) {
        const ac_st_tensor *t = &w->tensors[ord[i]];
        cJSON *o = cJSON_AddObjectToObject(root, t->name);
        cJSON *s = o ? cJSON_AddArrayToObject(o, "shape") : NULL, *d = s ? cJSON_AddArrayToObject(o, "data_offsets") : NULL;
        ok = d && cJSON_AddStringToObject(o, "dtype", dtypes[t->dtype].name);
        for (int k = 0; ok && k < t->ndim; k++) ok = cJSON_AddItemToArray(s, cJSON_CreateNumber((double)t->shape[k]));
        if (ok) ok = cJSON_AddItemToArray(d, cJSON_CreateNumber((double)off));
        off += t->nbytes;
        if (ok) ok = cJSON_AddItemToArray(d, cJSON_CreateNumber((double)off));
    }
    char *s = ok ? cJSON_PrintUnformatted(root) : NULL;
    cJSON_Delete(root);
    return s;
}

int ac_st_write(const ac_st_writer *w, const char *path, ac_err *err) {
    uint64_t total = 0;
    for (int i = 0; i < w->n_tensors; i++) total += w->tensors[i].nbytes;
    if (total > 9007199254740992ull) return ac_errf(err, "%s: tensors too large", path);
    int *ord = layout_order(w);
    char *hdr = ord ? build_header(w, ord) : NULL;
    if (!hdr) {
        free(ord);
        return ac_errf(err, "%s: out of memory building the header", path);
    }
    size_t hlen = strlen(hdr);
    size_t padded = (hlen + 7) & ~(size_t)7; /* 8 + padded is a multiple of 8: data stays aligned */
    uint8_t lenb[8];
    for (int i = 0; i < 8; i++) lenb[i] = (uint8_t)((uint64_t)padded >> (8 * i));
    static const char spaces[8] = "        ";
    ac_atomic_file af;
    if (ac_atomic_open(&af, path, err)) {
        free(hdr);
        free(ord);
        return -1;
    }
    int rc = ac_atomic_write(&af, lenb, 8, err);
    if (!rc) rc = ac_atomic_write(&af, hdr, hlen, err);
    if (!rc) rc = ac_atomic_write(&af, spaces, padded - hlen, err);
    for (int i = 0; !rc && i < w->n_tensors; i++) rc = ac_atomic_write(&af, w->tensors[ord[i]].data, w->tensors[ord[i]].nbytes, err);
    free(hdr);
    free(ord);
    if (rc) {
        ac_atomic_abort(&af);
        return -1;
    }
    return ac_atomic_commit(&af, err);
}
