/* overlay_flags.h: caption's overlay flags (--size, --style, --base, --sheet-only, --scale, --format)
 * and their help, onto the core's AC_OVERLAY_* flags and ac_captioner_set_overlay_size (attncap.h). */
#ifndef ATTNCAP_CLI_OVERLAY_FLAGS_H
#define ATTNCAP_CLI_OVERLAY_FLAGS_H
#include "attncap/attncap.h"

typedef struct cli_overlay_flags {
    int size; /* 0: the default, and a smaller photo is not enlarged (ac_captioner_set_overlay_size's) */
    const char *style, *base;
    int sheet_only;
    const char *scale, *format;
} cli_overlay_flags;
#define CLI_OVERLAY_FLAGS_INIT {0, "heat", "grey", 0, "panel", "png"}

#define CLI_OVERLAY_OPTS(f)                                                                                         \
    OPT_INT("--size", &(f).size, 64, 8192), OPT_STR("--style", &(f).style), OPT_STR("--base", &(f).base),           \
        OPT_FLAG("--sheet-only", NULL, &(f).sheet_only), OPT_STR("--scale", &(f).scale), OPT_STR("--format", &(f).format)

#define CLI_OVERLAY_HELP                                                                                            \
    "  --size N          long side of overlays and sheets in pixels (default 1024; a smaller photo keeps\n"             \
    "                    its size unless --size is given)\n"                                                          \
    "  --style S         heat (default: a colour map over the photo) or spot (the paper's white highlight)\n"         \
    "  --base B          under the heat map: grey (default: the map's colours read alone) or colour (the\n"           \
    "                    photo's own colours: a red toy stays red)\n"                                                  \
    "  --sheet-only      write DIR/<stem>/sheet.png only, not the per-word PNGs\n"                                   \
    "  --scale S         panel (default: each map from its least to its most weight) or absolute (a cell's\n"       \
    "                    weight as it is, 0..1: near-uniform attention stays faint); every panel shows\n"          \
    "                    the word's peak weight and the entropy H of its attention (1: spread evenly)\n"        \
    "  --format F        png (default) or jpg (quality 90: about a fifth of the bytes)\n"

/* The AC_OVERLAY_* flags of ac_result_write_overlays for f's names into *flags (--size is f->size);
 * prints the problem and returns -1 on a bad value. */
int cli_overlay_flags_apply(const cli_overlay_flags *f, unsigned *flags);
#endif
