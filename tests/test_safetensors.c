/* tests/test_safetensors.c: round trip, a file written by Python by hand (tools/make_safetensors_fixture.py),
 * and hostile files (truncations, absurd lengths, bad offsets/dtypes/shapes, byte flips): error, no crash. */
#include "attncap/safetensors.h"

#include <dirent.h>
#include <stdint.h>
#include <sys/stat.h>
#include <unistd.h>

#include "test.h"

static char path_buf[4096];
static const char *tmp_path(const char *name) {
    snprintf(path_buf, sizeof path_buf, "%s/%s", test_tmpdir(), name);
    return path_buf;
}

static int write_raw(const char *path, const void *p, size_t n) {
    FILE *f = fopen(path, "wb");
    if (!f) return -1;
    fwrite(p, 1, n, f);
    fclose(f);
    return 0;
}

/* A file from a header string (padded) and a data section. */
static int write_st(const char *path, const char *hdr, const void *data, size_t data_len) {
    size_t h = strlen(hdr);
    uint8_t *buf = malloc(8 + h + data_len + 1);
    uint64_t n = h;
    for (int i = 0; i < 8; i++) buf[i] = (uint8_t)(n >> (8 * i));
    memcpy(buf + 8, hdr, h);
    if (data_len) memcpy(buf + 8 + h, data, data_len);
    int rc = write_raw(path, buf, 8 + h + data_len);
    free(buf);
    return rc;
}

/* Reads path and expects failure with a one-line message naming the file. */
static int expect_bad(const char *path) {
    ac_st_file f;
    ac_err err = {0};
    if (ac_st_read(path, &f, &err) == 0) {
        ac_st_free(&f);
        return 0;
    }
    return strstr(err.msg, path) != NULL && strchr(err.msg, '\n') == NULL;
}

