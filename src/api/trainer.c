/* trainer.c: the core API's trainer (attncap.h) over train.h: options set by key from text, checked
 * against a table of their kinds and ranges (the ranges `attncap train` has always enforced), then
 * ac_train. The table is the one list of what training takes: the CLI's flags are its keys with dashes,
 * and which keys were set is what a resumed run compares with its checkpoint. */
#include "attncap/attncap.h"

#include <errno.h>
#include <math.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "attncap/train.h"
#include "alloc_internal.h"

typedef enum { K_TEXT, K_INT, K_FLOAT, K_U64, K_SWITCH, K_POINTER } option_kind;

typedef struct option {
    const char *key;
    option_kind kind;
    size_t off; /* in ac_train_opts (K_POINTER: none, the trainer's own) */
    double lo, hi;
} option;

#define TXT(k, m) {k, K_TEXT, offsetof(ac_train_opts, m), 0, 0}
#define INT(k, m, lo, hi) {k, K_INT, offsetof(ac_train_opts, m), lo, hi}
#define FLT(k, m, lo, hi) {k, K_FLOAT, offsetof(ac_train_opts, m), lo, hi}
#define SWITCH(k, m) {k, K_SWITCH, offsetof(ac_train_opts, m), 0, 1}
static const option OPTIONS[] = {
    TXT("data", data), TXT("images", image_dir), TXT("features", features), TXT("extra_data", extra_data),
    TXT("text", text), FLT("text_ratio", text_ratio, 0.01, 100), TXT("detections", detections),
    INT("regions", regions, 1, 32), SWITCH("copy", copy), {"pointer", K_POINTER, 0, 0, 1}, SWITCH("absent", absent),
    SWITCH("object_init", object_init), FLT("text_weight", text_weight, 0, 100), TXT("init", init), TXT("out", out),
    TXT("log", log_csv), TXT("plot", plot_png), TXT("val_metric", val_metric), INT("epochs", epochs, 0, 100000),
    INT("batch", batch, 1, 4096), FLT("lr", lr, 1e-9, 1), FLT("lr_min", lr_min, 0, 1), INT("embed", embed, 1, 8192),
    INT("hidden", hidden, 1, 8192), INT("att", att, 1, 8192), TXT("attention", attention), INT("heads", heads, 1, 64),
    TXT("decoder", decoder), INT("layers", layers, 1, 64), TXT("attention_mode", attention_mode),
    FLT("reinforce", reinforce, 0, 1e5), FLT("entropy", entropy, 0, 1e5), FLT("expected_context", expected_context, 0, 1),
    FLT("dropout", dropout, 0, 0.99), FLT("lambda", lambda, 0, 1e5), INT("min_count", min_count, 1, 1e9),
    FLT("clip", clip, 0, 1e9), FLT("weight_decay", weight_decay, 0, 1), FLT("ema", ema, 0, 0.999999),
    INT("patience", patience, 1, 1e6), FLT("lr_decay", lr_decay, 0.01, 1), INT("lr_patience", lr_patience, 1, 1e6),
    INT("eval_every", eval_every, 0, 1e9), INT("checkpoint_every", checkpoint_every, 0, 1e9), INT("beam", beam, 1, 100),
    INT("max_val", max_val, 0, 1e9), INT("max_train", max_train, 0, 1e9), INT("max_words", max_words, 1, 1000),
    {"seed", K_U64, offsetof(ac_train_opts, seed), 0, 9e15}, INT("max_steps", max_steps, 0, 2e9),
    INT("shards", shards, 1, 64), INT("threads", threads, 1, 256), SWITCH("resume", resume),
    SWITCH("force", resume_force), SWITCH("flip", flip), SWITCH("fp16", fp16), SWITCH("group", group),
    SWITCH("map_features", map_features),
};
#undef TXT
#undef INT
#undef FLT
#undef SWITCH
#define N_OPTIONS (int)(sizeof OPTIONS / sizeof OPTIONS[0])

struct ac_trainer {
    ac_train_opts o;
    char *text[N_OPTIONS];            /* the text options' copies (owned) */
    int pointer;                      /* "pointer": copy 2 whatever "copy" says */
    const char *given[N_OPTIONS];     /* the keys set, once each (resume compares them) */
    int n_given;
    char shown[64];                   /* ac_trainer_get's number */
};

/* The option of key (dashes read as underscores), or -1. */
static int find(const char *key) {
    char k[64];
    size_t n = key ? strlen(key) : 0;
    if (!n || n >= sizeof k) return -1;
    for (size_t i = 0; i <= n; i++) k[i] = key[i] == '-' ? '_' : key[i];
    for (int i = 0; i < N_OPTIONS; i++)
        if (!strcmp(OPTIONS[i].key, k)) return i;
    return -1;
}

int ac_trainer_open(ac_trainer **out, ac_err *err) {
    *out = ac_calloc(1, sizeof **out);
    if (!*out) return ac_errf(err, "out of memory");
    ac_train_defaults(&(*out)->o);
    return 0;
}

