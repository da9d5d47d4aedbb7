/* caption_output.h: what `attncap caption` prints and writes per photo, and its inputs and totals.
 * cmd_caption.c parses the flags; this is the rest of the command's user-facing side, over the core
 * API alone (attncap.h: a result's lines, overlays and caption.json). */
#ifndef ATTNCAP_CLI_CAPTION_OUTPUT_H
#define ATTNCAP_CLI_CAPTION_OUTPUT_H
#include "attncap/attncap.h"
#include "inputs.h"
#include "progress.h"

/* --skip-existing: the photos done before (their DIR/<stem> exists), kept to print their saved
 * lines (DIR/<stem>/caption.json) in input order among the new ones. */
typedef struct cli_caption_done {
    cli_strv paths, stems;
    int *pos;      /* [paths.n] each done photo's position among all the photos given */
    int *left_pos; /* [photos left] each photo left to caption's position among all */
    int next;      /* done photos printed so far */
} cli_caption_done;

/* The results' settings and running totals (the user pointer of ac_caption_each). */
typedef struct cli_caption_view {
    ac_captioner *cap;
    const cli_strv *paths; /* photo i's path */
    int json, attention, nbest;
    int given; /* --given: the plain line carries the caption's log-probability */
    const char *ov_dir;
    unsigned ov_flags;     /* AC_OVERLAY_* for ac_result_write_overlays */
    const cli_strv *stems; /* photo i's overlay folder name (ac_overlay_stems) */
    cli_caption_done *done; /* --skip-existing: printed in order among the results; NULL without */
    cli_progress prog;
    int failures, done_ok;
    int ov_failures; /* photos whose caption is there but whose overlays or caption.json failed */
    double t_dec, t_cnn, t_bs, t_ov, t_wait; /* seconds, summed over the photos (ac_result_seconds) */
} cli_caption_view;

/* One photo's result (ac_each_fn), in input order: its line (or JSON) on stdout, its overlays and
 * caption.json, or its error. Frees r. */
void cli_caption_on_result(void *view, int index, ac_result *r);

/* The photos of the arguments: files, directories walked, "-" for a list on stdin (read once).
 * Prints its errors; -1 on a fatal one. What a walk skipped, by type, goes to notes (lines to print
 * once the work starts, so that a command refused later says one line). */
int cli_caption_gather(char **args, int n, cli_strv *paths, cli_strv *notes);

/* --skip-existing: moves the photos whose DIR/<stem> exists (folders are written whole, so those were
 * done) from paths/stems to done. Returns how many were moved, or -1 (out of memory, said). */
int cli_caption_skip_done(const char *ov_dir, cli_strv *paths, cli_strv *stems, cli_caption_done *done);
/* Prints the done photos at positions before upto (INT_MAX: all the rest) as their saved lines: the
 * JSON line of DIR/<stem>/caption.json (its image the path given now), or its plain line; a folder
 * without one is said on stderr. */
void cli_caption_print_done(const char *ov_dir, int json, cli_caption_done *d, int upto);
void cli_caption_done_free(cli_caption_done *d);
/* Without --force or --skip-existing: 0 if no photo's DIR/<stem> exists yet, else says how many do
 * (naming the first) and what to add, and returns -1, before any work. */
int cli_caption_check_existing(const char *ov_dir, const cli_strv *paths, const cli_strv *stems);

/* --verbose: images/s and the time split per photo on stderr (beam: the --beam given, 0 when none). */
void cli_caption_print_timing(const cli_caption_view *v, int n, int beam, double t_run, double t_load, double cpu_run);
#endif