static void test_round_trip(void) {
    float a[2 * 3];
    for (int i = 0; i < 6; i++) a[i] = (float)i * 0.5f - 1.0f;
    uint16_t h[3] = {ac_f32_to_f16(1.5f), ac_f32_to_f16(-2.0f), ac_f32_to_f16(0.333f)};
    int32_t ids[4] = {1, -2, 3, INT32_MIN};
    uint8_t u[3] = {0, 128, 255}; /* odd sizes before wider types: the writer must still align them */
    int64_t big[2] = {INT64_MAX, -5};
    ac_st_writer w;
    ac_st_writer_init(&w);
    ac_err err = {0};
    int64_t s23[2] = {2, 3}, s3[1] = {3}, s22[2] = {2, 2}, s2[1] = {2}, s0[2] = {0, 7};
    CHECK(ac_st_writer_add(&w, "a", AC_ST_F32, 2, s23, a, &err) == 0);
    CHECK(ac_st_writer_add(&w, "h", AC_ST_F16, 1, s3, h, &err) == 0);
    CHECK(ac_st_writer_add(&w, "ids", AC_ST_I32, 2, s22, ids, &err) == 0);
    CHECK(ac_st_writer_add(&w, "big", AC_ST_I64, 1, s2, big, &err) == 0);
    CHECK(ac_st_writer_add(&w, "u", AC_ST_U8, 1, s3, u, &err) == 0);
    CHECK(ac_st_writer_add(&w, "empty", AC_ST_F32, 2, s0, NULL, &err) == 0);
    CHECK(ac_st_writer_add(&w, "a", AC_ST_F32, 2, s23, a, &err) != 0); /* duplicate */
    CHECK(ac_st_writer_meta(&w, "k", "v1", &err) == 0);
    CHECK(ac_st_writer_meta(&w, "k", "v2 \"quoted\"\n", &err) == 0); /* replaces */
    CHECK(ac_st_writer_meta(&w, "images", "[\"a.jpg\",\"b.jpg\"]", &err) == 0);
    const char *p = tmp_path("rt.safetensors");
    CHECK(ac_st_write(&w, p, &err) == 0);
    ac_st_writer_free(&w);

    ac_st_file f;
    CHECKF(ac_st_read(p, &f, &err) == 0, "%s", err.msg);
    CHECK(f.n_tensors == 6);
    CHECK(f.n_meta == 2);
    CHECK(!strcmp(ac_st_meta(&f, "k"), "v2 \"quoted\"\n"));
    CHECK(!strcmp(ac_st_meta(&f, "images"), "[\"a.jpg\",\"b.jpg\"]"));
    CHECK(ac_st_meta(&f, "nope") == NULL);
    /* Header length is a multiple of 8, so the data section is aligned in the malloc'd buffer. */
    uint64_t hl = 0;
    for (int i = 7; i >= 0; i--) hl = hl << 8 | (uint8_t)f.buf[i];
    CHECK(hl % 8 == 0);
    const ac_st_tensor *t = ac_st_find(&f, "a");
    CHECK(t && t->dtype == AC_ST_F32 && t->ndim == 2 && t->shape[0] == 2 && t->shape[1] == 3 && t->nbytes == 24);
    CHECK(((uintptr_t)t->data % 8) == 0);
    float back[6];
    CHECK(ac_st_to_f32(t, back, 6, p, &err) == 0);
    CHECK(memcmp(back, a, sizeof a) == 0);
    CHECK(ac_st_to_f32(t, back, 5, p, &err) != 0); /* element count mismatch */
    t = ac_st_find(&f, "h");
    CHECK(t && t->dtype == AC_ST_F16);
    CHECK(ac_st_to_f32(t, back, 3, p, &err) == 0);
    CHECK(back[0] == 1.5f && back[1] == -2.0f && fabsf(back[2] - 0.333f) < 1e-3f);
    t = ac_st_find(&f, "ids");
    CHECK(t && t->dtype == AC_ST_I32 && memcmp(t->data, ids, sizeof ids) == 0);
    CHECK(ac_st_to_f32(t, back, 4, p, &err) != 0); /* not a float tensor */
    t = ac_st_find(&f, "big");
    CHECK(t && t->dtype == AC_ST_I64 && memcmp(t->data, big, sizeof big) == 0);
    t = ac_st_find(&f, "u");
    CHECK(t && t->dtype == AC_ST_U8 && t->nbytes == 3 && memcmp(t->data, u, 3) == 0);
    t = ac_st_find(&f, "empty");
    CHECK(t && t->nbytes == 0 && t->shape[0] == 0 && t->shape[1] == 7);
    CHECK(ac_st_find(&f, "zzz") == NULL);
    ac_st_file hf;
    CHECKF(ac_st_read_header(p, &hf, &err) == 0, "%s", err.msg);
    CHECK(hf.n_tensors == 6 && hf.n_meta == 2 && !strcmp(ac_st_meta(&hf, "images"), "[\"a.jpg\",\"b.jpg\"]"));
    const ac_st_tensor *ht = ac_st_find(&hf, "a");
    CHECK(ht && ht->data == NULL && ht->nbytes == 24 && ht->shape[1] == 3);
    ac_st_free(&hf);
    static const size_t esz[] = {[AC_ST_F32] = 4, [AC_ST_F16] = 2, [AC_ST_I32] = 4, [AC_ST_U8] = 1, [AC_ST_I64] = 8};
    for (int i = 0; i < f.n_tensors; i++) CHECK((uintptr_t)f.tensors[i].data % esz[f.tensors[i].dtype] == 0);
    ac_st_free(&f);
    /* No temp files left behind. */
    DIR *d = opendir(test_tmpdir());
    struct dirent *e;
    int tmps = 0;
    while ((e = readdir(d))) tmps += strstr(e->d_name, ".tmp.") != NULL;
    closedir(d);
    CHECK(tmps == 0);
}

