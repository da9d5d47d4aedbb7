/* train.c: the training loop (see train.h).
 *
 * Determinism: the data order of epoch e is a Fisher-Yates shuffle seeded by (seed, e); whether a
 * caption uses its photo's flipped features is a hash of (seed, e, caption); dropout masks are a hash
 * of (seed, step). So the state to resume exactly is just (epoch, batch position, step) plus the
 * parameters, the Adam moments, the learning rate and the early-stopping counters. */
#include "attncap/train.h"

#include <cblas.h>
#include <errno.h>
#include <unistd.h>
#include <math.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "attncap/beam.h"
#include "attncap/dataset.h"
#include "attncap/decoder.h"
#include "attncap/decode_rows.h"
#include "attncap/model.h"
#include "attncap/features.h"
#include "attncap/tokenize.h"
#include "attncap/vocab.h"
#include "decoder_internal.h"
#include "train_internal.h"
#include "common_internal.h"
#include "alloc_internal.h"

void ac_train_defaults(ac_train_opts *o) {
    memset(o, 0, sizeof *o);
    /* the shipped model's recipe (tools/train_flickr8k.sh) */
    o->epochs = 16, o->batch = 64, o->lr = 4e-4f;
    o->embed = 256, o->hidden = 512, o->att = 256, o->ema = 0.999f;
    o->dropout = 0.5f, o->lambda = 1.0f, o->min_count = 5, o->clip = 5.0f;
    o->patience = 4, o->lr_patience = 2, o->lr_decay = 0.5f, o->checkpoint_every = 500, o->beam = 3;
    o->seed = 1, o->max_words = 32, o->flip = -1, o->shards = 2, o->group = 1, o->map_features = -1;
    o->text_ratio = 1, o->text_weight = 1;
    o->reinforce = 1, o->entropy = 0.01f, o->expected_context = 0.5f;
    o->scst_penalty = 0.25f; /* with scst: chosen on Flickr8k dev among 0, 0.25, 1 (docs/experiments/scst.md) */
}

/* ---------- batches ---------- */

/* The captions of one batch, sorted by length descending (stable). */
typedef struct batch_buf {
    int *idx, *len, *words, *flip;
    int *nval; /* each caption's photo: its own cells (the first of L; a cache that kept the aspect ratio) */
    const float **ann;
    /* A compact (float16) cache: the batch's photos converted to float32, one slot per distinct
     * feature row, so captions of one photo share one pointer (the decoder relies on that). */
    float *stage;   /* [capacity, L * D] */
    int *stage_row; /* [capacity] feature row held by each slot (-1: a caption without a photo's regions) */
    int *stage_nval; /* [capacity] the slot's own rows (grid cells and regions) */
    int *nreg, *stage_nreg;          /* [capacity] each caption's / slot's regions (the last of its rows) */
    unsigned char *stage_cat;        /* [capacity, R] each slot's regions' categories */
    float *stage_score;              /* [capacity, R] and their scores */
    const unsigned char **rcat;      /* [capacity] each caption's: into stage_cat */
    const float **rscore;            /* [capacity] each caption's: into stage_score */
    uint64_t seed;  /* the draws of the pseudo-regions of captions without photos (train_regions.c) */
} batch_buf;

static void make_batch(const ac_trainer *tr, const ac_train_example *ex, const int *sel, int B, const int *flip, batch_buf *bb,
                       ac_dec_batch *b) {
    const int stride = tr->o->max_words;
    for (int i = 0; i < B; i++) bb->idx[i] = i;
    /* insertion sort by length descending: stable, B is small */
    for (int i = 1; i < B; i++) {
        int k = bb->idx[i], j = i - 1;
        while (j >= 0 && ex[sel[bb->idx[j]]].n < ex[sel[k]].n) bb->idx[j + 1] = bb->idx[j], j--;
        bb->idx[j + 1] = k;
    }
    const size_t LD = (size_t)tr->L * tr->D;
    int n_stage = 0;
    for (int i = 0; i < B; i++) {
        const int s = bb->idx[i];
        const ac_train_example *e = &ex[sel[s]];
        const int f = flip && flip[s] && e->feat_flip >= 0;
        bb->len[i] = e->n + 1;
        memcpy(bb->words + (size_t)i * stride, f ? e->wf : e->w, sizeof(int) * (size_t)e->n);
        const int r = f ? e->feat_flip : e->feat;
        bb->nval[i] = tr->L;
        if (bb->nreg) bb->nreg[i] = 0, bb->rcat[i] = NULL, bb->rscore[i] = NULL;
        if (r < 0 && tr->R) { /* a caption without a photo, with its pseudo-regions: a slot of its own */
            float *slot = bb->stage + (size_t)n_stage * LD;
            unsigned char *cat = bb->stage_cat + (size_t)n_stage * tr->R;
            float *score = bb->stage_score + (size_t)n_stage * tr->R;
            bb->stage_row[n_stage++] = -1;
            int nr;
            ac_train_text_regions(tr, e, ac_mix64(bb->seed * 0x9E3779B97F4A7C15ull + (uint64_t)sel[s]), slot, &bb->nval[i],
                                  &nr, cat, score);
            if (bb->nreg) bb->nreg[i] = nr, bb->rcat[i] = cat, bb->rscore[i] = score;
            bb->ann[i] = slot;
            continue;
        }
        if (r < 0) { /* a caption without a photo: the no-photo context, one copy per shard */
            bb->ann[i] = tr->null_ann + (size_t)(i % tr->o->shards) * LD;
            continue;
        }
        int gh, gw;
        ac_features_grid(&tr->fc, r, &gh, &gw);
        bb->nval[i] = gh * gw;
        if (tr->fc.data && !tr->R) {
            bb->ann[i] = tr->fc.data + (size_t)r * LD;
            continue;
        }
        int k = 0;
        while (k < n_stage && bb->stage_row[k] != r) k++;
        float *slot = bb->stage + (size_t)k * LD;
        if (k == n_stage) {
            bb->stage_row[n_stage++] = r;
            const float *row = ac_features_row(&tr->fc, r, slot);
            if (row != slot) memcpy(slot, row, sizeof(float) * (size_t)tr->Lg * tr->D);
            bb->stage_nval[k] = gh * gw, bb->stage_nreg[k] = 0;
            if (tr->R)
                ac_train_photo_regions(tr, r, gh, gw, slot, &bb->stage_nval[k], &bb->stage_nreg[k],
                                       bb->stage_cat + (size_t)k * tr->R, bb->stage_score + (size_t)k * tr->R);
        }
        bb->nval[i] = bb->stage_nval[k];
        if (bb->nreg)
            bb->nreg[i] = bb->stage_nreg[k], bb->rcat[i] = bb->stage_cat + (size_t)k * tr->R,
            bb->rscore[i] = bb->stage_score + (size_t)k * tr->R;
        bb->ann[i] = slot;
    }
    b->B = B, b->len = bb->len, b->words = bb->words, b->stride = stride, b->ann = bb->ann, b->dctx_sum = NULL;
    b->baseline = 0; /* hard attention: the caller sets it */
    b->n_valid = tr->fc.grids || tr->R ? bb->nval : NULL;
    b->n_regions = bb->nreg, b->region_cat = bb->nreg ? bb->rcat : NULL; /* copy models only */
    b->region_score = bb->nreg ? bb->rscore : NULL;
    b->weight = NULL; /* each caption once (self-critical training weighs its own batch) */
}

