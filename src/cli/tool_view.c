/* tool_view.c: see tool_view.h. */
#include "tool_view.h"

#include <stdio.h>
#include <string.h>

#include "messages.h"
#include "progress.h"

typedef struct tool_view {
    const char *cmd, *label;
    cli_progress bar;
    int quiet, started, finished, problems;
} tool_view;

static void finish_bar(tool_view *v) {
    if (v->started && !v->finished) cli_progress_finish(&v->bar), v->finished = 1;
}

static void on_event(const ac_tool_event *ev, void *user) {
    tool_view *v = user;
    if (ev->line) finish_bar(v), printf("%s\n", ev->line); /* the report follows the bar */
    else if (ev->note) {
        if (v->started && !v->finished) cli_progress_clear(&v->bar);
        fprintf(stderr, "attncap %s: %s\n", v->cmd, ev->note), v->problems += ev->problem;
    } else {
        if (!v->started) v->started = 1, cli_progress_start(&v->bar, v->label, (uint64_t)ev->total, v->quiet);
        if (ev->status) snprintf(v->bar.extra, sizeof v->bar.extra, "%s", ev->status);
        if (ev->done) cli_progress_update(&v->bar, (uint64_t)ev->done);
    }
}

static const char *list_option(const void *job, int i, int *is_switch) { return ac_tool_option(job, i, is_switch); }
static int set_option(void *t, const char *key, const char *value, ac_err *err) { return ac_tool_set(t, key, value, err); }

cli_job_opts cli_tool_job(ac_tool *t) {
    const cli_job_opts job = {list_option, set_option, t, NULL, 0};
    return job;
}

int cli_tool_run(const char *cmd, ac_tool *t, const char *label, int quiet) {
    tool_view v;
    memset(&v, 0, sizeof v);
    v.cmd = cmd, v.label = label, v.quiet = quiet;
    ac_err err;
    const int rc = ac_tool_run(t, on_event, &v, &err);
    finish_bar(&v);
    if (rc) {
        fprintf(stderr, "attncap %s: %s%s\n", cmd, err.msg, cli_hint(&err));
        return err.code == AC_ERR_OPTIONS ? 2 : 1;
    }
    return v.problems ? 1 : 0;
}