/* The file written by Python (json + struct + numpy): the reader must agree with another writer. */
static void test_python_fixture(void) {
    const char *root = getenv("ATTNCAP_ROOT");
    char p[4096];
    snprintf(p, sizeof p, "%s/tests/fixtures/st_python.safetensors", root ? root : ".");
    ac_st_file f;
    ac_err err = {0};
    CHECKF(ac_st_read(p, &f, &err) == 0, "%s", err.msg);
    CHECK(f.n_tensors == 7);
    CHECK(!strcmp(ac_st_meta(&f, "format"), "pt"));
    CHECK(!strcmp(ac_st_meta(&f, "note"), "written by hand: \xc3\xa9\xc3\xa8 \"quoted\" \\ tab\t"));
    const ac_st_tensor *t = ac_st_find(&f, "weight");
    CHECK(t && t->ndim == 3 && t->shape[0] == 2 && t->shape[1] == 3 && t->shape[2] == 4);
    float w[24];
    CHECK(ac_st_to_f32(t, w, 24, p, &err) == 0);
    for (int i = 0; i < 24; i++) CHECK(w[i] == (float)i * 0.25f - 1.5f);
    t = ac_st_find(&f, "half");
    float hv[8], want[8] = {0.0f, 1.0f, -2.5f, 65504.0f, 6.103515625e-05f, 1.1920928955078125e-07f, -0.0f, 3.140625f};
    CHECK(t && ac_st_to_f32(t, hv, 8, p, &err) == 0);
    for (int i = 0; i < 8; i++) CHECKF(hv[i] == want[i], "half[%d] = %g, want %g", i, hv[i], want[i]);
    CHECK(signbit(hv[6]));
    t = ac_st_find(&f, "ids");
    int32_t ids[6], wid[6] = {-7, 0, 2147483647, INT32_MIN, 1, 42};
    CHECK(t && t->dtype == AC_ST_I32 && t->nbytes == 24);
    memcpy(ids, t->data, 24);
    CHECK(memcmp(ids, wid, 24) == 0);
    t = ac_st_find(&f, "bytes");
    CHECK(t && t->dtype == AC_ST_U8 && t->nbytes == 5);
    for (int i = 0; i < 5; i++) CHECK(((const uint8_t *)t->data)[i] == 50 * i);
    t = ac_st_find(&f, "big");
    int64_t big[3], wbig[3] = {(int64_t)1 << 40, -((int64_t)1 << 50), 3};
    CHECK(t && t->dtype == AC_ST_I64);
    memcpy(big, t->data, 24);
    CHECK(memcmp(big, wbig, 24) == 0);
    t = ac_st_find(&f, "empty");
    CHECK(t && t->nbytes == 0 && t->ndim == 2);
    t = ac_st_find(&f, "scalar");
    CHECK(t && t->ndim == 0 && t->nbytes == 4);
    float sc;
    CHECK(ac_st_to_f32(t, &sc, 1, p, &err) == 0 && sc == 2.5f);

    /* Every truncation of it is an error (its last data byte belongs to a non-empty tensor). */
    char *copy = malloc(f.buf_len);
    memcpy(copy, f.buf, f.buf_len);
    size_t n = f.buf_len;
    ac_st_free(&f);
    const char *q = tmp_path("trunc.safetensors");
    for (size_t len = 0; len < n; len++) {
        write_raw(q, copy, len);
        CHECKF(expect_bad(q), "truncated to %zu bytes was accepted", len);
        ac_st_file hf;
        ac_err e1;
        CHECKF(ac_st_read_header(q, &hf, &e1) != 0, "header-only read of %zu bytes was accepted", len);
    }
    /* Every byte replaced by a few values: accepted or a clean error, never a crash (ASan run). */
    static const uint8_t vals[] = {0x00, 0xff, '"', '9', '{', ']', 0x80};
    int ok = 0;
    for (size_t i = 0; i < n; i++)
        for (size_t v = 0; v < sizeof vals; v++) {
            uint8_t old = (uint8_t)copy[i];
            copy[i] = (char)vals[v];
            ac_st_file g;
            ac_err e2;
            if (ac_st_read_mem(copy, n, q, &g, &e2) == 0) {
                ok++;
                for (int k = 0; k < g.n_tensors; k++) { /* every accepted tensor really lies in the buffer */
                    const char *b = g.tensors[k].data;
                    CHECK(b >= g.buf && b + g.tensors[k].nbytes <= g.buf + g.buf_len);
                }
                ac_st_free(&g);
            } else {
                CHECK(strchr(e2.msg, '\n') == NULL);
            }
            copy[i] = (char)old;
        }
    CHECK(ok > 0); /* some flips (inside data bytes) are harmless */
    free(copy);
}

