/* precision.c: the names of the CNN's arithmetics (cnn.h) and which this CPU runs. */
#include <string.h>

#include "attncap/cnn.h"
#include "cnn_internal.h"

int ac_precision_available(ac_precision p) {
    return p == AC_PRECISION_F32 || p == AC_PRECISION_AUTO || p == AC_PRECISION_INT8 || (p == AC_PRECISION_BF16X2 && ac_cnn_bf16_supported());
}

static const char *const PRECISION_NAMES[] = {"f32", "bf16x2", "int8"};

int ac_precision_parse(const char *name, ac_precision *p, ac_err *err) {
    if (!strcmp(name, "auto")) return *p = AC_PRECISION_AUTO, 0;
    for (int k = 0; k < 3; k++)
        if (!strcmp(name, PRECISION_NAMES[k])) return *p = (ac_precision)k, 0;
    return ac_errf(err, "unknown precision '%.60s' (auto, f32, bf16x2 or int8)", name);
}

