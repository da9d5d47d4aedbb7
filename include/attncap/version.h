/* attncap/version.h: the library's version.
 *
 * AC_VERSION is the version of the headers a program was compiled with; ac_version() is the version
 * of the library it runs with (they differ when a shared libattncap was replaced underneath). */
#ifndef ATTNCAP_VERSION_H
#define ATTNCAP_VERSION_H

#define AC_VERSION_MAJOR 0
#define AC_VERSION_MINOR 1
#define AC_VERSION_PATCH 0
#define AC_VERSION "0.1.0"

#ifdef __cplusplus
extern "C" {
#endif

/* "MAJOR.MINOR.PATCH" of the library linked in; a static string. */
const char *ac_version(void);

#ifdef __cplusplus
}
#endif

#endif
