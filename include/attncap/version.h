/* attncap/version.h: not part of the stable API; may change in any release.
 * The version macros and ac_version() now live in the core header, attncap/attncap.h; this header
 * includes it for programs that included it before. */
#ifndef ATTNCAP_VERSION_H
#define ATTNCAP_VERSION_H
#include "attncap/attncap.h"
#ifdef __cplusplus
extern "C" {
#endif
#ifdef __cplusplus
}
#endif
#endif
