/* overlay_flags.c: caption's overlay flags (overlay_flags.h). */
#include "overlay_flags.h"

#include <stdio.h>
#include <string.h>

int cli_overlay_flags_apply(const cli_overlay_flags *f, ac_overlay_opts *oo) {
    if (!strcmp(f->style, "heat")) oo->style = AC_OVERLAY_HEAT;
    else if (!strcmp(f->style, "spot")) oo->style = AC_OVERLAY_SPOT;
    else {
        fprintf(stderr, "attncap caption: --style is heat or spot, got '%s'\n", f->style);
        return -1;
    }
    if (!strcmp(f->base, "grey") || !strcmp(f->base, "gray")) oo->base = AC_OVERLAY_GREY;
    else if (!strcmp(f->base, "colour") || !strcmp(f->base, "color")) oo->base = AC_OVERLAY_COLOUR;
    else {
        fprintf(stderr, "attncap caption: --base is grey or colour, got '%s'\n", f->base);
        return -1;
    }
    if (f->size > 0) oo->max_side = f->size, oo->upscale = 1; /* asked for: that size, small photos too */
    oo->sheet_only = f->sheet_only;
    if (!strcmp(f->format, "png")) oo->jpeg = 0;
    else if (!strcmp(f->format, "jpg") || !strcmp(f->format, "jpeg")) oo->jpeg = 1;
    else {
        fprintf(stderr, "attncap caption: --format is png or jpg, got '%s'\n", f->format);
        return -1;
    }
    if (!strcmp(f->scale, "panel")) oo->scale_absolute = 0;
    else if (!strcmp(f->scale, "absolute")) oo->scale_absolute = 1;
    else {
        fprintf(stderr, "attncap caption: --scale is panel or absolute, got '%s'\n", f->scale);
        return -1;
    }
    return 0;
}
