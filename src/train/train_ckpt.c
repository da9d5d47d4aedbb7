/* train_ckpt.c: training checkpoints, MODEL.ckpt beside the model (see train.h): the parameters,
 * Adam's moments, the weight average, the loop's state and history, and the options that decide the
 * trajectory, so a killed run resumes exactly where its last checkpoint left it. */
#include <cjson/cJSON.h>
#include <math.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "attncap/imagenet_words.h"
#include "attncap/safetensors.h"
#include "attncap/vocab.h"
#include "decoder_internal.h"
#include "train_internal.h"
#include "alloc_internal.h"

#define CKPT_FORMAT "attncap-checkpoint-1"

/* ---------- checkpoints ---------- */

char *ac_train_ckpt_path(const char *out) {
    size_t n = strlen(out) + 8;
    char *p = ac_malloc(n);
    if (p) snprintf(p, n, "%s.ckpt", out);
    return p;
}

/* The options that determine the trajectory: a resumed run takes them from the checkpoint. absent:
 * the value a checkpoint from before the option existed implies (NAN: the run's own). */
typedef struct traj_opt {
    const char *key;
    char kind; /* 'i' int, 'f' float, 'u' unsigned long long */
    size_t off;
    double absent;
} traj_opt;
#define TRAJ(key, kind, member, absent) {key, kind, offsetof(ac_train_opts, member), absent}
static const traj_opt TRAJ_OPTS[] = {
    TRAJ("batch", 'i', batch, NAN),        TRAJ("lr", 'f', lr, NAN),
    TRAJ("lr_min", 'f', lr_min, 0),        TRAJ("min_count", 'i', min_count, NAN),
    TRAJ("clip", 'f', clip, NAN),          TRAJ("weight_decay", 'f', weight_decay, NAN),
    TRAJ("ema", 'f', ema, 0),              TRAJ("lr_decay", 'f', lr_decay, NAN),
    TRAJ("lr_patience", 'i', lr_patience, NAN), TRAJ("eval_every", 'i', eval_every, NAN),
    TRAJ("seed", 'u', seed, NAN),          TRAJ("max_train", 'i', max_train, NAN),
    TRAJ("max_val", 'i', max_val, NAN),    TRAJ("max_words", 'i', max_words, NAN),
    TRAJ("flip", 'i', flip, NAN),          TRAJ("beam", 'i', beam, NAN),
    TRAJ("shards", 'i', shards, NAN),      TRAJ("group", 'i', group, 0),
    TRAJ("text_ratio", 'f', text_ratio, NAN), TRAJ("text_weight", 'f', text_weight, NAN),
    TRAJ("scst", 'i', scst, 0), TRAJ("scst_penalty", 'f', scst_penalty, 0),
};
#define N_TRAJ (int)(sizeof TRAJ_OPTS / sizeof TRAJ_OPTS[0])

static double traj_get(const ac_train_opts *o, const traj_opt *t) {
    const char *p = (const char *)o + t->off;
    return t->kind == 'i' ? *(const int *)(const void *)p
           : t->kind == 'f' ? *(const float *)(const void *)p
                            : (double)*(const unsigned long long *)(const void *)p;
}
static void traj_set(ac_train_opts *o, const traj_opt *t, double v) {
    char *p = (char *)o + t->off;
    if (t->kind == 'i') *(int *)(void *)p = (int)v;
    else if (t->kind == 'f') *(float *)(void *)p = (float)v;
    else *(unsigned long long *)(void *)p = (unsigned long long)v;
}

/* NULL when out of memory (cJSON leaves out a member it has no memory for: a checkpoint without it
 * would resume with another trajectory) */
static cJSON *opts_json(const ac_train_opts *o) {
    cJSON *j = cJSON_CreateObject();
    int ok = j != NULL;
    for (int i = 0; i < N_TRAJ; i++) ok &= !!cJSON_AddNumberToObject(j, TRAJ_OPTS[i].key, traj_get(o, &TRAJ_OPTS[i]));
    ok &= !!cJSON_AddStringToObject(j, "val_metric", o->val_metric ? o->val_metric : "");
    if (!ok) cJSON_Delete(j);
    return ok ? j : NULL;
}

static int given(const ac_train_opts *o, const char *key) {
    for (int i = 0; i < o->n_resume_given; i++)
        if (!strcmp(o->resume_given[i], key)) return 1;
    return 0;
}

