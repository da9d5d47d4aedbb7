/* caption_output.h: what `attncap caption` prints and writes per photo, and its inputs and totals.
 * cmd_caption.c parses the flags; this is the rest of the command's user-facing side. */
#ifndef ATTNCAP_CLI_CAPTION_OUTPUT_H
#define ATTNCAP_CLI_CAPTION_OUTPUT_H
#include "attncap/captioner.h"
#include "attncap/overlay.h"
#include "inputs.h"
#include "progress.h"

/* The results' settings and running totals (the user pointer of ac_captioner_batch). */
typedef struct cli_caption_view {
    const ac_captioner *cap;
    int json, attention, nbest;
    int given; /* --given: the plain line carries the caption's log-probability */
    const char *ov_dir;
    const ac_overlay_opts *oo;
    const ac_font *font;
    const cli_strv *stems; /* photo i's overlay folder name (ac_overlay_stems) */
    cli_progress prog;
    int failures, done_ok;
    double t_dec, t_cnn, t_bs, t_ov;
} cli_caption_view;

/* One photo's result, in input order: its line (or JSON) on stdout, its overlays, or its error. */
void cli_caption_on_result(void *view, const ac_batch_result *r);

/* The photos of the arguments: files, directories walked, "-" for a list on stdin (read once).
 * Prints its errors; -1 on a fatal one. */
int cli_caption_gather(char **args, int n, cli_strv *paths);

/* --skip-existing: drops the photos whose DIR/<stem> exists (folders are written whole, so those were
 * done). Returns how many were dropped. */
int cli_caption_skip_done(const char *ov_dir, cli_strv *paths, cli_strv *stems);

/* --verbose: images/s and the time split per photo on stderr. */
void cli_caption_print_timing(const cli_caption_view *v, int n, const ac_batch_stats *bs, double t_run, double t_load,
                              double cpu_run);
#endif
