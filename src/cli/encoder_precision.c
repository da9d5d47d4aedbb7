/* encoder_precision.c: --precision on an encoder alone (options.h), for the commands that run the
 * encoder without a captioner (classify, features) or reach into one (ground): over the unstable
 * encoder.h, apart from options.c, which uses the core API only. */
#include "options.h"

#include "attncap/encoder.h"

int cli_set_precision(const char *value, ac_encoder *enc, ac_err *err) {
    ac_precision p;
    if (ac_precision_parse(cli_precision_name(value), &p, err) < 0) return -1;
    return ac_encoder_set_precision(enc, p, err);
}
