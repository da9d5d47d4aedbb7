/* attncap/safetensors.h: not part of the stable API; may change in any release (the stable core: attncap.h). */
/* attncap/safetensors.h: read and write the safetensors format (8-byte little-endian header length,
 * JSON header {name: {dtype, shape, data_offsets}, "__metadata__": {str: str}}, then raw data).
 * Used for models, checkpoints and feature caches. Readers validate every offset, shape and length
 * against the file size and the limits in common.h: a hostile file gives an error, never a crash. */
#ifndef ATTNCAP_SAFETENSORS_H
#define ATTNCAP_SAFETENSORS_H
#include <stddef.h>
#include <stdint.h>

#include "attncap/common.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef enum { AC_ST_F32, AC_ST_F16, AC_ST_I32, AC_ST_U8, AC_ST_I64 } ac_st_dtype;

#define AC_ST_MAX_DIMS 8
typedef struct ac_st_tensor {
    char *name;
    ac_st_dtype dtype;
    int ndim;
    int64_t shape[AC_ST_MAX_DIMS];
    const void *data; /* points into the file buffer (reader) or caller memory (writer) */
    size_t nbytes;
    uint64_t offset;  /* reader: where the data starts in the file (for mapping it) */
} ac_st_tensor;

typedef struct ac_st_file {
    int n_tensors;
    ac_st_tensor *tensors;
    int n_meta;
    char **meta_keys, **meta_values; /* __metadata__ (string -> string) */
    char *buf;                       /* owns the file contents (read-only when mapped) */
    size_t buf_len;
    int mapped;                      /* buf is a mapping of the file (ac_st_free unmaps it) */
} ac_st_file;

/* Reads and validates a whole file. One of 1 MB or more is mapped rather than copied: the same bytes,
 * read-only. Our writers replace files by renaming (ac_st_write), never in place, so a mapping stays
 * valid; a file that another program cuts short while it is mapped would end the process (SIGBUS) on
 * the next read of a lost page: the price every reader that maps files pays. */
int ac_st_read(const char *path, ac_st_file *f, ac_err *err);
/* Reads and validates only the header (offsets checked against the file size): names, shapes and
 * metadata without loading the data; every tensor's data pointer is NULL. */
int ac_st_read_header(const char *path, ac_st_file *f, ac_err *err);
/* Parses a copy of data[0..len) (name is used in error messages). */
int ac_st_read_mem(const void *data, size_t len, const char *name, ac_st_file *f, ac_err *err);
void ac_st_free(ac_st_file *f);
const ac_st_tensor *ac_st_find(const ac_st_file *f, const char *name);
const char *ac_st_meta(const ac_st_file *f, const char *key); /* NULL if absent */
/* Copies a tensor into float32 (converting from f16 / f32), checking its element count == n. */
int ac_st_to_f32(const ac_st_tensor *t, float *out, size_t n, const char *path, ac_err *err);

/* Writer: collect tensors and metadata, then write atomically (temp file + fsync + rename). */
typedef struct ac_st_writer {
    int n_tensors, cap_tensors;
    ac_st_tensor *tensors; /* data pointers borrowed: must stay alive until ac_st_write */
    int n_meta, cap_meta;
    char **meta_keys, **meta_values; /* copied */
} ac_st_writer;
void ac_st_writer_init(ac_st_writer *w);
int ac_st_writer_add(ac_st_writer *w, const char *name, ac_st_dtype dtype, int ndim, const int64_t *shape,
                     const void *data, ac_err *err);
int ac_st_writer_meta(ac_st_writer *w, const char *key, const char *value, ac_err *err);
int ac_st_write(const ac_st_writer *w, const char *path, ac_err *err);
void ac_st_writer_free(ac_st_writer *w);
#ifdef __cplusplus
}
#endif
#endif