/* Appends "key HERE (checkpoint: THERE)" to the list in buf; a float option with a float's digits. */
static void differs(char *buf, size_t n, const char *key, int is_float, double here, double there) {
    size_t l = strlen(buf);
    const int digits = is_float ? 7 : 17;
    if (l + 1 < n)
        snprintf(buf + l, n - l, "%s%s %.*g (checkpoint: %.*g)", l ? ", " : "", key, digits, here, digits, there);
}

/* Appends "key HERE (checkpoint: THERE)" for an option given by name. */
static void differs_str(char *buf, size_t n, const char *key, const char *here, const char *there) {
    size_t l = strlen(buf);
    if (l + 1 < n) snprintf(buf + l, n - l, "%s%s %s (checkpoint: %s)", l ? ", " : "", key, here, there);
}

/* The validation metric a checkpoint's run used (a static string), or NULL if it records none known;
 * "" (no --val-metric) is the default, cider where the metrics are built. */
static const char *ckpt_metric(const cJSON *oj) {
    static const char *const metrics[] = {"cider", "bleu4", "loss"};
    const cJSON *vm = cJSON_GetObjectItemCaseSensitive(oj, "val_metric");
    if (!cJSON_IsString(vm)) return NULL;
    if (!vm->valuestring[0]) return ac_train_metrics_available() ? "cider" : "loss";
    for (int i = 0; i < 3; i++)
        if (!strcmp(vm->valuestring, metrics[i])) return metrics[i];
    return NULL;
}

/* The given options whose values differ from the checkpoint's: its options oj and decoder config c;
 * but key skip (NULL: none). */
static void resume_differences(const ac_train_opts *o, const cJSON *oj, const ac_decoder_config *c, const char *skip,
                               char *buf, size_t n) {
    buf[0] = 0;
    for (int i = 0; i < N_TRAJ; i++) {
        const traj_opt *t = &TRAJ_OPTS[i];
        const cJSON *x = cJSON_GetObjectItemCaseSensitive(oj, t->key);
        if (!given(o, t->key) || (skip && !strcmp(skip, t->key))) continue;
        double there = cJSON_IsNumber(x) ? x->valuedouble : t->absent, here = traj_get(o, t);
        if (isnan(there)) continue;
        /* compared as stored: a float option as a float */
        if (t->kind == 'f' ? (float)there != (float)here : there != here) differs(buf, n, t->key, t->kind == 'f', here, there);
    }
    const char *metric = ckpt_metric(oj);
    if (given(o, "val_metric") && metric && o->val_metric && strcmp(metric, o->val_metric))
        differs_str(buf, n, "val_metric", o->val_metric, metric);
    if (given(o, "attention") && o->attention && ac_decoder_attention_parse(o->attention) != c->attention)
        differs_str(buf, n, "attention", o->attention, ac_decoder_attention_name(c->attention));
    if (given(o, "decoder") && o->decoder && ac_decoder_kind_parse(o->decoder) != c->decoder)
        differs_str(buf, n, "decoder", o->decoder, ac_decoder_kind_name(c->decoder));
    if (given(o, "attention_mode") && o->attention_mode &&
        ac_decoder_attention_mode_parse(o->attention_mode) != c->attention_mode)
        differs_str(buf, n, "attention_mode", o->attention_mode, ac_decoder_attention_mode_name(c->attention_mode));
    /* the decoder's shape is the checkpoint's */
    const struct { const char *key; int is_float; double here, there; } shape[] = {
        {"embed", 0, o->embed, c->embed},       {"hidden", 0, o->hidden, c->hidden}, {"att", 0, o->att, c->att},
        {"dropout", 1, o->dropout, c->dropout}, {"lambda", 1, o->lambda, c->lambda},
        {"heads", 0, o->heads > 1 ? o->heads : 1, c->heads > 1 ? c->heads : 1},
        {"layers", 0, o->layers, c->layers},
        {"reinforce", 1, o->reinforce, c->reinforce}, {"entropy", 1, o->entropy, c->entropy},
        {"expected_context", 1, o->expected_context, c->expected},
    };
    for (size_t i = 0; i < sizeof shape / sizeof shape[0]; i++)
        if (given(o, shape[i].key) && (float)shape[i].here != (float)shape[i].there)
            differs(buf, n, shape[i].key, shape[i].is_float, shape[i].here, shape[i].there);
}