static void shuffle(int *perm, int n, uint64_t seed) {
    for (int i = 0; i < n; i++) perm[i] = i;
    uint64_t s = seed;
    for (int i = n - 1; i > 0; i--) {
        s += 0x9E3779B97F4A7C15ull;
        int j = (int)(ac_mix64(s) % (uint64_t)(i + 1));
        int t = perm[i];
        perm[i] = perm[j], perm[j] = t;
    }
}

/* ---------- evaluation ---------- */

static int val_loss(ac_trainer *tr, batch_buf *bb, double *loss, ac_err *err) {
    const int B = tr->o->batch;
    int *sel = ac_malloc(sizeof(int) * (size_t)tr->n_vex);
    if (!sel) return ac_errf(err, "out of memory");
    for (int i = 0; i < tr->n_vex; i++) sel[i] = i;
    double ce = 0;
    long nt = 0;
    for (int p = 0; p < tr->n_vex; p += B) {
        int nb = tr->n_vex - p < B ? tr->n_vex - p : B;
        ac_dec_batch b;
        make_batch(tr, tr->vex, sel + p, nb, NULL, bb, &b);
        ac_dec_stats s;
        if (ac_dec_pool_forward_backward(tr->work, &tr->model.dec, &b, 0, 0, NULL, &s, err)) {
            free(sel);
            return -1;
        }
        ce += s.ce_sum, nt += s.ntok;
    }
    free(sel);
    *loss = nt ? ce / nt : 0;
    return 0;
}

/* Scores them with our metrics (NAN if unavailable). */
static int val_scores(ac_trainer *tr, double *bleu4, double *cider, ac_err *err) {
    *bleu4 = *cider = NAN;
    if (!ac_train_metrics_available()) return 0;
    char **cands = ac_calloc((size_t)tr->n_vi, sizeof(char *));
    int *nref = ac_calloc((size_t)tr->n_vi, sizeof(int));
    char ***refs = ac_calloc((size_t)tr->n_vi, sizeof(char **));
    if (!cands || !nref || !refs) {
        free(cands), free(nref), free(refs);
        return ac_errf(err, "out of memory");
    }
    /* Greedy/beam captions of the validation photos, in parallel threads. */
    int *rows = ac_malloc(sizeof(int) * (size_t)(tr->n_vi + 1));
    int rc = rows ? 0 : ac_errf(err, "out of memory");
    for (int i = 0; !rc && i < tr->n_vi; i++) rows[i] = tr->vi[i].feat;
    const ac_rows_regions reg = {tr->reg, tr->n_reg, tr->R}; /* a regions model sees its photos' regions */
    if (!rc)
        rc = ac_decode_rows(&tr->model.dec, tr->model.vocab, &tr->fc, rows, tr->n_vi, tr->R ? &reg : NULL,
                            &tr->model.decode, tr->o->threads, cands, err);
    free(rows);
    for (int i = 0; i < tr->n_vi; i++) nref[i] = tr->vi[i].n_refs, refs[i] = tr->vi[i].refs;
    if (!rc) rc = ac_train_score(tr->n_vi, (const char *const *)cands, nref, (char *const *const *)refs, bleu4, cider, err);
    for (int i = 0; i < tr->n_vi; i++) free(cands[i]);
    free(cands), free(nref), free(refs);
    return rc;
}

/* ---------- log and plot ---------- */

