/* alloc_internal.h: the one place the library's allocations go through (alloc.c), and the test hook
 * that makes them fail.
 *
 * Every malloc, calloc, realloc, aligned_alloc, strdup and strndup of the library's own sources
 * (src/ but src/cli/) is one of these; what they return is freed with free(). Each behaves as the C
 * library's function of that name, except that under an installed fault (ac_test_fault_install) it
 * returns NULL as if memory ran out (ac_realloc then leaves its block as it was). The third-party
 * libraries' own allocations (libpng, libjpeg-turbo, stb_image, OpenBLAS) do not come here; cJSON's
 * do while a fault is installed (ac_test_fault_install sets its hooks). */
#ifndef ATTNCAP_ALLOC_INTERNAL_H
#define ATTNCAP_ALLOC_INTERNAL_H
#include <stddef.h>

void *ac_malloc(size_t n) __attribute__((malloc, alloc_size(1)));
void *ac_calloc(size_t n, size_t size) __attribute__((malloc, alloc_size(1, 2)));
void *ac_realloc(void *p, size_t n) __attribute__((alloc_size(2)));
void *ac_aligned_alloc(size_t align, size_t n) __attribute__((malloc, alloc_size(2)));
char *ac_strdup(const char *s) __attribute__((malloc));
char *ac_strndup(const char *s, size_t n) __attribute__((malloc));

/* For tests only (SQLite's SQLITE_TESTCTRL_FAULT_INSTALL): from now on the nth allocation (1 = the
 * next) fails, and with repeat every one after it too; nth <= 0 removes the fault. Counts the
 * allocations of every thread (one atomic word; a test wanting a reproducible walk runs one
 * thread). With no fault installed an allocation costs one relaxed atomic load more than the C
 * library's. */
void ac_test_fault_install(int nth, int repeat);
/* How many allocations failed since the last install (0 when the nth was never reached). */
int ac_test_fault_count(void);
/* How many allocations are still to come before the nth (a test installing nth = INT_MAX counts a
 * call's allocations: INT_MAX - 1 - pending). */
int ac_test_fault_pending(void);
#endif
