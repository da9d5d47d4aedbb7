/* common_internal.h: the library's system-error text (common.c). */
#ifndef ATTNCAP_COMMON_INTERNAL_H
#define ATTNCAP_COMMON_INTERNAL_H

/* strerror(e) in the messages' case style: its first letter lowercase ("no such file or directory"),
 * as every other message of the library. The text is in a thread-local buffer, valid until the
 * thread's next call. */
const char *ac_strerror(int e);
#endif