static int write_log(const ac_trainer *tr, ac_err *err) {
    const ac_train_opts *o = tr->o;
    if (o->log_csv) {
        size_t cap = 256 + (size_t)tr->n_hist * 160, n = 0;
        char *buf = ac_malloc(cap);
        if (!buf) return ac_errf(err, "out of memory");
        /* self-critical training adds the samples' mean reward (CIDEr-D against their photos' captions) */
        n += (size_t)snprintf(buf + n, cap - n, "step,epoch,train_loss,val_loss,bleu4,cider,lr,seconds%s\n",
                              o->scst ? ",reward" : "");
        for (int i = 0; i < tr->n_hist; i++) {
            const ac_hist *r = &tr->hist[i];
            n += (size_t)snprintf(buf + n, cap - n, "%ld,%.4f,%.5f,%.5f,%.5f,%.5f,%.3g,%.1f", r->step, r->epoch,
                                  r->train_loss, r->val_loss, r->bleu4, r->cider, r->lr, r->seconds);
            n += (size_t)(o->scst ? snprintf(buf + n, cap - n, ",%.5f\n", r->reward) : snprintf(buf + n, cap - n, "\n"));
        }
        int rc = ac_write_file_atomic(o->log_csv, buf, n, err);
        free(buf);
        if (rc) return -1;
    }
    if (o->plot_png && tr->n_hist > 0) {
        int n = tr->n_hist;
        double *x = ac_malloc(sizeof(double) * 5 * (size_t)n);
        if (!x) return ac_errf(err, "out of memory");
        double *tl = x + n, *vl = tl + n, *b4 = vl + n, *ci = b4 + n;
        for (int i = 0; i < n; i++) {
            x[i] = (double)tr->hist[i].step, tl[i] = tr->hist[i].train_loss, vl[i] = tr->hist[i].val_loss;
            b4[i] = tr->hist[i].bleu4 * 100, ci[i] = tr->hist[i].cider * 100;
        }
        ac_plot_series s[4] = {{"train loss", tl, 0, 0x1f77b4}, {"val loss", vl, 0, 0xff7f0e},
                               {"val BLEU-4 x100", b4, 1, 0x2ca02c}, {"val CIDEr-D x100", ci, 1, 0xd62728}};
        int ns = isfinite(b4[n - 1]) ? 4 : 2;
        int rc = ac_plot_png(o->plot_png, "attncap train", "step", n, x, s, ns, err);
        free(x);
        if (rc) return -1;
    }
    return 0;
}

/* ---------- the loop ---------- */

/* The photos the model trained on (the data set's training photos with features, and every photo of
 * the extra data sets with features), as metadata "training_photos" records them (model.h). */
static char *training_photos(const ac_trainer *tr) {
    int n = 0, cap = 0;
    for (int d = 0; d <= tr->n_xds; d++) cap += d ? tr->xds[d - 1].n : tr->ds.n;
    const char **names = ac_malloc(sizeof *names * ((size_t)cap + 1));
    if (!names) return NULL;
    for (int d = 0; d <= tr->n_xds; d++) {
        const ac_dataset *ds = d ? &tr->xds[d - 1] : &tr->ds;
        for (int i = 0; i < ds->n; i++)
            if ((d || ds->images[i].split == AC_SPLIT_TRAIN) && ac_features_find(&tr->fc, ds->images[i].key) >= 0)
                names[n++] = ds->images[i].key;
    }
    char *s = ac_training_photos_json(names, n);
    free(names);
    return s;
}

static int save_best(ac_trainer *tr, const ac_hist *h, ac_err *err) {
    const ac_train_opts *o = tr->o;
    char notes[1024];
    snprintf(notes, sizeof notes,
             "{\"step\":%ld,\"epoch\":%.3f,\"val_loss\":%.5f,\"val_bleu4\":%.5f,\"val_cider\":%.5f,\"beam\":%d,"
             "\"train_captions\":%d,\"val_photos\":%d,\"flip\":%d,\"batch\":%d,\"lr\":%g,\"min_count\":%d,"
             "\"clip\":%g,\"max_words\":%d,\"ema\":%g,\"seed\":%llu,\"text_captions\":%d,\"text_batch\":%d,"
             "\"text_weight\":%g,\"extra_data\":%d,\"scst\":%d,\"text_region_found\":%.4f,\"text_region_unnamed\":%.4f}",
             h->step, h->epoch, h->val_loss, isfinite(h->bleu4) ? h->bleu4 : -1, isfinite(h->cider) ? h->cider : -1,
             o->beam, tr->n_ex, tr->n_vi, tr->use_flip, o->batch, o->lr, o->min_count, o->clip, o->max_words, o->ema,
             o->seed, tr->n_tex, tr->n_tex ? tr->text_batch : 0, o->text_weight, tr->n_xds, o->scst,
             tr->unnamed_start ? tr->named_found : 0, tr->unnamed_start ? (double)tr->unnamed_start[tr->n_ex] / tr->n_ex : 0);
    char *counts = ac_train_vocab_counts_json(tr), *photos = counts ? training_photos(tr) : NULL;
    if (!photos) return free(counts), ac_errf(err, "out of memory");
    const char *extra[] = {"training", notes, "vocab_counts", counts, "training_photos", photos, NULL};
    int rc = ac_model_save(&tr->model, o->out, o->fp16, extra, err);
    free(counts), free(photos);
    return rc;
}

/* With a weight average, puts it in the model's place (and back on the second call): evaluation
 * and the saved model see the averaged weights, training the raw ones. */
static void ema_swap(ac_trainer *tr) {
    if (!tr->ema) return;
    const size_t n = tr->model.dec.n_params;
    float *p = tr->model.dec.params;
    for (size_t i = 0; i < n; i++) {
        const float t = p[i];
        p[i] = tr->ema[i], tr->ema[i] = t;
    }
}