/* The state as JSON (malloc'd), NULL when out of memory: every member or none. */
static char *state_json(const ac_trainer *tr) {
    const ac_train_state *s = &tr->st;
    cJSON *j = cJSON_CreateObject();
    int ok = j != NULL;
    ok &= !!cJSON_AddNumberToObject(j, "epoch", s->epoch);
    ok &= !!cJSON_AddNumberToObject(j, "pos", s->pos);
    ok &= !!cJSON_AddNumberToObject(j, "step", (double)s->step);
    ok &= !!cJSON_AddNumberToObject(j, "lr", s->lr);
    ok &= !!cJSON_AddNumberToObject(j, "best", isfinite(s->best) ? s->best : -1e300);
    ok &= !!cJSON_AddNumberToObject(j, "best_step", (double)s->best_step);
    ok &= !!cJSON_AddNumberToObject(j, "best_loss", isfinite(s->best_loss) ? s->best_loss : 1e300);
    ok &= !!cJSON_AddNumberToObject(j, "bad", s->bad);
    ok &= !!cJSON_AddNumberToObject(j, "done", s->done);
    ok &= !!cJSON_AddNumberToObject(j, "win_ce", s->win_ce);
    ok &= !!cJSON_AddNumberToObject(j, "win_tok", (double)s->win_tok);
    ok &= !!cJSON_AddNumberToObject(j, "evals", (double)s->evals);
    if (tr->model.dec.cfg.attention_mode == AC_ATTENTION_HARD) ok &= !!cJSON_AddNumberToObject(j, "hard_baseline", s->hard_baseline);
    cJSON *oj = ok ? opts_json(tr->o) : NULL;
    if (!oj || !cJSON_AddItemToObject(j, "opts", oj)) cJSON_Delete(oj), ok = 0; /* not added: still ours */
    cJSON *h = ok ? cJSON_AddArrayToObject(j, "history") : NULL;
    ok &= h != NULL;
    for (int i = 0; ok && i < tr->n_hist; i++) {
        const ac_hist *r = &tr->hist[i];
        double a[9] = {(double)r->step, r->epoch, r->train_loss, r->val_loss, r->bleu4, r->cider, r->lr, r->seconds, r->reward};
        cJSON *row = cJSON_CreateArray();
        ok = row != NULL;
        for (int k = 0; ok && k < 9; k++) {
            cJSON *x = isfinite(a[k]) ? cJSON_CreateNumber(a[k]) : cJSON_CreateNull();
            if (!x || !cJSON_AddItemToArray(row, x)) cJSON_Delete(x), ok = 0;
        }
        if (!ok || !cJSON_AddItemToArray(h, row)) cJSON_Delete(row), ok = 0;
    }
    /* Doubles are printed with 17 significant digits by cJSON, so they round-trip exactly. */
    char *out = ok ? cJSON_PrintUnformatted(j) : NULL;
    cJSON_Delete(j);
    return out;
}

int ac_train_save_ckpt(ac_trainer *tr, ac_err *err) {
    char *path = ac_train_ckpt_path(tr->o->out), *cfg = ac_decoder_config_to_json(&tr->model.dec.cfg);
    char *voc = ac_vocab_to_json(tr->model.vocab), *state = state_json(tr);
    char *imagenet = tr->model.imagenet.n ? ac_imagenet_words_json(&tr->model.imagenet, tr->model.vocab) : NULL;
    ac_st_writer w;
    ac_st_writer_init(&w);
    int rc = -1;
    int64_t n = (int64_t)tr->model.dec.n_params, nd = tr->D;
    if (!path || !cfg || !voc || !state || (tr->model.imagenet.n && !imagenet)) {
        ac_errf(err, "out of memory writing a checkpoint");
        goto done;
    }
    if (ac_st_writer_add(&w, "params", AC_ST_F32, 1, &n, tr->model.dec.params, err) ||
        ac_st_writer_add(&w, "adam_m", AC_ST_F32, 1, &n, tr->m, err) ||
        ac_st_writer_add(&w, "adam_v", AC_ST_F32, 1, &n, tr->v, err) ||
        (tr->ema && ac_st_writer_add(&w, "ema", AC_ST_F32, 1, &n, tr->ema, err)) ||
        (tr->null_ctx && (ac_st_writer_add(&w, "null_ctx", AC_ST_F32, 1, &nd, tr->null_ctx, err) ||
                          ac_st_writer_add(&w, "null_ctx_m", AC_ST_F32, 1, &nd, tr->null_m, err) ||
                          ac_st_writer_add(&w, "null_ctx_v", AC_ST_F32, 1, &nd, tr->null_v, err))) ||
        ac_st_writer_meta(&w, "format", CKPT_FORMAT, err) || ac_st_writer_meta(&w, "config", cfg, err) ||
        ac_st_writer_meta(&w, "vocab", voc, err) ||
        ac_st_writer_meta(&w, "encoder", tr->model.encoder_json ? tr->model.encoder_json : "{}", err) ||
        ac_st_writer_meta(&w, "state", state, err) ||
        (imagenet && ac_st_writer_meta(&w, "imagenet_words", imagenet, err)))
        goto done;
    rc = ac_st_write(&w, path, err);
done:
    ac_st_writer_free(&w);
    free(path), free(cfg), free(voc), free(state), free(imagenet);
    return rc;
}

