/* overlay_flags.c: caption's overlay flags (overlay_flags.h). */
#include "overlay_flags.h"

#include <stdio.h>
#include <string.h>

/* 0 when value is one of the two names of choice 0 (a, a2) or choice 1 (b, b2), with *bit set for
 * choice 1; else says so and returns -1. */
static int choose(const char *flag, const char *value, const char *a, const char *a2, const char *b, const char *b2,
                  unsigned bit, unsigned *flags) {
    if (!strcmp(value, a) || !strcmp(value, a2)) return 0;
    if (!strcmp(value, b) || !strcmp(value, b2)) {
        *flags |= bit;
        return 0;
    }
    fprintf(stderr, "attncap caption: %s is %s or %s, got '%s'\n", flag, a, b, value);
    return -1;
}

int cli_overlay_flags_apply(const cli_overlay_flags *f, unsigned *flags) {
    *flags = f->sheet_only ? AC_OVERLAY_SHEET_ONLY : 0;
    return choose("--style", f->style, "heat", "heat", "spot", "spot", AC_OVERLAY_STYLE_SPOT, flags) ||
                   choose("--base", f->base, "grey", "gray", "colour", "color", AC_OVERLAY_BASE_COLOUR, flags) ||
                   choose("--format", f->format, "png", "png", "jpg", "jpeg", AC_OVERLAY_FORMAT_JPEG, flags) ||
                   choose("--scale", f->scale, "panel", "panel", "absolute", "absolute", AC_OVERLAY_SCALE_ABSOLUTE, flags)
               ? -1
               : 0;
}