static int evaluate(ac_trainer *tr, batch_buf *bb, const char *metric, double t0, double secs_base, ac_err *err) {
    ac_train_state *s = &tr->st;
    if (tr->o->on_event) {
        const ac_train_event ev = {.kind = AC_TRAIN_VALIDATING};
        tr->o->on_event(&ev, tr->o->user);
    }
    ac_hist h;
    memset(&h, 0, sizeof h);
    h.step = s->step;
    h.epoch = s->epoch + (double)s->pos / tr->steps;
    h.train_loss = s->win_tok ? s->win_ce / s->win_tok : NAN;
    h.reward = s->win_photos ? s->win_reward / s->win_photos : NAN;
    h.lr = s->lr;
    ema_swap(tr);
    int rc = val_loss(tr, bb, &h.val_loss, err) || val_scores(tr, &h.bleu4, &h.cider, err) ? -1 : 0;
    if (rc) {
        ema_swap(tr);
        return -1;
    }
    const long win_tok = s->win_tok;
    s->win_ce = 0, s->win_tok = 0, s->win_reward = 0, s->win_photos = 0, s->evals++;
    double score = !strcmp(metric, "loss") ? -h.val_loss : !strcmp(metric, "bleu4") ? h.bleu4 : h.cider;
    /* Ties (e.g. CIDEr-D still 0 early on) go to the lower validation loss. */
    int best = isfinite(score) && (score > s->best + 1e-9 || (score >= s->best - 1e-9 && h.val_loss < s->best_loss));
    h.seconds = secs_base + (ac_now() - t0);
    /* training tokens per second since the previous evaluation (its time included) */
    const double span = h.seconds - (tr->n_hist ? tr->hist[tr->n_hist - 1].seconds : 0);
    if (ac_train_hist_add(tr, &h)) return ac_errf(err, "out of memory");
    if (best) {
        s->best = score, s->best_loss = h.val_loss, s->best_step = s->step, s->bad = 0;
        rc = save_best(tr, &h, err);
    }
    ema_swap(tr);
    if (rc) return -1;
    if (!best) {
        s->bad++;
        if (s->bad % tr->o->lr_patience == 0) s->lr = fmax(s->lr * tr->o->lr_decay, tr->o->lr_min);
        if (s->bad >= tr->o->patience) s->done = 1;
    }
    if (write_log(tr, err)) return -1;
    if (tr->o->on_event) {
        const ac_train_event ev = {.kind = AC_TRAIN_EVALUATION, .step = h.step, .epoch_frac = h.epoch,
                                   .train_loss = h.train_loss, .val_loss = h.val_loss, .bleu4 = h.bleu4,
                                   .cider = h.cider, .lr = h.lr, .minutes = h.seconds / 60,
                                   .window_tok_per_s = span > 0 ? win_tok / span : 0, .best = best,
                                   .stopping = !best && s->done, .reward = h.reward};
        tr->o->on_event(&ev, tr->o->user);
    }
    return 0;
}

static void announce_finish(const ac_trainer *tr, const char *metric, ac_train_finish why) {
    if (!tr->o->on_event) return;
    const ac_train_state *s = &tr->st;
    const ac_train_event ev = {.kind = AC_TRAIN_FINISHED, .finish = why, .step = s->step, .epoch = s->epoch,
                               .epochs = tr->o->epochs, .best_step = s->best_step,
                               .best_score = isfinite(s->best) ? s->best : NAN, .metric = metric,
                               .stopping = s->done};
    tr->o->on_event(&ev, tr->o->user);
}

/* A resumed run that had already finished (stopped early, or all its epochs done) with its model
 * saved: says so and has nothing to do. More epochs than it had, and it goes on. */
static int finished_before(const ac_trainer *tr, const char *metric) {
    const ac_train_state *s = &tr->st;
    const int over = s->done || s->epoch >= tr->o->epochs || (tr->o->max_steps > 0 && s->step >= tr->o->max_steps);
    if (!over || !ac_is_file(tr->o->out)) return 0;
    announce_finish(tr, metric, AC_TRAIN_WAS_FINISHED);
    return 1;
}

/* The model's directory is created (and checked writable) up front: finding out at the first
 * checkpoint, minutes into a run, would waste them. */
static int out_dir_ready(const char *out, ac_err *err) {
    char *dir = ac_strdup(out);
    if (!dir) return ac_errf(err, "out of memory");
    char *slash = strrchr(dir, '/');
    int rc = 0;
    if (slash && slash != dir) {
        *slash = 0;
        rc = ac_mkdirs(dir, err);
    } else if (slash) {
        dir[1] = 0;
    } else {
        strcpy(dir, ".");
    }
    if (!rc && access(dir, W_OK | X_OK)) rc = ac_errf(err, "%s: cannot write the model there (%s)", dir, ac_strerror(errno));
    free(dir);
    return rc;
}

static void trainer_free(ac_trainer *tr) {
    for (int i = 0; i < tr->n_ex; i++) free(tr->ex[i].w), free(tr->ex[i].wf);
    for (int i = 0; i < tr->n_vex; i++) free(tr->vex[i].w);
    for (int i = 0; i < tr->n_vi; i++) {
        for (int k = 0; k < tr->vi[i].n_refs; k++) free(tr->vi[i].refs[k]);
        free(tr->vi[i].refs);
    }
    free(tr->ex), free(tr->vex), free(tr->vi), free(tr->hist), free(tr->img_start), free(tr->img_n);
    free(tr->grad), free(tr->m), free(tr->v), free(tr->ema);
    for (int i = 0; i < tr->n_tex; i++) free(tr->tex[i].w);
    free(tr->tex), free(tr->null_ctx), free(tr->null_m), free(tr->null_v), free(tr->null_g), free(tr->null_ann);
    free(tr->reg), free(tr->n_reg);
    free(tr->named_score), free(tr->unnamed_cat), free(tr->unnamed_score), free(tr->unnamed_start);
    ac_train_scst_free(tr);
    free(tr->grad_text), free(tr->text_perm), free(tr->cnt_paired), free(tr->cnt_text);
    for (int i = 0; i < tr->n_xds; i++) ac_dataset_free(&tr->xds[i]);
    ac_dec_pool_free(tr->work);
    ac_model_free(&tr->model);
    ac_features_free(&tr->fc);
    ac_dataset_free(&tr->ds);
}

/* The text half of a step: a batch of captions without photos through dec_text (the model's weights,
 * no attention penalty), its gradient folded into tr->grad by tokens against the photo batch's
 * n_photo_tok (times text_weight), and the no-photo context's gradient into tr->null_g. *text_loss
 * tracks the text batches' cross-entropy per token (a running average). */
