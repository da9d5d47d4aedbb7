/* locate_internal.h: the encoder lookup as the captioner uses it (locate.c). */
#ifndef ATTNCAP_LOCATE_INTERNAL_H
#define ATTNCAP_LOCATE_INTERNAL_H
#include "attncap/captioner.h"

/* ac_find_encoder; check = 0 skips hashing the file (the caller compares the hash ac_encoder_open
 * computes anyway). */
int ac_locate_encoder(const char *given, const char *model_path, const ac_encoder_id *id, int check, char **path,
                      ac_err *err);
/* 0 if the file's SHA-256 is id->sha256 (or none is recorded), else -1 with a message naming both. */
int ac_encoder_sha_check(const char *path, const ac_encoder_id *id, ac_err *err);
#endif
