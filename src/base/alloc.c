/* alloc.c: the library's allocations (alloc_internal.h) and the fault a test installs in them. */
#include "alloc_internal.h"

#include <cjson/cJSON.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

/* The library's only test-only state (it holds no other global that changes): 0 while no fault is
 * installed, which is all an allocation reads. Installed: ARMED, REPEAT when every allocation from
 * the nth on fails, bits 32-61 the failures so far, bits 0-31 the allocations left before the one
 * that fails. One word, changed by compare-and-swap, so threads allocating at once each count once. */
static _Atomic uint64_t fault_state;

#define ARMED (1ull << 63)
#define REPEAT (1ull << 62)
#define FAIL_ONE (1ull << 32)
#define FAILS (((1ull << 30) - 1) << 32)
#define LEFT 0xffffffffull

/* 1 when this allocation is to fail. */
static int fault_hit(void) {
    uint64_t s = atomic_load_explicit(&fault_state, memory_order_relaxed);
    if (__builtin_expect(s == 0, 1)) return 0;
    for (;;) {
        uint64_t next;
        int fail = 0;
        if (s & LEFT) next = s - 1;
        else if ((s & FAILS) && !(s & REPEAT)) return 0; /* the one failure happened */
        else {
            next = (s & FAILS) == FAILS ? s : s + FAIL_ONE;
            fail = 1;
        }
        if (atomic_compare_exchange_weak_explicit(&fault_state, &s, next, memory_order_relaxed, memory_order_relaxed))
            return fail;
        if (s == 0) return 0; /* removed meanwhile */
    }
}

void *ac_malloc(size_t n) { return fault_hit() ? NULL : malloc(n); }

void *ac_calloc(size_t n, size_t size) { return fault_hit() ? NULL : calloc(n, size); }

void *ac_realloc(void *p, size_t n) { return fault_hit() ? NULL : realloc(p, n); }

void *ac_aligned_alloc(size_t align, size_t n) { return fault_hit() ? NULL : aligned_alloc(align, n); }

char *ac_strdup(const char *s) { return fault_hit() ? NULL : strdup(s); }

char *ac_strndup(const char *s, size_t n) { return fault_hit() ? NULL : strndup(s, n); }

/* cJSON's hooks follow the fault: its allocations come here while one is installed, and go back to
 * the C library's when it is removed (either way free() frees them). */
void ac_test_fault_install(int nth, int repeat) {
    cJSON_Hooks h = {ac_malloc, free};
    cJSON_InitHooks(nth > 0 ? &h : NULL);
    uint64_t s = 0;
    if (nth > 0) s = ARMED | (repeat ? REPEAT : 0) | (uint64_t)(nth - 1);
    atomic_store(&fault_state, s);
}

int ac_test_fault_count(void) {
    uint64_t s = atomic_load(&fault_state);
    return (int)((s & FAILS) >> 32);
}

int ac_test_fault_pending(void) {
    uint64_t s = atomic_load(&fault_state);
    return (int)(s & LEFT);
}