static int text_step(ac_trainer *tr, const ac_decoder *dec_text, batch_buf *bb, int *sel, ac_dec_stats *st,
                     double *text_loss, long n_photo_tok, ac_err *err) {
    const ac_train_opts *o = tr->o;
    const size_t LD = (size_t)tr->L * tr->D, np = tr->model.dec.n_params;
    for (int s = 0; s < o->shards; s++)
        for (size_t l = 0; l < (size_t)tr->L; l++)
            memcpy(tr->null_ann + s * LD + l * tr->D, tr->null_ctx, sizeof(float) * (size_t)tr->D);
    if (ac_train_text_select(tr, tr->st.step, sel, err)) return -1;
    ac_dec_batch b;
    bb->seed = (uint64_t)tr->st.step;
    make_batch(tr, tr->tex, sel, tr->text_batch, NULL, bb, &b);
    b.dctx_sum = tr->null_g;
    if (ac_dec_pool_forward_backward(tr->work, dec_text, &b, 1,
                                     ac_mix64(~o->seed ^ ((uint64_t)tr->st.step * 0x94D049BB133111EBull)), tr->grad_text,
                                     st, err))
        return -1;
    const double wt = (double)o->text_weight * st->ntok, wp = (double)n_photo_tok, k = 1.0 / (wp + wt);
    const float kp = (float)(wp * k), kt = (float)(wt * k);
    for (size_t i = 0; i < np; i++) tr->grad[i] = kp * tr->grad[i] + kt * tr->grad_text[i];
    for (int d = 0; d < tr->D; d++) tr->null_g[d] *= kt;
    const double l = st->ntok ? st->ce_sum / st->ntok : 0;
    *text_loss = *text_loss > 0 ? 0.98 * *text_loss + 0.02 * l : l;
    return 0;
}

