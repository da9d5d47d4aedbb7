/* pixels.c: room for a photo's pixels (image_internal.h). */
#include <stdlib.h>
#include <sys/mman.h>

#include "image_internal.h"
#include "alloc_internal.h"

void *ac_image_pixels_alloc(size_t bytes) {
    enum { HUGE = 2u << 20 };
    if (bytes < HUGE) return ac_malloc(bytes);
    const size_t n = (bytes + HUGE - 1) / HUGE * HUGE;
    void *p = ac_aligned_alloc(HUGE, n);
#if defined(MADV_HUGEPAGE)
    if (p) (void)madvise(p, n, MADV_HUGEPAGE); /* advice only: its failure changes nothing */
#endif
    return p;
}
