/* progress.h: the CLI's progress bar. The library never draws one: it reports progress through
 * callbacks (train.h's on_event, features.h's on_progress) and the commands draw from those. */
#ifndef ATTNCAP_CLI_PROGRESS_H
#define ATTNCAP_CLI_PROGRESS_H
#include <stdint.h>

/* Progress bar on stderr: "label [#####     ] 123/456 12.3/s ETA 0:42". Drawn only when stderr is
 * a TTY and not quiet; otherwise silent. The bar owns the terminal's last line while it is drawn:
 * anything else written to the terminal (a result on stdout, an error on stderr) must first call
 * cli_progress_clear, which erases it; the next update draws it again. finish erases it for good. */
typedef struct cli_progress {
    const char *label;
    uint64_t total, done;
    double t_start, t_last_draw;
    int enabled;
    int drawn;       /* the bar is on the terminal's current line */
    char extra[128]; /* caller text appended to the bar (e.g. "loss 2.31") */
} cli_progress;
/* Seconds on the monotonic clock (CLOCK_MONOTONIC): for intervals only. */
double cli_now(void);
void cli_progress_start(cli_progress *p, const char *label, uint64_t total, int quiet);
void cli_progress_update(cli_progress *p, uint64_t done);
void cli_progress_clear(cli_progress *p);
void cli_progress_finish(cli_progress *p);

#endif
