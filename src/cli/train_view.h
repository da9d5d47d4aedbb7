/* train_view.h: the terminal side of attncap train: its lines and its progress bar. */
#ifndef ATTNCAP_CLI_TRAIN_VIEW_H
#define ATTNCAP_CLI_TRAIN_VIEW_H
#include "attncap/attncap.h"
#include "progress.h"

/* A bar per epoch on a terminal (one line a minute on stderr otherwise), the start, resume, warning
 * and finish lines on stderr and one line per evaluation on stdout. */
typedef struct {
    int quiet, has_text;
    const char *features, *out; /* named in the warning and the finish line */
    cli_progress bar; /* erased before the evaluation lines and before an error reaches the terminal */
    char label[32];
    int pos0;       /* the step the epoch (re)started at */
    double t_line;  /* when the last per-minute line was written */
} train_view;

void train_view_event(const ac_train_event *ev, void *user);

#endif