static double jnum(const cJSON *o, const char *k, double def) {
    const cJSON *x = cJSON_GetObjectItemCaseSensitive(o, k);
    return cJSON_IsNumber(x) ? x->valuedouble : def;
}

/* Loads a checkpoint: the model (config, vocab, params), Adam moments, state, history, and the
 * trajectory options (into *o). */
int ac_train_load_ckpt(ac_trainer *tr, ac_train_opts *o, char *kept, size_t kept_n, ac_err *err) {
    char *path = ac_train_ckpt_path(o->out);
    if (!path) return ac_errf(err, "out of memory");
    ac_st_file f;
    if (ac_st_read(path, &f, err)) {
        free(path);
        return -1;
    }
    int rc = -1;
    cJSON *sj = NULL;
    const char *fmt = ac_st_meta(&f, "format"), *cfg = ac_st_meta(&f, "config"), *voc = ac_st_meta(&f, "vocab"),
               *enc = ac_st_meta(&f, "encoder"), *state = ac_st_meta(&f, "state");
    ac_decoder_config c;
    if (!fmt || strcmp(fmt, CKPT_FORMAT) || !cfg || !voc || !enc || !state) {
        ac_errf(err, "%s: not an attncap training checkpoint", path);
        goto done;
    }
    if (ac_decoder_config_from_json(cfg, &c, err) || ac_vocab_from_json(voc, &tr->model.vocab, err)) {
        ac_err_prefix(err, "%s", path);
        goto done;
    }
    if (ac_vocab_size(tr->model.vocab) != c.vocab) {
        ac_errf(err, "%s: vocabulary size does not match the config", path);
        goto done;
    }
    if (c.imagenet_words &&
        ac_imagenet_words_parse(ac_st_meta(&f, "imagenet_words"), tr->model.vocab, c.imagenet_words, &tr->model.imagenet, err)) {
        ac_err_prefix(err, "%s", path);
        goto done;
    }
    if (ac_decoder_alloc(&tr->model.dec, &c, err)) goto done;
    size_t n = tr->model.dec.n_params;
    tr->m = ac_malloc(sizeof(float) * n), tr->v = ac_malloc(sizeof(float) * n);
    if (!tr->m || !tr->v) {
        ac_errf(err, "out of memory");
        goto done;
    }
    const char *names[3] = {"params", "adam_m", "adam_v"};
    float *dst[3] = {tr->model.dec.params, tr->m, tr->v};
    for (int i = 0; i < 3; i++) {
        const ac_st_tensor *t = ac_st_find(&f, names[i]);
        if (!t) {
            ac_errf(err, "%s: tensor '%s' missing", path, names[i]);
            goto done;
        }
        if (ac_st_to_f32(t, dst[i], n, path, err)) goto done;
    }
    const ac_st_tensor *te = ac_st_find(&f, "ema");
    if (te) {
        if (!(tr->ema = ac_malloc(sizeof(float) * n))) {
            ac_errf(err, "out of memory");
            goto done;
        }
        if (ac_st_to_f32(te, tr->ema, n, path, err)) goto done;
    }
    const ac_st_tensor *tn = ac_st_find(&f, "null_ctx");
    if (tn) { /* the no-photo context of a run with captions without photos */
        const size_t D = (size_t)c.dim;
        const char *nn[3] = {"null_ctx", "null_ctx_m", "null_ctx_v"};
        float **nv[3] = {&tr->null_ctx, &tr->null_m, &tr->null_v};
        for (int i = 0; i < 3; i++) {
            const ac_st_tensor *t = ac_st_find(&f, nn[i]);
            if (!t) {
                ac_errf(err, "%s: tensor '%s' missing", path, nn[i]);
                goto done;
            }
            if (!(*nv[i] = ac_malloc(sizeof(float) * D))) {
                ac_errf(err, "out of memory");
                goto done;
            }
            if (ac_st_to_f32(t, *nv[i], D, path, err)) goto done;
        }
    }
    tr->model.encoder_json = ac_strdup(enc);
    sj = cJSON_Parse(state);
    if (!sj || !cJSON_IsObject(sj)) {
        ac_errf(err, "%s: state is not JSON", path);
        goto done;
    }
    ac_train_state *s = &tr->st;
    s->epoch = (int)jnum(sj, "epoch", 0), s->pos = (int)jnum(sj, "pos", 0), s->step = (long)jnum(sj, "step", 0);
    s->lr = jnum(sj, "lr", o->lr), s->best = jnum(sj, "best", -1e300), s->best_step = (long)jnum(sj, "best_step", 0);
    if (s->best <= -1e299) s->best = -INFINITY;
    s->best_loss = jnum(sj, "best_loss", 1e300);
    if (s->best_loss >= 1e299) s->best_loss = INFINITY;
    s->bad = (int)jnum(sj, "bad", 0), s->done = (int)jnum(sj, "done", 0);
    s->win_ce = jnum(sj, "win_ce", 0), s->win_tok = (long)jnum(sj, "win_tok", 0), s->evals = (long)jnum(sj, "evals", 0);
    s->hard_baseline = jnum(sj, "hard_baseline", 0);
    const cJSON *oj = cJSON_GetObjectItemCaseSensitive(sj, "opts");
    resume_differences(o, oj, &c, NULL, kept, kept_n);
    if (kept[0] && !o->resume_force) {
        ac_errc(err, AC_ERR_RESUME_OPTIONS, "%s: the run was started with other options: %s", path, kept);
        goto done;
    }
    /* forced: a learning rate given wins (from here on, decaying as before); the other options are the
     * checkpoint's. kept says both. */
    const float lr_given = o->lr;
    const int lr_wins = kept[0] && given(o, "lr") && (float)jnum(oj, "lr", lr_given) != lr_given;
    if (kept[0]) {
        char others[768];
        resume_differences(o, oj, &c, "lr", others, sizeof others);
        snprintf(kept, kept_n, "%s%s%s", others[0] ? "the checkpoint's options are kept: " : "", others,
                 others[0] && lr_wins ? "; " : "");
        if (lr_wins) {
            const size_t l = strlen(kept);
            snprintf(kept + l, kept_n - l, "the learning rate given, %.7g, replaces the checkpoint's %.7g (at step %ld)",
                     lr_given, s->lr, s->step);
        }
    }
    for (int i = 0; i < N_TRAJ; i++) {
        const traj_opt *t = &TRAJ_OPTS[i];
        const cJSON *x = cJSON_GetObjectItemCaseSensitive(oj, t->key);
        double v = cJSON_IsNumber(x) ? x->valuedouble : t->absent;
        if (!isnan(v)) traj_set(o, t, v);
    }
    if (lr_wins) o->lr = lr_given, s->lr = lr_given;
    /* and the checkpoint's validation metric, as kept says: its best score is in that metric's units (a
     * forced --val-metric loss against a best CIDEr-D of 0.5 never saved a model again) */
    if (ckpt_metric(oj)) o->val_metric = ckpt_metric(oj);
    if ((o->ema > 0) != (tr->ema != NULL)) {
        ac_errf(err, "%s: the checkpoint's weight average does not match its options", path);
        goto done;
    }
    const cJSON *h = cJSON_GetObjectItemCaseSensitive(sj, "history"), *row;
    cJSON_ArrayForEach(row, h) {
        double a[9]; /* the reward: rows from before it have 8 */
        for (int k = 0; k < 9; k++) {
            const cJSON *x = cJSON_GetArrayItem(row, k);
            a[k] = cJSON_IsNumber(x) ? x->valuedouble : NAN;
        }
        const ac_hist r = {.step = (long)a[0], .epoch = a[1], .train_loss = a[2], .val_loss = a[3], .bleu4 = a[4],
                           .cider = a[5], .lr = a[6], .seconds = a[7], .reward = a[8]};
        if (ac_train_hist_add(tr, &r)) {
            ac_errf(err, "out of memory");
            goto done;
        }
    }
    rc = 0;
done:
    cJSON_Delete(sj);
    ac_st_free(&f);
    free(path);
    return rc;
}

/* Here, not in train.c: the checkpoint restores the history, and train.c calls into this file only. */
int ac_train_hist_add(ac_trainer *tr, const ac_hist *h) {
    if (tr->n_hist == tr->cap_hist) {
        int cap = tr->cap_hist ? 2 * tr->cap_hist : 64;
        ac_hist *n = ac_realloc(tr->hist, sizeof *n * (size_t)cap);
        if (!n) return -1;
        tr->hist = n, tr->cap_hist = cap;
    }
    tr->hist[tr->n_hist++] = *h;
    return 0;
}
