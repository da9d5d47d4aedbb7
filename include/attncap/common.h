/* attncap/common.h: not part of the stable API; may change in any release.
 * Errors, limits, atomic files, data search path.
 *
 * Errors: every fallible library call takes an `ac_err *` (may be NULL) and returns 0 on success,
 * -1 on failure with a one-line message in err->msg that names the file and the problem.
 * The library never prints and never exits; the CLI prints err->msg and exits non-zero. */
#ifndef ATTNCAP_COMMON_H
#define ATTNCAP_COMMON_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "attncap/attncap.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ac_err and ac_err_code: attncap.h. */

/* Formats a message into err (if not NULL), sets err->code = AC_ERR_FAILED and returns -1, so
 * `return ac_errf(err, ...)` works. ac_errc sets the given code. */
int ac_errf(ac_err *err, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
int ac_errc(ac_err *err, ac_err_code code, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
/* Prepends "prefix: " to an existing message (adds context on the way up; the code stays). Returns -1. */
int ac_err_prefix(ac_err *err, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* Limits that keep a hostile file from exhausting the machine. Each can be raised through the
 * named environment variable; the error message names the limit and the variable. */
typedef struct ac_limits {
    uint64_t max_image_pixels;    /* ATTNCAP_MAX_IMAGE_PIXELS, default 100e6 */
    uint64_t max_file_bytes;      /* ATTNCAP_MAX_FILE_BYTES, default 2 GiB (models, caches, JSON) */
    uint64_t max_tensor_elems;    /* ATTNCAP_MAX_TENSOR_ELEMS, default 1<<30 */
    uint64_t max_caption_bytes;   /* ATTNCAP_MAX_CAPTION_BYTES, default 4096 */
    uint64_t max_vocab;           /* ATTNCAP_MAX_VOCAB, default 1<<20 */
} ac_limits;
/* The limits in force: defaults overridden by the environment. */
ac_limits ac_limits_get(void);

/* Opens a regular file for reading and returns its descriptor, or -1 with a message naming what the
 * path is instead (a directory, a FIFO, a device, a socket). A FIFO is refused without waiting for a
 * writer: the open does not block. */
int ac_open_regular(const char *path, ac_err *err);

/* Reads a whole file (refusing directories, FIFOs, devices, and files over max_bytes) into a
 * malloc'd buffer with a NUL byte appended (not counted in *len). */
int ac_read_file(const char *path, size_t max_bytes, char **data, size_t *len, ac_err *err);

/* Atomic output: write to "<path>.tmp.<pid>", fsync, rename over path. Nothing half-written is ever
 * visible under `path`. Any write error (full disk, unwritable dir) is reported, never ignored. */
typedef struct ac_atomic_file {
    FILE *fp;
    char *final_path;
    char *tmp_path;
    int failed;
} ac_atomic_file;
int ac_atomic_open(ac_atomic_file *af, const char *path, ac_err *err);
int ac_atomic_write(ac_atomic_file *af, const void *data, size_t len, ac_err *err);
int ac_atomic_commit(ac_atomic_file *af, ac_err *err); /* fsync + rename; frees af */
void ac_atomic_abort(ac_atomic_file *af);              /* removes the temp file; frees af */
/* Convenience: the whole buffer atomically. */
int ac_write_file_atomic(const char *path, const void *data, size_t len, ac_err *err);

/* mkdir -p. */
int ac_mkdirs(const char *path, ac_err *err);

/* Monotonic wall-clock seconds. */
double ac_now(void);

/* Joins a and b with '/', malloc'd; NULL when out of memory or when a or b is NULL (an allocation
 * before it failed: callers check once). */
char *ac_path_join(const char *a, const char *b);
/* 1 if path is an existing regular file. */
int ac_is_file(const char *path);
int ac_is_dir(const char *path);

/* SHA-256 of a file, as 64 lowercase hex chars + NUL. */
int ac_sha256_file(const char *path, char hex[65], ac_err *err);
void ac_sha256(const void *data, size_t len, uint8_t out[32]);

/* Float16 conversion (IEEE half, round to nearest even). */
uint16_t ac_f32_to_f16(float f);
float ac_f16_to_f32(uint16_t h);
/* The same for n values, 8 at a time with F16C where the build has it (a model's 11 M weights at
 * load): the same bits as the one-value functions for every input, NaNs and infinities included.
 * src may be unaligned (a safetensors blob). */
void ac_f16_to_f32_n(const void *src, float *dst, size_t n);
void ac_f32_to_f16_n(const float *src, uint16_t *dst, size_t n);

/* The encoder's precision when none is asked for: $ATTNCAP_PRECISION, else "auto" (cnn.h). */
const char *ac_default_precision(void);

/* Thread count for OpenBLAS and our own kernels: $ATTNCAP_THREADS, else the number of cores. */
int ac_default_threads(void);
void ac_set_threads(int n);

#ifdef __cplusplus
}
#endif
#endif