int ac_train(const ac_train_opts *oin, ac_err *err) {
    ac_train_opts o = *oin;
    ac_trainer tr;
    memset(&tr, 0, sizeof tr);
    tr.o = &o;
    tr.st.best = -INFINITY, tr.st.best_loss = INFINITY;
    tr.model.decode = ac_beam_defaults(); /* validation captions: the defaults with --beam */
    tr.model.decode.beam = o.beam;
    if (!o.data || !o.features || !o.out) return ac_errf(err, "train: the data set, the feature cache and the output model are required");
    if (o.batch < 1 || o.batch > 4096) return ac_errf(err, "train: batch size %d out of range [1, 4096]", o.batch);
    if (!(o.lr > 0 && o.lr < 1)) return ac_errf(err, "train: learning rate %g out of range (0, 1)", o.lr);
    if (!(o.lr_min >= 0 && o.lr_min <= o.lr))
        return ac_errf(err, "train: learning-rate floor %g out of range [0, %g] (the learning rate)", o.lr_min, o.lr);
    if (o.max_words < 1 || o.max_words > 1000) return ac_errf(err, "train: longest training caption %d out of range [1, 1000] words", o.max_words);
    if (o.beam < 1 || o.beam > 100) return ac_errf(err, "train: validation beam %d out of range [1, 100]", o.beam);
    if (o.shards < 1 || o.shards > 64) return ac_errf(err, "train: %d batch shards out of range [1, 64]", o.shards);
    if (o.lr_patience < 1) return ac_errf(err, "train: evaluations before a learning-rate decay must be >= 1");
    if (o.epochs < 0 || o.patience < 1) return ac_errf(err, "train: epochs must be >= 0 and the early-stopping patience >= 1");
    const int kind = o.decoder ? ac_decoder_kind_parse(o.decoder) : AC_DECODER_LSTM;
    if (kind < 0) return ac_errf(err, "train: decoder '%s' is not one of lstm, transformer", o.decoder);
    const int tf = kind == AC_DECODER_TRANSFORMER;
    const int score = o.attention ? ac_decoder_attention_parse(o.attention) : tf ? AC_ATTENTION_SCALED_DOT : AC_ATTENTION_ADDITIVE;
    if (score < 0)
        return ac_errf(err, "train: attention score '%s' is not one of additive, dot, scaled-dot, general, cosine",
                       o.attention);
    const int mode = o.attention_mode ? ac_decoder_attention_mode_parse(o.attention_mode) : AC_ATTENTION_SOFT;
    if (mode < 0) return ac_errf(err, "train: attention mode '%s' is not soft or hard", o.attention_mode);
    if (tf && score != AC_ATTENTION_SCALED_DOT)
        return ac_errf(err, "train: the transformer's attention is scaled-dot, not %s", o.attention);
    if (!tf && o.layers > 0) return ac_errf(err, "train: layers are the transformer's (the LSTM has one)");
    if (tf && mode == AC_ATTENTION_HARD)
        return ac_errf(err, "train: hard attention is the LSTM decoder's (the transformer's attention is soft)");
    const char *metric = o.val_metric ? o.val_metric : ac_train_metrics_available() ? "cider" : "loss";
    if (strcmp(metric, "loss") && strcmp(metric, "bleu4") && strcmp(metric, "cider"))
        return ac_errf(err, "train: validation metric must be cider, bleu4 or loss, not '%s'", metric);
    if (o.scst == 1) return ac_errf(err, "train: self-critical training samples at least 2 captions a photo (scst 2 or more)");
    if (strcmp(metric, "loss") && !ac_train_metrics_available())
        return ac_errf(err, "train: validation metric %s needs the metrics module, not built yet (use loss)", metric);
    int rc = -1;
    batch_buf bb = {0};
    int *perm = NULL, *flip = NULL, *selbuf = NULL;
    ac_scst_photo *photos = NULL; /* self-critical training: a step's photos */
    char kept[1024] = ""; /* on resume, the options given that the checkpoint's override (force) */
    if (out_dir_ready(o.out, err)) return -1;
    if (o.resume) {
        char *cp = ac_train_ckpt_path(o.out);
        int exists = cp && ac_is_file(cp);
        free(cp);
        if (!exists) {
            ac_errf(err, "%s.ckpt: no checkpoint to resume from", o.out);
            goto done;
        }
        if (ac_train_load_ckpt(&tr, &o, kept, sizeof kept, err)) goto done;
        if (o.val_metric) metric = o.val_metric; /* forced: the checkpoint's (its best is in its units) */
    }
    if (ac_train_load_data(&tr, err)) goto done;
    if (!tr.model.encoder_json) {
        /* NULL would be saved as "{}": a model that names no encoder */
        if (!(tr.model.encoder_json = ac_strdup(tr.fc.encoder_json ? tr.fc.encoder_json : "{}"))) goto oom;
    } else if (tr.fc.encoder_json && strcmp(tr.model.encoder_json, tr.fc.encoder_json)) {
        ac_errf(err, "%s: features come from a different encoder than the checkpoint's", o.features);
        goto done;
    }
    if (o.resume) {
        const ac_decoder_config *c = &tr.model.dec.cfg;
        if (c->dim != tr.D || c->n_ann != tr.L) {
            ac_errf(err, "%s: features are %dx%d, the checkpoint's decoder wants %dx%d", o.features, tr.L, tr.D,
                    c->n_ann, c->dim);
            goto done;
        }
        if (finished_before(&tr, metric)) {
            rc = 0;
            goto done;
        }
        if (o.on_event) {
            const ac_train_event ev = {.kind = AC_TRAIN_RESUMED, .step = tr.st.step, .epoch = tr.st.epoch + 1,
                                       .epochs = o.epochs, .pos = tr.st.pos, .note = kept[0] ? kept : NULL};
            o.on_event(&ev, o.user);
        }
    } else if (o.copy && !tr.R) {
        ac_errf(err, "copy needs regions: the training photos' detections");
        goto done;
    } else {
        ac_decoder_config c = {.vocab = ac_vocab_size(tr.model.vocab), .embed = o.embed, .hidden = o.hidden,
                               .att = o.att, .dim = tr.D, .n_ann = tr.L, .grid_h = tr.fc.grid_h,
                               .grid_w = tr.fc.grid_w, .dropout = o.dropout, .lambda = o.lambda,
                               .attention = score, .heads = o.heads > 1 ? o.heads : 0, .decoder = kind,
                               .attention_mode = mode, .regions = tr.R, .region_scale = tr.region_scale,
                               .region_min_score = tr.region_min, .copy = tr.R > 0 ? o.copy : 0,
                               .absent = tr.R > 0 && o.copy ? o.absent : 0,
                               .object_init = tr.R > 0 && o.copy ? o.object_init : 0,
                               .imagenet_words = tr.R > 0 && o.copy ? tr.model.imagenet.n : 0};
        if (tf) { /* attention width = model width; no doubly stochastic penalty; 4 heads and 2 layers by default */
            c.att = o.embed, c.lambda = 0, c.layers = o.layers > 0 ? o.layers : 2;
            c.heads = o.heads > 1 ? o.heads : o.heads == 1 ? 0 : 4;
        }
        if (mode == AC_ATTENTION_HARD)
            c.reinforce = o.reinforce, c.entropy = o.entropy, c.expected = o.expected_context;
        if (ac_decoder_init(&tr.model.dec, &c, o.seed, err)) goto done;
        /* Output bias = log unigram frequency of the targets: the model starts at the unigram
         * distribution instead of uniform, which saves the first few hundred steps. */
        double *cnt = ac_calloc((size_t)c.vocab, sizeof(double)), tot = 0;
        if (!cnt) goto oom;
        for (int i = 0; i < tr.n_ex + tr.n_tex; i++) {
            const ac_train_example *e = i < tr.n_ex ? &tr.ex[i] : &tr.tex[i - tr.n_ex];
            for (int k = 0; k < e->n; k++) cnt[e->w[k]] += 1;
            cnt[AC_END] += 1;
        }
        for (int v = 0; v < c.vocab; v++) tot += cnt[v];
        tr.st.hard_baseline = 0; /* the initial model's cross-entropy per token: the targets' unigram entropy */
        for (int v = 0; v < c.vocab; v++) {
            tr.model.dec.out_bo[v] = (float)log((cnt[v] + 0.1) / (tot + 0.1 * c.vocab));
            if (cnt[v] > 0) tr.st.hard_baseline -= cnt[v] / tot * log(cnt[v] / tot);
        }
        free(cnt);
        tr.st.lr = o.lr;
        if (o.init && ac_train_warm_start(&tr, o.init, err)) goto done;
    }
    if (tr.model.dec.cfg.copy && ac_model_copy_words(&tr.model, err)) goto done;
    const size_t np = tr.model.dec.n_params;
    tr.grad = ac_malloc(sizeof(float) * np);
    if (!tr.m) tr.m = ac_calloc(np, sizeof(float)), tr.v = ac_calloc(np, sizeof(float));
    if (o.ema > 0 && !tr.ema) {
        if (!(tr.ema = ac_malloc(sizeof(float) * np))) goto oom;
        memcpy(tr.ema, tr.model.dec.params, sizeof(float) * np);
    }
    /* Shards in parallel threads, each with single-threaded BLAS (see ac_dec_pool). */
    const int threads = o.threads > 0 ? o.threads : ac_default_threads();
    ac_set_threads(o.shards > 1 ? 1 : threads);
    /* Grouped batches: whole photos (all their captions), about `batch` captions per step. */
    tr.per_batch = (int)lround((double)o.batch * tr.n_img / tr.n_ex);
    if (tr.per_batch < 1) tr.per_batch = 1;
    tr.steps = o.group ? (tr.n_img + tr.per_batch - 1) / tr.per_batch : (tr.n_ex + o.batch - 1) / o.batch;
    int capb = o.group && tr.per_batch * tr.max_caps > o.batch ? tr.per_batch * tr.max_caps : o.batch;
    if (tr.n_tex > 0) {
        if (ac_train_text_init(&tr, err)) goto done;
        if (tr.text_batch > capb) capb = tr.text_batch;
    }
    if (o.scst && tr.per_batch * o.scst > capb) capb = tr.per_batch * o.scst;
    if (capb > 4096) {
        ac_errf(err, "train: a batch of %d captions is over 4096", capb);
        goto done;
    }
    tr.work = ac_dec_pool_new(&tr.model.dec.cfg, o.shards, threads, capb, o.max_words + 1);
    bb.idx = ac_malloc(sizeof(int) * (size_t)capb), bb.len = ac_malloc(sizeof(int) * (size_t)capb);
    bb.flip = ac_malloc(sizeof(int) * (size_t)capb);
    bb.words = ac_calloc((size_t)capb * (size_t)o.max_words, sizeof(int));
    bb.ann = ac_malloc(sizeof(float *) * (size_t)capb);
    bb.nval = ac_malloc(sizeof(int) * (size_t)capb);
    if (!tr.fc.data || tr.R) {
        bb.stage = ac_malloc(sizeof(float) * (size_t)capb * tr.L * tr.D);
        bb.stage_row = ac_malloc(sizeof(int) * (size_t)capb);
        bb.stage_nval = ac_malloc(sizeof(int) * (size_t)capb);
        bb.stage_nreg = ac_malloc(sizeof(int) * (size_t)capb);
        bb.stage_cat = ac_malloc((size_t)capb * (tr.R + 1));
        bb.stage_score = ac_malloc(sizeof(float) * (size_t)capb * (tr.R + 1));
        if (!bb.stage || !bb.stage_row || !bb.stage_nval || !bb.stage_nreg || !bb.stage_cat || !bb.stage_score) goto oom;
        if (tr.model.dec.cfg.copy) { /* the regions' categories and scores reach the decoder */
            bb.nreg = ac_malloc(sizeof(int) * (size_t)capb), bb.rcat = ac_malloc(sizeof *bb.rcat * (size_t)capb);
            bb.rscore = ac_malloc(sizeof *bb.rscore * (size_t)capb);
            if (!bb.nreg || !bb.rcat || !bb.rscore) goto oom;
        }
    }
    const int n_perm = o.group ? tr.n_img : tr.n_ex;
    perm = ac_malloc(sizeof(int) * (size_t)n_perm), flip = ac_malloc(sizeof(int) * (size_t)capb);
    selbuf = ac_malloc(sizeof(int) * (size_t)capb);
    if (o.scst && ac_train_scst_init(&tr, tr.per_batch, err)) goto done;
    ac_decoder dec_scst = tr.model.dec; /* the sampled captions' objective is the reward's alone */
    dec_scst.cfg.lambda = 0;
    if (o.scst && !(photos = ac_malloc(sizeof *photos * (size_t)tr.per_batch))) goto oom;
    ac_decoder dec_text = tr.model.dec; /* the same weights; no attention penalty for the no-photo context */
    dec_text.cfg.lambda = 0;
    /* and soft attention: its L vectors are one, so every location gives the same context (a sample's
     * REINFORCE term would only add noise) */
    dec_text.cfg.attention_mode = AC_ATTENTION_SOFT;
    if (!tr.grad || !tr.m || !tr.v || !tr.work || !bb.idx || !bb.len || !bb.flip || !bb.words || !bb.ann || !bb.nval || !perm ||
        !flip || !selbuf)
        goto oom;
    if (o.on_event) {
        const ac_train_event ev = {.kind = AC_TRAIN_START, .captions = tr.n_ex, .flipped = tr.use_flip,
                                   .text_captions = tr.n_tex, .text_batch = tr.n_tex ? tr.text_batch : 0,
                                   .val_photos = tr.n_vi, .vocab = ac_vocab_size(tr.model.vocab),
                                   .grouped = o.group, .mapped_features = tr.fc.mapped_row != NULL, .params = np,
                                   .photos = tr.n_photos, .missing_photos = tr.n_missing, .held_out = tr.n_held_out,
                                   .steps = tr.steps, .epochs = o.epochs};
        o.on_event(&ev, o.user);
    }
    const int steps = tr.steps;
    const double t0 = ac_now(), secs_base = tr.n_hist ? tr.hist[tr.n_hist - 1].seconds : 0;
    ac_train_state *s = &tr.st;
    int stop = 0;
    while (!s->done && !stop && s->epoch < o.epochs) {
        const int ep = s->epoch;
        shuffle(perm, n_perm, ac_mix64(o.seed * 0x9E3779B97F4A7C15ull + (uint64_t)ep + 1));
        if (o.on_event) {
            const ac_train_event ev = {.kind = AC_TRAIN_EPOCH, .epoch = ep + 1, .epochs = o.epochs, .pos = s->pos,
                                       .steps = steps};
            o.on_event(&ev, o.user);
        }
        double tp = ac_now(), text_loss = 0;
        long tok_p = 0;
        while (s->pos < steps) {
            const int *sel;
            int nb;
            if (o.group) { /* whole photos; a photo's captions all use the same (flipped or not) features */
                const int k0 = s->pos * tr.per_batch, k1 = k0 + tr.per_batch < tr.n_img ? k0 + tr.per_batch : tr.n_img;
                nb = 0;
                for (int k = k0; k < k1; k++) {
                    const int im = perm[k];
                    const int f = tr.use_flip && (ac_mix64(o.seed * 31 + (uint64_t)ep * 1000003u + (uint64_t)im) & 1);
                    for (int c = 0; c < tr.img_n[im]; c++) selbuf[nb] = tr.img_start[im] + c, flip[nb++] = f;
                }
                sel = selbuf;
            } else {
                sel = perm + (size_t)s->pos * o.batch;
                nb = tr.n_ex - s->pos * o.batch < o.batch ? tr.n_ex - s->pos * o.batch : o.batch;
                for (int i = 0; i < nb; i++)
                    flip[i] = tr.use_flip && (ac_mix64(o.seed * 31 + (uint64_t)ep * 1000003u + (uint64_t)sel[i]) & 1);
            }
            ac_dec_batch b;
            make_batch(&tr, tr.ex, sel, nb, o.scst ? NULL : flip, &bb, &b);
            b.baseline = s->hard_baseline;
            ac_dec_stats ds;
            if (o.scst) { /* the step's photos, captioned by the model itself */
                const int k0 = s->pos * tr.per_batch, n = (k0 + tr.per_batch < tr.n_img ? k0 + tr.per_batch : tr.n_img) - k0;
                for (int q = 0; q < n; q++) {
                    const int im = perm[k0 + q], e = tr.img_start[im];
                    int i = 0;
                    while (i < b.B && sel[bb.idx[i]] != e) i++;
                    ac_scst_photo *ph = &photos[q];
                    ac_features_grid(&tr.fc, tr.ex[e].feat, &ph->gh, &ph->gw);
                    const int nval = b.n_valid ? b.n_valid[i] : tr.L;
                    ph->ann = b.ann[i], ph->img = im;
                    ph->n_regions = b.n_regions ? b.n_regions[i] : nval - ph->gh * ph->gw;
                    ph->cat = b.region_cat ? b.region_cat[i] : NULL, ph->score = b.region_score ? b.region_score[i] : NULL;
                }
                double reward;
                if (ac_train_scst_batch(&tr, &tr.model.dec, photos, n, s->step, &b, &reward, err) ||
                    ac_dec_pool_forward_backward(tr.work, &dec_scst, &b, 0, 0, tr.grad, &ds, err))
                    goto done;
                s->win_reward += reward * n, s->win_photos += n;
            } else if (ac_dec_pool_forward_backward(tr.work, &tr.model.dec, &b, 1,
                                                    ac_mix64(o.seed ^ ((uint64_t)s->step * 0xD1B54A32D192ED03ull)),
                                                    tr.grad, &ds, err))
                goto done;
            if (tr.n_tex > 0 && !o.scst) { /* and a batch of captions without photos, combined by tokens */
                ac_dec_stats dt;
                if (text_step(&tr, &dec_text, &bb, selbuf, &dt, &text_loss, ds.ntok, err)) goto done;
            }
            if (!isfinite(ds.loss)) {
                ac_errf(err, "train: loss became %g at step %ld (try a lower learning rate)", ds.loss, s->step);
                goto done;
            }
            s->step++;
            /* The average starts as a short one and lengthens to 1 / (1 - ema) steps, so the
             * random initialisation is forgotten quickly. */
            const float ema_d = fminf(o.ema, (float)((1.0 + s->step) / (10.0 + s->step)));
            ac_clip_and_adam(tr.model.dec.params, tr.grad, tr.m, tr.v, tr.ema, ema_d, np, o.clip, s->lr, s->step,
                             o.weight_decay, threads);
            if (tr.n_tex > 0)
                ac_clip_and_adam(tr.null_ctx, tr.null_g, tr.null_m, tr.null_v, NULL, 0, (size_t)tr.D, o.clip, s->lr,
                                 s->step, 0, 1);
            s->win_ce += ds.ce_sum, s->win_tok += ds.ntok;
            if (ds.hard_ntok > 0) s->hard_baseline = 0.9 * s->hard_baseline + 0.1 * ds.hard_ce_sum / ds.hard_ntok;
            s->pos++;
            tok_p += ds.ntok;
            if (o.on_event) {
                const double dt = ac_now() - tp;
                const ac_train_event ev = {.kind = AC_TRAIN_PROGRESS, .epoch = ep + 1, .epochs = o.epochs,
                                           .pos = s->pos, .steps = steps,
                                           .loss = s->win_tok ? s->win_ce / s->win_tok : 0,
                                           .text_loss = tr.n_tex > 0 && !o.scst ? text_loss : NAN,
                                           .tok_per_s = dt > 0 ? tok_p / dt : 0, .seconds = dt,
                                           .reward = s->win_photos ? s->win_reward / s->win_photos : NAN};
                o.on_event(&ev, o.user);
            }
            const int end_epoch = s->pos == steps;
            if (end_epoch) s->epoch++, s->pos = 0;
            int do_eval = o.eval_every > 0 ? s->step % o.eval_every == 0 : end_epoch;
            if (do_eval && evaluate(&tr, &bb, metric, t0, secs_base, err)) goto done;
            if (o.max_steps > 0 && s->step >= o.max_steps) stop = 1;
            if (do_eval || end_epoch || stop || (o.checkpoint_every > 0 && s->step % o.checkpoint_every == 0))
                if (ac_train_save_ckpt(&tr, err)) goto done;
            if (end_epoch || stop || s->done) break;
        }
    }
    /* Always leave a model behind, even when stopped before any evaluation. */
    if (!ac_is_file(o.out)) {
        if (evaluate(&tr, &bb, metric, t0, secs_base, err) || ac_train_save_ckpt(&tr, err)) goto done;
        if (!ac_is_file(o.out) && save_best(&tr, &tr.hist[tr.n_hist - 1], err)) goto done;
    }
    if (s->done || s->epoch >= o.epochs) /* over for good: a resume will say so (a max_steps stop may go on) */
        announce_finish(&tr, metric, s->done ? AC_TRAIN_EARLY_STOP : AC_TRAIN_ALL_EPOCHS);
    else if (stop)
        announce_finish(&tr, metric, AC_TRAIN_MAX_STEPS);
    rc = 0;
    goto done;
oom:
    ac_errf(err, "train: out of memory");
done:
    free(bb.idx), free(bb.len), free(bb.flip), free(bb.words), free(bb.ann), free(bb.nval), free(bb.stage), free(bb.stage_row), free(bb.stage_nval);
    free(bb.stage_nreg), free(bb.stage_cat), free(bb.stage_score), free(bb.nreg), free(bb.rcat), free(bb.rscore);
    free(perm), free(flip), free(selbuf), free(photos);
    trainer_free(&tr);
    return rc;
}
