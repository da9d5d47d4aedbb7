/* What the CLI adds to a library error: the library never names command-line flags, so for the
 * failures a user fixes with a flag (ac_err.code) the CLI says which one. */
#ifndef ATTNCAP_CLI_MESSAGES_H
#define ATTNCAP_CLI_MESSAGES_H
#include "attncap/common.h"

/* " (pass --model FILE)" and the like for err->code, or "": append it to err->msg. */
const char *cli_hint(const ac_err *err);

#endif
