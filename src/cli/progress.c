/* progress.c: the progress bar of progress.h, drawn on stderr when it is a terminal. */
#include "progress.h"

#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

double cli_now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

void cli_progress_start(cli_progress *p, const char *label, uint64_t total, int quiet) {
    memset(p, 0, sizeof *p);
    p->label = label;
    p->total = total;
    p->t_start = cli_now();
    p->enabled = !quiet && isatty(STDERR_FILENO);
}

static void progress_draw(cli_progress *p) {
    double now = cli_now(), el = now - p->t_start;
    double rate = el > 0 ? (double)p->done / el : 0;
    char bar[31];
    int width = 30, fill = p->total ? (int)((double)width * (double)p->done / (double)p->total) : 0;
    if (fill > width) fill = width;
    for (int i = 0; i < width; i++) bar[i] = i < fill ? '#' : ' ';
    bar[width] = 0;
    char eta[32] = "";
    if (rate > 0 && p->total > p->done) {
        long s = (long)((double)(p->total - p->done) / rate);
        snprintf(eta, sizeof eta, " ETA %ld:%02ld:%02ld", s / 3600, (s / 60) % 60, s % 60);
    }
    fprintf(stderr, "\r\033[K%s [%s] %llu/%llu %.1f/s%s%s%s", p->label, bar, (unsigned long long)p->done,
            (unsigned long long)p->total, rate, eta, p->extra[0] ? "  " : "", p->extra);
    fflush(stderr);
    p->t_last_draw = now;
    p->drawn = 1;
}

void cli_progress_update(cli_progress *p, uint64_t done) {
    p->done = done;
    if (!p->enabled) return;
    if (p->drawn && cli_now() - p->t_last_draw < 0.1 && done < p->total) return;
    progress_draw(p);
}

void cli_progress_clear(cli_progress *p) {
    if (!p->enabled || !p->drawn) return;
    /* stdout may share the terminal: what it holds must not land after the erased bar */
    fflush(stdout);
    fputs("\r\033[K", stderr);
    fflush(stderr);
    p->drawn = 0;
}

void cli_progress_finish(cli_progress *p) {
    cli_progress_clear(p);
    p->enabled = 0;
}
