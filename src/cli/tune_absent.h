/* tune_absent.c: attncap tune --absent (a copy model's absent priors matched on held-out photos). */
#ifndef ATTNCAP_CLI_TUNE_ABSENT_H
#define ATTNCAP_CLI_TUNE_ABSENT_H
#include "attncap/tune.h"
/* Matches, prints the priors, and with write records them in model_path; -1 with err on failure. */
int tune_absent(ac_model *m, const ac_feature_cache *fc, const ac_rows_regions *regions, const ac_tune_photo *photos,
                int n, const char *model_path, int write, int threads, ac_err *err);
#endif