static void test_hostile(void) {
    const char *p = tmp_path("bad.safetensors");
    float d[4] = {1, 2, 3, 4};
    /* Empty and tiny files. */
    CHECK(write_raw(p, "", 0) == 0 && expect_bad(p));
    CHECK(write_raw(p, "\x02\0\0\0", 4) == 0 && expect_bad(p));
    /* Absurd header lengths. */
    uint8_t huge[16] = {0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x7f, '{', '}'};
    CHECK(write_raw(p, huge, 16) == 0 && expect_bad(p));
    uint8_t big[16] = {0, 0, 0, 0, 1, 0, 0, 0, '{', '}'}; /* 4 GiB */
    CHECK(write_raw(p, big, 16) == 0 && expect_bad(p));
    uint8_t over[16] = {9, 0, 0, 0, 0, 0, 0, 0, '{', '}', ' ', ' ', ' ', ' ', ' ', ' '}; /* one byte past */
    CHECK(write_raw(p, over, 16) == 0 && expect_bad(p));
    /* An empty header object is a valid, empty file. */
    ac_st_file f;
    ac_err err;
    CHECK(write_st(p, "{}", NULL, 0) == 0 && ac_st_read(p, &f, &err) == 0 && f.n_tensors == 0);
    ac_st_free(&f);
    /* Not JSON, not an object, garbage after the JSON, NUL inside. */
    CHECK(write_st(p, "hello", NULL, 0) == 0 && expect_bad(p));
    CHECK(write_st(p, "[1,2]", NULL, 0) == 0 && expect_bad(p));
    CHECK(write_st(p, "{} x", NULL, 0) == 0 && expect_bad(p));
    CHECK(write_st(p, "{\"a\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0,4]}}{}", d, 4) == 0 && expect_bad(p));
    /* Offsets out of range / reversed / wrong length. */
    CHECK(write_st(p, "{\"a\":{\"dtype\":\"F32\",\"shape\":[4],\"data_offsets\":[0,16]}}", d, 12) == 0 && expect_bad(p));
    CHECK(write_st(p, "{\"a\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[16,20]}}", d, 16) == 0 && expect_bad(p));
    CHECK(write_st(p, "{\"a\":{\"dtype\":\"F32\",\"shape\":[0],\"data_offsets\":[8,4]}}", d, 16) == 0 && expect_bad(p));
    CHECK(write_st(p, "{\"a\":{\"dtype\":\"F32\",\"shape\":[3],\"data_offsets\":[0,16]}}", d, 16) == 0 && expect_bad(p));
    CHECK(write_st(p, "{\"a\":{\"dtype\":\"F16\",\"shape\":[4],\"data_offsets\":[0,16]}}", d, 16) == 0 && expect_bad(p));
    CHECK(write_st(p, "{\"a\":{\"dtype\":\"I64\",\"shape\":[4],\"data_offsets\":[0,16]}}", d, 16) == 0 && expect_bad(p));
    CHECK(write_st(p, "{\"a\":{\"dtype\":\"F32\",\"shape\":[4],\"data_offsets\":[0,1e300]}}", d, 16) == 0 && expect_bad(p));
    CHECK(write_st(p, "{\"a\":{\"dtype\":\"F32\",\"shape\":[4],\"data_offsets\":[-16,0]}}", d, 16) == 0 && expect_bad(p));
    CHECK(write_st(p, "{\"a\":{\"dtype\":\"F32\",\"shape\":[4],\"data_offsets\":[0.5,16.5]}}", d, 16) == 0 && expect_bad(p));
    CHECK(write_st(p, "{\"a\":{\"dtype\":\"F32\",\"shape\":[4],\"data_offsets\":[0]}}", d, 16) == 0 && expect_bad(p));
    CHECK(write_st(p, "{\"a\":{\"dtype\":\"F32\",\"shape\":[4],\"data_offsets\":[0,16,32]}}", d, 16) == 0 && expect_bad(p));
    CHECK(write_st(p, "{\"a\":{\"dtype\":\"F32\",\"shape\":[4],\"data_offsets\":\"0,16\"}}", d, 16) == 0 && expect_bad(p));
    CHECK(write_st(p, "{\"a\":{\"dtype\":\"F32\",\"shape\":[4]}}", d, 16) == 0 && expect_bad(p));
    /* dtypes. */
    CHECK(write_st(p, "{\"a\":{\"dtype\":\"F33\",\"shape\":[4],\"data_offsets\":[0,16]}}", d, 16) == 0 && expect_bad(p));
    CHECK(write_st(p, "{\"a\":{\"dtype\":\"f32\",\"shape\":[4],\"data_offsets\":[0,16]}}", d, 16) == 0 && expect_bad(p));
    CHECK(write_st(p, "{\"a\":{\"dtype\":32,\"shape\":[4],\"data_offsets\":[0,16]}}", d, 16) == 0 && expect_bad(p));
    CHECK(write_st(p, "{\"a\":{\"shape\":[4],\"data_offsets\":[0,16]}}", d, 16) == 0 && expect_bad(p));
    /* Shapes: negative, fractional, overflow, too many dims, over the tensor limit, not an array. */
    CHECK(write_st(p, "{\"a\":{\"dtype\":\"F32\",\"shape\":[-4],\"data_offsets\":[0,16]}}", d, 16) == 0 && expect_bad(p));
    CHECK(write_st(p, "{\"a\":{\"dtype\":\"F32\",\"shape\":[2.5],\"data_offsets\":[0,10]}}", d, 16) == 0 && expect_bad(p));
    CHECK(write_st(p, "{\"a\":{\"dtype\":\"F32\",\"shape\":[4294967296,4294967296,4294967296],\"data_offsets\":[0,0]}}", d, 16) == 0 && expect_bad(p));
    CHECK(write_st(p, "{\"a\":{\"dtype\":\"U8\",\"shape\":[4294967296,4294967296,0],\"data_offsets\":[0,0]}}", d, 16) == 0 && expect_bad(p));
    CHECK(write_st(p, "{\"a\":{\"dtype\":\"F32\",\"shape\":[1,1,1,1,1,1,1,1,4],\"data_offsets\":[0,16]}}", d, 16) == 0 && expect_bad(p));
    CHECK(write_st(p, "{\"a\":{\"dtype\":\"F32\",\"shape\":4,\"data_offsets\":[0,16]}}", d, 16) == 0 && expect_bad(p));
    CHECK(write_st(p, "{\"a\":{\"dtype\":\"F32\",\"shape\":[\"4\"],\"data_offsets\":[0,16]}}", d, 16) == 0 && expect_bad(p));
    CHECK(write_st(p, "{\"a\":{\"dtype\":\"F32\",\"shape\":[4],\"data_offsets\":[0,16]}}", d, 16) == 0);
    CHECK(ac_st_read(p, &f, &err) == 0);
    ac_st_free(&f);
    setenv("ATTNCAP_MAX_TENSOR_ELEMS", "3", 1);
    CHECK(ac_st_read(p, &f, &err) != 0 && strstr(err.msg, "ATTNCAP_MAX_TENSOR_ELEMS"));
    unsetenv("ATTNCAP_MAX_TENSOR_ELEMS");
    /* Duplicates, metadata that isn't string -> string, a non-object entry. */
    CHECK(write_st(p, "{\"a\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0,4]},\"a\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[4,8]}}", d, 16) == 0 && expect_bad(p));
    CHECK(write_st(p, "{\"__metadata__\":{\"k\":1}}", NULL, 0) == 0 && expect_bad(p));
    CHECK(write_st(p, "{\"__metadata__\":{\"k\":{\"x\":\"y\"}}}", NULL, 0) == 0 && expect_bad(p));
    CHECK(write_st(p, "{\"__metadata__\":[\"k\"]}", NULL, 0) == 0 && expect_bad(p));
    CHECK(write_st(p, "{\"__metadata__\":{\"k\":\"a\"},\"__metadata__\":{\"k\":\"b\"}}", NULL, 0) == 0 && expect_bad(p));
    CHECK(write_st(p, "{\"a\":5}", NULL, 0) == 0 && expect_bad(p));
    /* Deeply nested JSON: cJSON's nesting limit, not a stack overflow. */
    char deep[6000];
    size_t k = 0;
    k += (size_t)sprintf(deep, "{\"a\":");
    for (int i = 0; i < 2500; i++) deep[k++] = '[';
    for (int i = 0; i < 2500; i++) deep[k++] = ']';
    deep[k++] = '}', deep[k] = 0;
    CHECK(write_st(p, deep, NULL, 0) == 0 && expect_bad(p));
    /* A directory and a missing file. */
    CHECK(expect_bad(test_tmpdir()));
    CHECK(expect_bad(tmp_path("does-not-exist.safetensors")));
}

