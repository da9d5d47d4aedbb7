/* trainer.c: the core API's trainer (attncap.h) over train.h: options set by key from text, checked
 * against a table of their kinds and ranges (the ranges `attncap train` has always enforced), then
 * ac_train. The table is the one list of what training takes: the CLI's flags are its keys with dashes,
 * and which keys were set is what a resumed run compares with its checkpoint. */
#include "attncap/attncap.h"

#include <stddef.h>
#include <stdlib.h>

#include "attncap/train.h"
#include "alloc_internal.h"
#include "options_internal.h"

struct ac_trainer {
    ac_train_opts o;
    int pointer;                  /* "pointer": copy 2 whatever "copy" says */
    const char *given[64];        /* the keys set, once each (resume compares them) */
    int n_given;
    char *text[64];               /* the text options' copies (owned) */
    char shown[64];               /* ac_trainer_get's number */
};

#define TXT(k, m) {k, OPTION_TEXT, offsetof(struct ac_trainer, o.m), 0, 0}
#define INT(k, m, lo, hi) {k, OPTION_INT, offsetof(struct ac_trainer, o.m), lo, hi}
#define FLT(k, m, lo, hi) {k, OPTION_FLOAT, offsetof(struct ac_trainer, o.m), lo, hi}
#define SWITCH(k, m) {k, OPTION_SWITCH, offsetof(struct ac_trainer, m), 0, 1}
static const option OPTIONS[] = {
    TXT("data", data), TXT("images", image_dir), TXT("features", features), TXT("extra_data", extra_data),
    TXT("text", text), FLT("text_ratio", text_ratio, 0.01, 100), TXT("detections", detections),
    INT("regions", regions, 1, 32), SWITCH("copy", o.copy), SWITCH("pointer", pointer), SWITCH("absent", o.absent),
    SWITCH("object_init", o.object_init), TXT("imagenet_words", imagenet_words), FLT("text_weight", text_weight, 0, 100),
    TXT("init", init), TXT("out", out),
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
    {"seed", OPTION_U64, offsetof(struct ac_trainer, o.seed), 0, 9e15}, INT("max_steps", max_steps, 0, 2e9),
    INT("shards", shards, 1, 64), INT("threads", threads, 1, 256), SWITCH("resume", o.resume),
    SWITCH("force", o.resume_force), SWITCH("flip", o.flip), SWITCH("fp16", o.fp16), SWITCH("group", o.group),
    SWITCH("map_features", o.map_features), INT("scst", scst, 0, 64), FLT("scst_penalty", scst_penalty, 0, 100),
};
#undef TXT
#undef INT
#undef FLT
#undef SWITCH
#define N_OPTIONS (int)(sizeof OPTIONS / sizeof OPTIONS[0])
_Static_assert(N_OPTIONS <= 64, "the trainer's given[] and text[] hold every option");

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

const char *ac_trainer_option(int i, int *is_switch) { return ac_option_key(OPTIONS, N_OPTIONS, i, is_switch); }

int ac_trainer_set(ac_trainer *t, const char *key, const char *value, ac_err *err) {
    const int i = ac_option_find(OPTIONS, N_OPTIONS, key);
    if (i < 0) return ac_errc(err, AC_ERR_OPTIONS, "unknown training option '%.80s'", key ? key : "");
    if (ac_option_set(&OPTIONS[i], t, &t->text[i], value, err)) return -1;
    int seen = 0;
    for (int k = 0; k < t->n_given; k++) seen |= t->given[k] == OPTIONS[i].key;
    if (!seen) t->given[t->n_given++] = OPTIONS[i].key;
    return 0;
}

const char *ac_trainer_get(ac_trainer *t, const char *key) {
    const int i = ac_option_find(OPTIONS, N_OPTIONS, key);
    return i < 0 ? NULL : ac_option_get(&OPTIONS[i], t, t->shown, sizeof t->shown);
}

int ac_trainer_run(ac_trainer *t, ac_train_fn on_event, void *user, ac_err *err) {
    ac_train_opts o = t->o;
    if (t->pointer) o.copy = 2;
    if (!o.data || !o.features || !o.out)
        return ac_errc(err, AC_ERR_OPTIONS, "training needs the options data, features and out");
    if ((o.absent || o.object_init || o.imagenet_words) && !o.copy)
        return ac_errc(err, AC_ERR_OPTIONS, "the options absent, object_init and imagenet_words go with copy or pointer");
    if (o.copy && !o.detections && !o.resume)
        return ac_errc(err, AC_ERR_OPTIONS, "the option copy needs detections: it copies from the photos' detected objects");
    if (o.resume_force && !o.resume)
        return ac_errc(err, AC_ERR_OPTIONS, "the option force goes with resume (it keeps the checkpoint's options)");
    o.resume_given = t->given, o.n_resume_given = t->n_given;
    o.on_event = on_event, o.user = user;
    return ac_train(&o, err);
}