void ac_trainer_close(ac_trainer *t) {
    if (!t) return;
    for (int i = 0; i < N_OPTIONS; i++) free(t->text[i]);
    free(t);
}

const char *ac_trainer_option(int i, int *is_switch) {
    if (i < 0 || i >= N_OPTIONS) return NULL;
    if (is_switch) *is_switch = OPTIONS[i].kind == K_SWITCH || OPTIONS[i].kind == K_POINTER;
    return OPTIONS[i].key;
}

/* The number `text` spells for option p, or -1 after saying what is wrong. */
static int parse_number(const option *p, const char *text, double *v, ac_err *err) {
    char *end;
    errno = 0;
    *v = strtod(text, &end);
    const int whole = p->kind != K_FLOAT;
    if (!*text || *end || errno || !isfinite(*v) || (whole && *v != floor(*v)))
        return ac_errc(err, AC_ERR_OPTIONS, "option '%s' wants %s, got '%.80s'", p->key,
                       p->kind == K_SWITCH || p->kind == K_POINTER ? "1 or 0" : whole ? "a whole number" : "a number", text);
    if (!(*v >= p->lo && *v <= p->hi))
        return ac_errc(err, AC_ERR_OPTIONS, "option '%s' wants a value in %.15g..%.15g, got '%.80s'", p->key, p->lo,
                       p->hi, text);
    return 0;
}

int ac_trainer_set(ac_trainer *t, const char *key, const char *value, ac_err *err) {
    const int i = find(key);
    if (i < 0) return ac_errc(err, AC_ERR_OPTIONS, "unknown training option '%.80s'", key ? key : "");
    const option *p = &OPTIONS[i];
    char *field = (char *)&t->o + p->off;
    if (p->kind == K_TEXT) {
        if (!value) return ac_errc(err, AC_ERR_OPTIONS, "option '%s' wants a value", p->key);
        char *copy = ac_strdup(value);
        if (!copy) return ac_errf(err, "out of memory");
        free(t->text[i]);
        t->text[i] = copy;
        *(const char **)(void *)field = copy;
    } else {
        double v;
        if (parse_number(p, value ? value : "1", &v, err)) return -1;
        if (p->kind == K_POINTER) t->pointer = (int)v;
        else if (p->kind == K_INT || p->kind == K_SWITCH) *(int *)(void *)field = (int)v;
        else if (p->kind == K_U64) *(unsigned long long *)(void *)field = (unsigned long long)v;
        else *(float *)(void *)field = (float)v;
    }
    int seen = 0;
    for (int k = 0; k < t->n_given; k++) seen |= t->given[k] == p->key;
    if (!seen) t->given[t->n_given++] = p->key;
    return 0;
}

const char *ac_trainer_get(ac_trainer *t, const char *key) {
    const int i = find(key);
    if (i < 0) return NULL;
    const option *p = &OPTIONS[i];
    const char *field = (const char *)&t->o + p->off;
    switch (p->kind) {
    case K_TEXT: {
        const char *s = *(const char *const *)(const void *)field;
        return s ? s : "";
    }
    case K_POINTER: snprintf(t->shown, sizeof t->shown, "%d", t->pointer); break;
    case K_INT:
    case K_SWITCH: snprintf(t->shown, sizeof t->shown, "%d", *(const int *)(const void *)field); break;
    case K_U64: snprintf(t->shown, sizeof t->shown, "%llu", *(const unsigned long long *)(const void *)field); break;
    case K_FLOAT: { /* the shortest text that reads back as the same float (4e-4: "0.0004") */
        const float v = *(const float *)(const void *)field;
        for (int digits = 6; digits <= 9; digits++) {
            snprintf(t->shown, sizeof t->shown, "%.*g", digits, v);
            if (strtof(t->shown, NULL) == v) break;
        }
        break;
    }
    }
    return t->shown;
}

int ac_trainer_run(ac_trainer *t, ac_train_fn on_event, void *user, ac_err *err) {
    ac_train_opts o = t->o;
    if (t->pointer) o.copy = 2;
    if (!o.data || !o.features || !o.out)
        return ac_errc(err, AC_ERR_OPTIONS, "training needs the options data, features and out");
    if ((o.absent || o.object_init) && !o.copy)
        return ac_errc(err, AC_ERR_OPTIONS, "the options absent and object_init go with copy or pointer");
    if (o.copy && !o.detections && !o.resume)
        return ac_errc(err, AC_ERR_OPTIONS, "the option copy needs detections: it copies from the photos' detected objects");
    if (o.resume_force && !o.resume)
        return ac_errc(err, AC_ERR_OPTIONS, "the option force goes with resume (it keeps the checkpoint's options)");
    o.resume_given = t->given, o.n_resume_given = t->n_given;
    o.on_event = on_event, o.user = user;
    return ac_train(&o, err);
}
