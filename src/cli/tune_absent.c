/* attncap tune --absent: a copy model's absent priors matched on held-out photos (tune.h
 * ac_absent_match), printed, and with --write recorded in the model file (config.absent). */
#include <stdio.h>

#include "attncap/objects.h"
#include "attncap/tune.h"
#include "tune_absent.h"

int tune_absent(ac_model *m, const ac_feature_cache *fc, const ac_rows_regions *regions,
                const ac_tune_photo *photos, int n, const char *model_path, int write, int threads, ac_err *err) {
    ac_absent_match_report r;
    if (ac_absent_match(m, fc, regions, photos, n, &m->decode, 3, threads, &r, err)) return -1;
    printf("absent priors matched on %d photos in %d rounds: captions naming an object no region shows\n"
           "object                 refs   before  after  prior\n", r.photos, r.rounds);
    double tb = 0, ta = 0, tr = 0;
    for (int c = 0; c < AC_COPY_CATEGORIES; c++) {
        tb += r.said_before[c], ta += r.said_after[c], tr += r.refs[c];
        if (r.refs[c] >= 1 || r.said_before[c] >= 1 || r.said_after[c] >= 1)
            printf("%-22s %6.1f %6.0f %6.0f %6.2f\n", ac_object_name(c), r.refs[c], r.said_before[c], r.said_after[c], r.prior[c]);
    }
    printf("%-22s %6.1f %6.0f %6.0f\n", "all", tr, tb, ta);
    if (!write) return 0;
    if (ac_model_set_absent(model_path, r.prior, err)) return -1;
    printf("recorded in %s (config.absent)\n", model_path);
    return 0;
}
