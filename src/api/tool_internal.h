/* tool_internal.h: the core's tools (attncap.h, ac_tool_*): the maintainers' jobs behind `attncap
 * ground` and the like, one handle for all. Each tool is a kind (its name, its options' table, its
 * state's size and defaults, its run); tool.c does the options, the events and the report's lines, a
 * tool_NAME.c each job. Private to src/api/. */
#ifndef ATTNCAP_TOOL_INTERNAL_H
#define ATTNCAP_TOOL_INTERNAL_H
#include "attncap/attncap.h"
#include "options_internal.h"
#include "text_internal.h"

#define TOOL_MAX_ITEMS 4096 /* a list option's values ("photos") */

typedef struct tool_kind {
    const char *name;
    const option *options; /* offsets into the tool's state */
    int n_options;
    const char *list_keys[2]; /* options that add a value each time they are set ("photos"), or NULL */
    size_t state_size;
    void (*defaults)(void *state);
    int (*run)(ac_tool *t, void *state, ac_err *err);
} tool_kind;

struct ac_tool {
    const tool_kind *kind;
    void *state;           /* the kind's (options first; zeroed, then its defaults) */
    char *text[64];        /* the text options' copies (owned) */
    char shown[64];        /* ac_tool_get's number */
    char **items[2];       /* list_keys[k]'s values [n_items[k]] (owned) */
    int n_items[2];
    ac_text pending;       /* what ac_tool_printf wrote after the last whole line */
    ac_tool_fn on_event;
    void *user;
};

/* The report: text as printf writes it; each whole line goes to the caller as a line event. */
void ac_tool_printf(ac_tool *t, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* A problem that does not stop the run (a photo that could not be used), as one line. */
void ac_tool_note(ac_tool *t, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* A line said beside the report that is no problem (what was read). */
void ac_tool_say(ac_tool *t, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* done of total; done 0: it starts. status: beside it, or NULL. */
void ac_tool_progress(ac_tool *t, int done, int total);
void ac_tool_progress_status(ac_tool *t, int done, int total, const char *status);

/* The kinds, each from its tool_NAME.c (functions, not exported data: the library keeps no globals
 * a sanitizer or a linker would see as such). */
const tool_kind *ac_tool_ground_kind(void);
const tool_kind *ac_tool_presence_kind(void);
const tool_kind *ac_tool_calibrate_kind(void);
const tool_kind *ac_tool_tune_kind(void);
#endif
