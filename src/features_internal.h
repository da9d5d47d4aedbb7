/* features_internal.h: what the feature cache (features.c) and its merge (features_merge.c) share.
 * Defined in features_merge.c, which is built once: features.c is built per instruction set. */
#ifndef ATTNCAP_FEATURES_INTERNAL_H
#define ATTNCAP_FEATURES_INTERNAL_H
#include <cjson/cJSON.h>
#include <stddef.h>

/* Two caches' encoder identities agree on what makes their rows interchangeable: the file's SHA-256,
 * the layer, the input size and the grid. */
int ac_features_same_encoder(const cJSON *a, const cJSON *b);
/* "sha256 1234abcd..., layer L, size N", for messages. */
void ac_features_describe_encoder(const cJSON *id, char *buf, size_t n);
#endif
