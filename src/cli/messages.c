/* The CLI's hints for library errors: see messages.h. */
#include "messages.h"

#include <stdarg.h>
#include <stdio.h>

int cli_errf(ac_err *err, const char *fmt, ...) {
    if (!err) return -1;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(err->msg, sizeof err->msg, fmt, ap);
    va_end(ap);
    for (char *p = err->msg; *p; p++)
        if ((unsigned char)*p < 0x20 || *p == 0x7f) *p = '?';
    err->code = AC_ERR_FAILED;
    return -1;
}

const char *cli_hint(const ac_err *err) {
    switch ((ac_err_code)err->code) {
    case AC_ERR_NO_MODEL: return " (pass --model FILE)";
    case AC_ERR_NO_ENCODER: return " (pass --encoder FILE)";
    case AC_ERR_EXISTS: return " (use --force to replace it, or choose another output directory)";
    case AC_ERR_OTHER_ENCODER: return " (use another --out directory)";
    case AC_ERR_NOT_FEATURES: return " (make it with attncap features --out DIR)";
    case AC_ERR_RESUME_OPTIONS: return " (leave those flags out to resume as the run started, or add --force to go on with the checkpoint's)";
    case AC_ERR_OPTIONS: return " (try --help)";
    case AC_ERR_BAD_IMAGE:
    case AC_ERR_FAILED: break;
    }
    return "";
}
