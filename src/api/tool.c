/* tool.c: the core API's tools (attncap.h, ac_tool_*) over the kinds of tool_internal.h: a tool opened
 * by name, its options set by key from text against the kind's table (as the trainer's), its report
 * handed over a line at a time. */
#include "tool_internal.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "attncap/common.h"
#include "alloc_internal.h"

static const tool_kind *(*const KINDS[])(void) = {ac_tool_ground_kind, ac_tool_presence_kind, ac_tool_calibrate_kind,
                                                   ac_tool_tune_kind};
#define N_KINDS (int)(sizeof KINDS / sizeof KINDS[0])

const char *ac_tool_name(int i) { return i >= 0 && i < N_KINDS ? KINDS[i]()->name : NULL; }

int ac_tool_open(const char *name, ac_tool **out, ac_err *err) {
    *out = NULL;
    const tool_kind *kind = NULL;
    for (int i = 0; i < N_KINDS && !kind; i++)
        if (name && !strcmp(KINDS[i]()->name, name)) kind = KINDS[i]();
    if (!kind) return ac_errc(err, AC_ERR_OPTIONS, "unknown tool '%.80s'", name ? name : "");
    ac_tool *t = ac_calloc(1, sizeof *t);
    void *state = t ? ac_calloc(1, kind->state_size) : NULL;
    if (!state) {
        free(t);
        return ac_errf(err, "out of memory");
    }
    t->kind = kind, t->state = state;
    kind->defaults(state);
    *out = t;
    return 0;
}

void ac_tool_close(ac_tool *t) {
    if (!t) return;
    for (int i = 0; i < t->kind->n_options; i++) free(t->text[i]);
    for (int k = 0; k < 2; k++) {
        for (int i = 0; i < t->n_items[k]; i++) free(t->items[k][i]);
        free(t->items[k]);
    }
    free(t->pending.s), free(t->state);
    free(t);
}

/* Which of the kind's list options key is, or -1. */
static int list_of(const tool_kind *k, const char *key) {
    for (int l = 0; l < 2; l++)
        if (k->list_keys[l] && key && !strcmp(key, k->list_keys[l])) return l;
    return -1;
}

const char *ac_tool_option(const ac_tool *t, int i, int *is_switch) {
    const tool_kind *k = t->kind;
    const int l = i - k->n_options;
    if (l >= 0 && l < 2 && k->list_keys[l]) {
        if (is_switch) *is_switch = 0;
        return k->list_keys[l];
    }
    return ac_option_key(k->options, k->n_options, i, is_switch);
}

int ac_tool_set(ac_tool *t, const char *key, const char *value, ac_err *err) {
    const tool_kind *k = t->kind;
    const int l = list_of(k, key);
    if (l >= 0) {
        if (!value || !*value) return ac_errc(err, AC_ERR_OPTIONS, "option '%s' wants a value", key);
        if (t->n_items[l] == TOOL_MAX_ITEMS)
            return ac_errc(err, AC_ERR_OPTIONS, "option '%s' takes at most %d values", key, TOOL_MAX_ITEMS);
        if (!t->items[l] && !(t->items[l] = ac_calloc(TOOL_MAX_ITEMS, sizeof *t->items[l])))
            return ac_errf(err, "out of memory");
        if (!(t->items[l][t->n_items[l]] = ac_strdup(value))) return ac_errf(err, "out of memory");
        t->n_items[l]++;
        return 0;
    }
    const int i = ac_option_find(k->options, k->n_options, key);
    if (i < 0) return ac_errc(err, AC_ERR_OPTIONS, "unknown option '%.80s' of the tool %s", key ? key : "", k->name);
    if (!strcmp(k->options[i].key, "precision") && ac_option_check_precision(value, err)) return -1;
    return ac_option_set(&k->options[i], t->state, &t->text[i], value, err);
}

const char *ac_tool_get(ac_tool *t, const char *key) {
    const tool_kind *k = t->kind;
    const int l = list_of(k, key);
    if (l >= 0) return t->n_items[l] ? t->items[l][0] : "";
    const int i = ac_option_find(k->options, k->n_options, key);
    return i < 0 ? NULL : ac_option_get(&k->options[i], t->state, t->shown, sizeof t->shown);
}

int ac_tool_run(ac_tool *t, ac_tool_fn on_event, void *user, ac_err *err) {
    t->on_event = on_event, t->user = user;
    free(t->pending.s);
    t->pending = ac_text_new();
    int rc = t->kind->run(t, t->state, err);
    if (t->pending.s && t->pending.len) ac_tool_printf(t, "\n"); /* a last line without its newline */
    if (!rc && !t->pending.s) rc = ac_errf(err, "out of memory");
    return rc;
}