static void test_write_errors(void) {
    ac_st_writer w;
    ac_st_writer_init(&w);
    ac_err err = {0};
    float x = 1;
    int64_t s1[1] = {1}, neg[1] = {-1};
    CHECK(ac_st_writer_add(&w, "x", AC_ST_F32, 1, s1, &x, &err) == 0);
    CHECK(ac_st_writer_add(&w, "n", AC_ST_F32, 1, neg, &x, &err) != 0);
    CHECK(ac_st_writer_add(&w, "__metadata__", AC_ST_F32, 1, s1, &x, &err) != 0);
    CHECK(ac_st_write(&w, "/nonexistent-dir/x.safetensors", &err) != 0 && strstr(err.msg, "/nonexistent-dir/x.safetensors"));
    CHECK(ac_st_write(&w, test_tmpdir(), &err) != 0); /* a directory */
    ac_st_writer_free(&w);
}

/* A file of 1 MB or more is mapped, a smaller one read; either way the same tensors as a parse of the
 * file's bytes in memory (ac_st_read_mem, which copies), and a mapped one stays readable after the
 * file is replaced by a rename, as our writers replace files. */
static void test_mapped_and_read_alike(void) {
    ac_err err;
    for (int big = 0; big <= 1; big++) {
        const int64_t n = big ? 300000 : 1000; /* 1.2 MB, 4 KB */
        float *x = malloc(sizeof *x * (size_t)n);
        for (int64_t i = 0; i < n; i++) x[i] = (float)i * 0.25f - 7.0f;
        ac_st_writer w;
        ac_st_writer_init(&w);
        CHECK(ac_st_writer_add(&w, "x", AC_ST_F32, 1, &n, x, &err) == 0);
        char path[4096];
        snprintf(path, sizeof path, "%s", tmp_path("mapped.safetensors"));
        CHECKF(ac_st_write(&w, path, &err) == 0, "%s", err.msg);
        ac_st_file f, g;
        CHECKF(ac_st_read(path, &f, &err) == 0, "%s", err.msg);
        CHECKF(f.mapped == big, "a %s file is %s", big ? "1.2 MB" : "4 KB", f.mapped ? "mapped" : "read");
        CHECK(ac_st_read_mem(f.buf, f.buf_len, "copy", &g, &err) == 0 && !g.mapped);
        const ac_st_tensor *a = ac_st_find(&f, "x"), *b = ac_st_find(&g, "x");
        CHECK(a && b && a->nbytes == sizeof *x * (size_t)n && !memcmp(a->data, b->data, a->nbytes) &&
              !memcmp(a->data, x, a->nbytes));
        for (int64_t i = 0; i < n; i++) x[i] = -1.0f;
        CHECKF(ac_st_write(&w, path, &err) == 0, "%s", err.msg); /* replaced: the mapping keeps the old file */
        CHECK(a && !memcmp(a->data, b->data, a->nbytes));
        ac_st_free(&f), ac_st_free(&g), ac_st_writer_free(&w);
        CHECK(f.buf == NULL && !f.mapped);
        free(x);
    }
    /* a FIFO is refused at once (opened without waiting for a writer), as ac_read_file refuses it */
    const char *fifo = tmp_path("fifo.safetensors");
    unlink(fifo);
    if (mkfifo(fifo, 0600) == 0) {
        ac_st_file f;
        CHECKF(ac_st_read(fifo, &f, &err) == -1 && strstr(err.msg, "not a file"), "%s", err.msg);
        unlink(fifo);
    }
}

int main(void) {
    RUN(test_round_trip);
    RUN(test_mapped_and_read_alike);
    RUN(test_python_fixture);
    RUN(test_hostile);
    RUN(test_write_errors);
    return TEST_EXIT();
}
