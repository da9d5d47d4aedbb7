/* tool_report.c: what a tool hands its caller as it runs (tool_internal.h): the report's lines, notes and
 * progress. Apart from tool.c, which knows the kinds, so that the kinds (which call these) and tool.c
 * make no circle. */
#include "tool_internal.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

static void emit(ac_tool *t, const ac_tool_event *ev) {
    if (t->on_event) t->on_event(ev, t->user);
}

void ac_tool_printf(ac_tool *t, const char *fmt, ...) {
    if (!t->pending.s) return;
    char line[4096];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(line, sizeof line, fmt, ap);
    va_end(ap);
    ac_text_add(&t->pending, "%s", line);
    char *s = t->pending.s, *nl;
    while (s && (nl = strchr(s, '\n'))) {
        *nl = 0;
        const ac_tool_event ev = {.line = s};
        emit(t, &ev);
        s = nl + 1;
    }
    if (s && s != t->pending.s) { /* keep what follows the last newline */
        const size_t rest = strlen(s);
        memmove(t->pending.s, s, rest + 1);
        t->pending.len = rest;
    }
}

static void say(ac_tool *t, int problem, const char *fmt, va_list ap) {
    char line[1024];
    vsnprintf(line, sizeof line, fmt, ap);
    const ac_tool_event ev = {.note = line, .problem = problem};
    emit(t, &ev);
}

void ac_tool_note(ac_tool *t, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    say(t, 1, fmt, ap);
    va_end(ap);
}

void ac_tool_say(ac_tool *t, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    say(t, 0, fmt, ap);
    va_end(ap);
}

void ac_tool_progress_status(ac_tool *t, int done, int total, const char *status) {
    const ac_tool_event ev = {.done = done, .total = total, .status = status};
    emit(t, &ev);
}

void ac_tool_progress(ac_tool *t, int done, int total) { ac_tool_progress_status(t, done, total, NULL); }
