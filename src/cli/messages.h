/* What the CLI adds to a library error: the library never names command-line flags, so for the
 * failures a user fixes with a flag (ac_err.code) the CLI says which one. */
#ifndef ATTNCAP_CLI_MESSAGES_H
#define ATTNCAP_CLI_MESSAGES_H
#include "attncap/attncap.h"

/* As the library's errors are made: the message formatted into err (when not NULL) on one line (a
 * control byte becomes '?'), code AC_ERR_FAILED; returns -1, so `return cli_errf(err, ...)` works. */
int cli_errf(ac_err *err, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* " (pass --model FILE)" and the like for err->code, or "": append it to err->msg. */
const char *cli_hint(const ac_err *err);

#endif
