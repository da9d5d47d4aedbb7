/* model_internal.h: the model family's private functions (src/model/). */
#ifndef ATTNCAP_MODEL_INTERNAL_H
#define ATTNCAP_MODEL_INTERNAL_H
#include <stdint.h>

#include "attncap/common.h"

/* Reads a metadata "training_photos" record (model.h): a JSON object of exactly "hash" (the hash's
 * name), "n" (the count, optional) and "hashes" (8 hex digits per photo, strictly ascending). With
 * hashes non-NULL, *hashes gets the *n values (malloc'd, caller frees); with NULL it only checks.
 * -1 with one line naming path and the key when the record is malformed (ac_model_load refuses such
 * a file; eval's ac_model_training_photos_hits reads the same record by the same rules). */
int ac_training_photos_parse(const char *json, const char *path, uint32_t **hashes, int *n, ac_err *err);
#endif
