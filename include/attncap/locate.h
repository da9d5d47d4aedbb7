/* attncap/locate.h: not part of the stable API; may change in any release (the stable core: attncap.h). */
/* attncap/locate.h: where the model, its encoder and the shared data are, when not given.
 *
 * The only module that reads the environment (ATTNCAP_MODEL, ATTNCAP_ENCODER, ATTNCAP_DATA) or the
 * executable's path (/proc/self/exe) to find files; every other function takes paths. The CLI (and
 * ac_captioner_init, when given NULL paths) call it. */
#ifndef ATTNCAP_LOCATE_H
#define ATTNCAP_LOCATE_H
#include "attncap/common.h"

#ifdef __cplusplus
extern "C" {
#endif

/* The model file's name where ac_find_model looks when no path is given: AC_DEFAULT_MODEL_NAME (attncap.h). */

/* The shared data directory: $ATTNCAP_DATA if set, else the first of "../shared" relative to the
 * current directory, to the executable's directory and its parents that exists. Returns NULL if
 * none. The returned string is owned by the caller (free). */
char *ac_find_data_dir(void);
/* rel (an encoder's file: "encoders/...") in the data directory, for a `what` ("encoder", "classifier")
 * not given; NULL with err (AC_ERR_NO_ENCODER) when there is no data directory. malloc'd. */
char *ac_data_file(const char *rel, const char *what, ac_err *err);
/* $name's value, or NULL when it is unset or empty: how the library outside base reads a variable of the
 * environment (the Slurm array of ac_shard_parse). The string belongs to the environment. */
const char *ac_env(const char *name);
/* The model path: flag if not NULL, else $ATTNCAP_MODEL, else models/AC_DEFAULT_MODEL_NAME in the
 * current directory or beside the executable (its directory and up to three parents), else the only
 * models/ *.safetensors there, else AC_DEFAULT_MODEL_NAME in the installed data directories: the
 * user's ($XDG_DATA_HOME/attncap, else ~/.local/share/attncap), then the install prefix's
 * (PREFIX/share/attncap, compiled in by `make install`). malloc'd. */
int ac_find_model(const char *flag, char **path, ac_err *err);
/* The encoder (flag, $ATTNCAP_ENCODER, else beside the model, ...): ac_find_encoder in encoder.h. */
/* A file a model works with (the detector "yolox_nano.tflite", its "coco_labels.txt"): flag, else
 * $env_name (when not NULL and set), else `file` beside the model, in models/, in the installed data
 * directories, then in ac_find_data_dir()/encoders/. malloc'd. */
int ac_find_companion(const char *flag, const char *env_name, const char *model_path, const char *file, char **path,
                      ac_err *err);

#ifdef __cplusplus
}
#endif
#endif
