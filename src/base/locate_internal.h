/* locate_internal.h: the encoder lookup as the captioner and ac_find_encoder use it (locate.c). */
#ifndef ATTNCAP_LOCATE_INTERNAL_H
#define ATTNCAP_LOCATE_INTERNAL_H
#include "attncap/common.h"

/* The encoder named file (a bare file name; sha256 "" = not recorded): flag, $ATTNCAP_ENCODER, else
 * beside the model, in models/, in the installed data directories, then in ac_find_data_dir()/encoders/.
 * check = 0 skips hashing the file (the caller compares the hash ac_encoder_open computes anyway). */
int ac_locate_encoder(const char *given, const char *model_path, const char *file, const char *sha256, int check,
                      char **path, ac_err *err);
/* 0 if the file's SHA-256 is sha256 (or sha256 is ""), else -1 with a message naming both (file: the
 * model's encoder file name, for the message). */
int ac_encoder_sha_check(const char *path, const char *file, const char *sha256, ac_err *err);
#endif
