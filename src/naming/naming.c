/* naming.c: tags -> constraints of the beam search, confidence and description (naming.h). */
#include "attncap/naming.h"

#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "attncap/decoder.h"
#include "attncap/objects.h"
#include "attncap/tokenize.h"
#include "alloc_internal.h"

#define MAX_TAGS 16

/* A tag on its way to a constraint: its alternatives as phrases of vocabulary ids. */
typedef struct cand {
    ac_caption_tag tag;
    int rare; /* AUTO: names an object the training photos' captions hardly said (trust_seen) */
    int n_alt;
    ac_phrase alt[AC_MAX_ALTERNATIVES];
} cand;

/* Adds a surface form (tokenized as captions are) if every token is in the vocabulary and it fits a
 * constraint phrase. -1 (message in err) only when out of memory: a form the tokenizer refuses is
 * skipped. */
static int add_form(cand *c, const ac_vocab *v, const char *form, ac_err *err) {
    ac_tokens t;
    if (c->n_alt >= AC_MAX_ALTERNATIVES) return 0;
    const int tr = ac_tokenize(form, &t, err);
    if (tr == -2) return -1;
    if (tr) return 0;
    ac_phrase p = {.n = t.n};
    int ok = t.n >= 1 && t.n <= AC_MAX_PHRASE;
    for (int k = 0; ok && k < t.n; k++) ok = (p.words[k] = ac_vocab_id(v, t.tok[k])) > AC_UNK;
    ac_tokens_free(&t);
    for (int a = 0; ok && a < c->n_alt; a++) ok = memcmp(&c->alt[a], &p, sizeof p) != 0;
    if (ok) c->alt[c->n_alt++] = p;
    return 0;
}

static void set_word(cand *c, const char *word) { snprintf(c->tag.word, sizeof c->tag.word, "%s", word); }

/* AUTO: the table's tags of the photo, with the class each comes from. */
static int auto_tags(const ac_model *m, const ac_tag_table *t, const ac_naming_opts *o, const float *probs, int n_rows,
                     int n_classes, cand *out, ac_err *err) {
    ac_tag tags[MAX_TAGS];
    const int n = ac_tags_from_probs(t, probs, n_rows, n_classes, o->threshold, tags, MAX_TAGS, err);
    if (n < 0) return -1;
    for (int i = 0; i < n; i++) {
        cand *c = &out[i];
        memset(c, 0, sizeof *c);
        set_word(c, ac_tag_word(t, tags[i].word));
        c->tag.prob = tags[i].prob;
        c->tag.precision = (float)ac_tag_precision_of(&m->tag_precision, c->tag.word, c->tag.prob);
        float best = -1;
        for (int r = 0; r < n_rows; r++)
            for (int k = 0; k < n_classes; k++)
                if (ac_tag_class_word(t, k) == tags[i].word && probs[(size_t)r * n_classes + k] > best) {
                    best = probs[(size_t)r * n_classes + k];
                    snprintf(c->tag.cls, sizeof c->tag.cls, "%s", ac_tag_class_label(t, k));
                }
        const char *const *forms;
        const int nf = ac_tag_word_forms(t, tags[i].word, &forms);
        for (int f = 0; f < nf; f++)
            if (add_form(c, m->vocab, forms[f], err)) return -1;
        c->tag.in_vocab = c->n_alt > 0;
    }
    return n;
}

/* GIVEN: the user's words; a word the table knows brings its forms (cat -> cats), another its own
 * plural made the simple way. */
static int given_tags(const ac_model *m, const ac_tag_table *t, const char *words, cand *out, ac_err *err) {
    char *list = ac_strdup(words ? words : ""), *save = NULL;
    if (!list) return ac_errf(err, "out of memory");
    int n = 0;
    for (char *w = strtok_r(list, ",", &save); w; w = strtok_r(NULL, ",", &save)) {
        while (*w == ' ') w++;
        for (char *e = w + strlen(w); e > w && e[-1] == ' ';) *--e = 0;
        if (!*w) continue;
        if (n == AC_MAX_CONSTRAINTS) {
            free(list);
            return ac_errf(err, "tags: at most %d words can be required", AC_MAX_CONSTRAINTS);
        }
        if (strlen(w) >= sizeof out[n].tag.word) {
            free(list);
            return ac_errf(err, "tags: '%.20s...' is too long", w);
        }
        cand *c = &out[n++];
        memset(c, 0, sizeof *c);
        set_word(c, w);
        c->tag.prob = 1;
        c->tag.precision = NAN;
        const int tw = ac_tag_word_index(t, w);
        if (tw >= 0) {
            const char *const *forms;
            const int nf = ac_tag_word_forms(t, tw, &forms);
            for (int f = 0; f < nf && n > 0; f++)
                if (add_form(c, m->vocab, forms[f], err)) n = -1;
        } else {
            char pl[80];
            snprintf(pl, sizeof pl, "%s%s", w, w[strlen(w) - 1] == 's' ? "es" : "s");
            if (add_form(c, m->vocab, w, err) || add_form(c, m->vocab, pl, err)) n = -1;
        }
        if (n < 0) break;
        c->tag.in_vocab = c->n_alt > 0;
    }
    free(list);
    return n;
}

/* 1 if the caption's words contain one of the candidate's phrases (as vocabulary ids), else 0. */
static int caption_has_tag(const ac_caption *cap, const cand *c) {
    for (int a = 0; a < c->n_alt; a++)
        for (int k = 0; k + c->alt[a].n <= cap->n; k++)
            if (!memcmp(cap->words + k, c->alt[a].words, sizeof(int) * (size_t)c->alt[a].n)) return 1;
    return 0;
}

void ac_name_task_grid(const ac_decoder_config *cfg, const ac_name_task *task, int *gh, int *gw) {
    *gh = task->grid_h > 0 ? task->grid_h : cfg->grid_h;
    *gw = task->grid_w > 0 ? task->grid_w : cfg->grid_w;
}

ac_dec_image *ac_name_task_prepare(const ac_decoder *dec, const ac_name_task *task, ac_err *err) {
    int gh, gw;
    ac_name_task_grid(&dec->cfg, task, &gh, &gw);
    if (ac_decoder_check_grid(&dec->cfg, gh, gw, err)) return NULL;
    ac_dec_image *img = ac_decoder_prepare_regions(dec, task->ann, gh, gw, task->n_regions);
    if (!img) {
        ac_errf(err, "out of memory");
        return NULL;
    }
    /* detected, even none: the categories it has and lacks (config.copy, config.absent) */
    if (task->regions) ac_dec_image_set_regions(img, task->regions);
    return img;
}

void ac_name_tasks_copy_account(const ac_decoder *dec, int n, ac_name_task *tasks, const ac_dec_image *const *img) {
    ac_caption **c = ac_malloc(sizeof *c * (size_t)(n > 0 ? n : 1));
    const ac_dec_image **on = ac_malloc(sizeof *on * (size_t)(n > 0 ? n : 1));
    int m = 0;
    for (int i = 0; c && on && i < n; i++)
        if (img[i] && !tasks[i].failed) c[m] = &tasks[i].out, on[m++] = img[i];
    ac_err err = {0};
    const int rc = !c || !on ? ac_errf(&err, "out of memory") : ac_captions_copy_account(dec, m, c, on, &err);
    for (int i = 0; rc && i < n; i++)
        if (img[i] && !tasks[i].failed) tasks[i].failed = 1, tasks[i].err = err;
    free(c), free(on);
}

/* "a photo of a cat": the model's own probability and attention for it (teacher forcing). */
static int describe(const ac_model *m, const ac_name_task *task, const char *word, ac_caption *out, ac_err *err) {
    char text[160];
    snprintf(text, sizeof text, "a photo of %s %s", ac_article_for(word), word);
    ac_tokens t;
    if (ac_tokenize(text, &t, err)) return -1;
    int *ids = ac_malloc(((size_t)t.n + 1) * sizeof *ids);
    int rc = ids ? 0 : ac_errf(err, "out of memory");
    if (!rc) ac_vocab_encode(m->vocab, &t, ids);
    int gh, gw;
    ac_name_task_grid(&m->dec.cfg, task, &gh, &gw);
    if (!rc) rc = ac_caption_forced_grid(&m->dec, task->ann, gh, gw, ids, t.n, out, err);
    ac_tokens_free(&t);
    free(ids);
    return rc;
}

/* Whether a tag word names one of COCO's 80 object categories (objects.h): a thing a caption names
 * (cat, pizza, parking meter), not a garment or a corner of the scene (robe, shore, store); with
 * person 0, one other than a person. */
static int names_object(const char *word, int person) {
    uint8_t present[AC_N_OBJECTS];
    ac_err e;
    return ac_objects_in_text(word, present, &e) > 0 && (person || !present[AC_OBJECT_PERSON]);
}

/* Whether the encoder is sure word w is absent: a word of AC_NAMING_WELL_COVERED classes or more
 * (dog: 118) scoring below o->absent, or a word of fewer that names one of COCO's objects other than a
 * person (couch: one class) scoring below o->absent_object. Never a person: ImageNet has no person
 * class, so its scores cannot say one is absent. */
static int sure_absent(const ac_tag_table *t, const ac_naming_opts *o, int w, const int *classes, const float *score) {
    if (classes[w] >= AC_NAMING_WELL_COVERED) return o->absent > 0 && score[w] < o->absent;
    return classes[w] >= 1 && score[w] < o->absent_object && names_object(ac_tag_word(t, w), 0);
}

/* banned[V]: the single-word forms of the words the encoder is sure are absent (sure_absent), except
 * a token of a tag of the photo (a word scoring o->threshold or more): no dog there, but a hot dog is,
 * and "hot dog" needs its "dog". Returns how many words were banned, or -1. */
static int absent_words(const ac_model *m, const ac_tag_table *t, const ac_naming_opts *o, const float *probs, int n_rows,
                        int n_classes, unsigned char *banned, ac_err *err) {
    const int nw = ac_tag_table_words(t), V = m->dec.cfg.vocab;
    ac_tag *scored = ac_malloc(((size_t)nw + 1) * sizeof *scored);
    float *score = ac_calloc((size_t)nw + 1, sizeof *score); /* words no class reaches stay at 0 */
    int *classes = ac_calloc((size_t)nw + 1, sizeof *classes);
    enum { WORD_FREE = 0, WORD_ABSENT, WORD_NEEDED }; /* a vocabulary word: neither; an absent word's only
                                                          token; a token of a tag's form (never banned) */
    unsigned char *word_state = ac_calloc((size_t)V, 1);
    int n = !scored || !score || !classes || !word_state ? ac_errf(err, "out of memory")
                                                   : ac_tags_from_probs(t, probs, n_rows, n_classes, 0, scored, nw, err);
    for (int i = 0; i < n; i++) score[scored[i].word] = scored[i].prob;
    for (int k = 0; n >= 0 && k < n_classes; k++)
        if (ac_tag_class_word(t, k) >= 0) classes[ac_tag_class_word(t, k)]++;
    for (int w = 0; n >= 0 && w < nw; w++) {
        const int gone = sure_absent(t, o, w, classes, score);
        if (!gone && !(score[w] >= o->threshold)) continue; /* neither absent nor a tag */
        const char *const *forms;
        const int nf = ac_tag_word_forms(t, w, &forms);
        for (int f = 0; f < nf; f++) {
            ac_tokens tok;
            ac_err e;
            const int tr = ac_tokenize(forms[f], &tok, &e);
            if (tr == -2) { /* out of memory: not the form's fault */
                n = ac_errf(err, "out of memory");
                break;
            }
            if (tr) continue;
            for (int k = 0; k < tok.n; k++) {
                const int id = ac_vocab_id(m->vocab, tok.tok[k]);
                if (id <= AC_UNK) continue;
                if (!gone) word_state[id] = WORD_NEEDED;
                else if (tok.n == 1 && word_state[id] == WORD_FREE) word_state[id] = WORD_ABSENT;
            }
            ac_tokens_free(&tok);
        }
    }
    int banned_n = n < 0 ? -1 : 0;
    for (int id = 0; n >= 0 && id < V; id++)
        if (word_state[id] == WORD_ABSENT && !banned[id]) banned[id] = 1, banned_n++;
    free(scored), free(score), free(classes), free(word_state);
    return banned_n;
}

/* banned[V] also: the one-word forms of the presence head's groups whose probability over the whole
 * photo (its own cells: the first gh x gw rows of ann) is below o->presence_absent, or whose largest
 * probability over the whole photo and its windows (quadrants and centre, as the tags') is below
 * o->presence_ratio times the group's prior: the windows keep a small man beside his horse, whom the
 * whole photo's mean dilutes. Returns how many words were banned, or -1. */
static int absent_groups(const ac_model *m, const ac_naming_opts *o, const ac_name_task *task, unsigned char *banned,
                         ac_err *err) {
    const ac_presence *p = o->presence;
    const ac_decoder_config *cfg = &m->dec.cfg;
    if (p->dim != cfg->dim) return ac_errf(err, "presence head: %d-vectors, the model's are %d", p->dim, cfg->dim);
    int gh, gw;
    ac_name_task_grid(cfg, task, &gh, &gw);
    ac_grid_window win[AC_NAMING_WINDOWS];
    const int nw = o->presence_ratio > 0 ? ac_grid_naming_windows(gh, gw, win) : 0;
    float *prob = ac_malloc(sizeof *prob * (size_t)p->k * (size_t)(1 + nw)); /* [1 + nw, k]: row 0 the whole photo */
    if (!prob) return ac_errf(err, "out of memory");
    if (ac_presence_rows(p, task->ann, gh, gw, win, nw, prob, err)) return free(prob), -1;
    int n = 0;
    for (int g = 0; g < p->k; g++) {
        float most = prob[g];
        for (int r = 1; r <= nw; r++)
            if (prob[(size_t)r * p->k + g] > most) most = prob[(size_t)r * p->k + g];
        if (prob[g] >= o->presence_absent && most >= o->presence_ratio * p->groups[g].prior) continue;
        for (int f = 0; f < p->groups[g].n_forms; f++) {
            const char *form = p->groups[g].forms[f];
            const int id = strchr(form, ' ') ? AC_UNK : ac_vocab_id(m->vocab, form);
            if (id > AC_UNK && !banned[id]) banned[id] = 1, n++;
        }
    }
    free(prob);
    return n;
}

/* One photo on its way through ac_name_captions. */
typedef struct naming_job {
    ac_dec_image *img;
    ac_beam_memo *memo;    /* the steps of its searches, for the next ones (NULL: tags off) */
    unsigned char *banned; /* NULL, or [V] (absent_words) */
    unsigned char *tag_banned; /* NULL, or [V]: banned, and the objects the constrained searches may not add */
    ac_beam_opts bo;       /* the caller's, with banned */
    cand *cands;           /* [MAX_TAGS] */
    int n, sel[AC_MAX_CONSTRAINTS], k; /* tags; the selected ones; how many of them the next search requires */
    ac_constraint cons[AC_MAX_CONSTRAINTS];
} naming_job;

/* The searches of the tasks whose flag is set, together (ac_beam_search_photos): opts[i] for task i. A
 * task whose search fails is marked failed. */
static void search_round(const ac_model *m, int n, ac_name_task *tasks, naming_job *jobs, const int *want,
                         ac_caption *got) {
    ac_beam_task *bt = ac_calloc((size_t)n, sizeof *bt);
    int *idx = ac_malloc(sizeof *idx * (size_t)n), nb = 0;
    for (int i = 0; i < n; i++) {
        if (!want[i] || tasks[i].failed) continue;
        if (!bt || !idx) {
            tasks[i].failed = ac_errf(&tasks[i].err, "out of memory");
            continue;
        }
        ac_beam_opts o = jobs[i].bo;
        if (jobs[i].k > 0) o.n_constraints = jobs[i].k, o.constraints = jobs[i].cons, o.nbest = 1;
        if (jobs[i].k > 0 && jobs[i].tag_banned) o.banned = jobs[i].tag_banned;
        bt[nb] = (ac_beam_task){.img = jobs[i].img, .memo = jobs[i].memo, .opts = o};
        idx[nb++] = i;
    }
    if (nb) ac_beam_search_photos(&m->dec, nb, bt);
    for (int b = 0; b < nb; b++) {
        if (bt[b].failed) tasks[idx[b]].failed = 1, tasks[idx[b]].err = bt[b].err;
        else got[idx[b]] = bt[b].out;
    }
    free(bt), free(idx);
}

/* The caption's calibrated confidence (confidence.h), NAN when the model has no calibration (so no
 * comparison with it holds). */
static double caption_confidence(const ac_model *m, const ac_caption *c) {
    return m->confidence.n > 0 ? ac_confidence_apply(&m->confidence, ac_caption_mean_logprob(c)) : NAN;
}

/* How often the captions of the model's training photos said the candidate: its most said form, a
 * phrase counted by its rarest word. INT_MAX when the model does not record its counts. */
static int times_seen(const ac_model *m, const cand *c) {
    if (!m->paired_counts) return INT_MAX;
    int best = 0;
    for (int a = 0; a < c->n_alt; a++) {
        int least = INT_MAX;
        for (int k = 0; k < c->alt[a].n; k++)
            if (m->paired_counts[c->alt[a].words[k]] < least) least = m->paired_counts[c->alt[a].words[k]];
        if (least > best) best = least;
    }
    return best;
}

/* tag_objects_only: the constrained searches may name the objects of the free caption and of the
 * required tags, no other (why: docs/naming.md). j->tag_banned = j->banned plus every vocabulary word
 * naming any other object (word_object). */
static int ban_new_objects(const ac_model *m, const signed char *word_object, ac_name_task *task, naming_job *j) {
    const int V = m->dec.cfg.vocab;
    uint8_t allowed[AC_N_OBJECTS] = {0}, present[AC_N_OBJECTS];
    for (int i = 0; i < task->out.n; i++) {
        const int w = task->out.words[i];
        if (w >= 0 && w < V && word_object[w] >= 0) allowed[word_object[w]] = 1;
    }
    for (int i = 0; i < j->k; i++) {
        ac_err e;
        if (ac_objects_in_text(j->cands[j->sel[i]].tag.word, present, &e) > 0)
            for (int k = 0; k < AC_N_OBJECTS; k++) allowed[k] |= present[k];
    }
    if (!(j->tag_banned = ac_malloc((size_t)V))) return ac_errf(&task->err, "out of memory");
    for (int w = 0; w < V; w++)
        j->tag_banned[w] = (j->banned && j->banned[w]) || (word_object[w] >= 0 && !allowed[word_object[w]]);
    return 0;
}

/* The tags of a photo whose free caption is in task->out, and the ones to require. */
static int choose_tags(const ac_model *m, const ac_tag_table *t, const ac_naming_opts *o, const float *probs,
                       int n_rows, int n_classes, ac_name_task *task, naming_job *j) {
    if (o->mode == AC_TAGS_OFF) return 0;
    if (!(j->cands = ac_malloc(sizeof *j->cands * MAX_TAGS))) return ac_errf(&task->err, "out of memory");
    if (o->mode == AC_TAGS_AUTO && t && probs) j->n = auto_tags(m, t, o, probs, n_rows, n_classes, j->cands, &task->err);
    else if (o->mode == AC_TAGS_GIVEN) j->n = given_tags(m, t, o->words, j->cands, &task->err);
    if (j->n < 0) return -1;
    /* Trusted (AUTO, trust_logprob < 0, the free caption's mean log-probability at least trust_logprob):
     * only a tag scoring AC_NAMING_SURE or more, or a rare one (an object the training photos' captions
     * said fewer than trust_seen times), may be forced (why: docs/naming.md). */
    const int trusted = o->mode == AC_TAGS_AUTO && o->trust_logprob < 0 &&
                        ac_caption_mean_logprob(&task->out) >= o->trust_logprob;
    /* The tags the free caption does not name and the model can say, most probable first. */
    for (int i = 0; i < j->n; i++) {
        cand *c = &j->cands[i];
        c->tag.named = caption_has_tag(&task->out, c);
        c->rare = o->mode == AC_TAGS_AUTO && times_seen(m, c) < o->trust_seen && names_object(c->tag.word, 1);
        /* min_precision: a word whose precision at this score (tag_precision.h) is below the bar even
         * AC_NAMING_PRECISION_Z standard deviations up is never forced; one without evidence may be. */
        const int precise = !(o->mode == AC_TAGS_AUTO && o->min_precision > 0 &&
                              ac_tag_precision_bound(&m->tag_precision, c->tag.word, c->tag.prob, AC_NAMING_PRECISION_Z) <
                                  o->min_precision);
        const int may_force = precise && (!trusted || c->tag.prob >= AC_NAMING_SURE || c->rare);
        if (may_force && !c->tag.named && c->tag.in_vocab && j->k < o->max_tags && j->k < AC_MAX_CONSTRAINTS)
            j->sel[j->k++] = i;
    }
    for (int i = 0; i < j->k; i++) j->cons[i] = (ac_constraint){j->cands[j->sel[i]].n_alt, j->cands[j->sel[i]].alt};
    return 0;
}

/* After the search with j->k constraints (c): take it if it meets them all and the model agrees; else
 * try one fewer (AUTO) or keep the free caption (GIVEN: the user's words, all or none). */
static void take_if_agreed(const ac_naming_opts *o, ac_name_task *task, naming_job *j, ac_caption *c) {
    const int all_met = c->met_mask == (1 << j->k) - 1;
    /* a rare tag among the constraints: rare_max_drop (when set) instead of max_drop */
    double drop = o->max_drop;
    for (int i = 0; o->rare_max_drop > 0 && i < j->k; i++)
        if (j->cands[j->sel[i]].rare) drop = o->rare_max_drop;
    const int agree = o->mode == AC_TAGS_GIVEN || ac_caption_mean_logprob(c) >= ac_caption_mean_logprob(&task->out) - drop;
    if (all_met && agree) {
        for (int i = 0; i < j->k; i++) j->cands[j->sel[i]].tag.forced = 1;
        for (int i = 0; i < j->n; i++) j->cands[i].tag.named = caption_has_tag(c, &j->cands[i]);
        ac_caption_free(&task->out);
        task->out = *c;
        j->k = 0;
        return;
    }
    ac_caption_free(c);
    j->k = o->mode == AC_TAGS_GIVEN ? 0 : j->k - 1;
}

/* Confidence, the description of an unsure photo, and the tags into the caption. */
static int add_confidence_and_tags(const ac_model *m, const ac_naming_opts *o, ac_name_task *task, naming_job *j) {
    ac_caption *out = &task->out;
    out->confidence = caption_confidence(m, out);
    for (int a = 0; a < out->n_alt; a++) out->alt[a].confidence = caption_confidence(m, &out->alt[a]);
    /* Unsure: a description from the best tag the model can say, if any. */
    if (o->min_confidence > 0 && isfinite(out->confidence) && out->confidence < o->min_confidence) {
        for (int i = 0; i < j->n; i++) {
            if (!j->cands[i].tag.in_vocab) continue;
            ac_caption d;
            if (describe(m, task, j->cands[i].tag.word, &d, &task->err)) return -1;
            d.confidence = caption_confidence(m, &d); /* its own, not the caption's it replaces */
            d.described = 1;
            for (int k = 0; k < j->n; k++) j->cands[k].tag.forced = 0, j->cands[k].tag.named = caption_has_tag(&d, &j->cands[k]);
            ac_caption_free(out);
            *out = d;
            break;
        }
    }
    if (j->n > 0) {
        if (!(out->tags = ac_malloc(sizeof *out->tags * (size_t)j->n))) return ac_errf(&task->err, "out of memory");
        for (int i = 0; i < j->n; i++) out->tags[i] = j->cands[i].tag;
        out->n_tags = j->n;
    }
    return 0;
}

int ac_name_captions(const ac_model *m, const ac_tag_table *t, const ac_naming_opts *o, const ac_beam_opts *bo,
                     int n_rows, int n_classes, int n, ac_name_task *tasks) {
    naming_job *jobs = ac_calloc((size_t)(n > 0 ? n : 1), sizeof *jobs);
    int *want = ac_calloc((size_t)(n > 0 ? n : 1), sizeof *want);
    ac_caption *got = ac_calloc((size_t)(n > 0 ? n : 1), sizeof *got);
    for (int i = 0; i < n; i++) {
        ac_name_task *task = &tasks[i];
        memset(&task->out, 0, sizeof task->out);
        task->failed = 0;
        if (!jobs || !want || !got) {
            task->failed = ac_errf(&task->err, "out of memory");
            continue;
        }
        naming_job *j = &jobs[i];
        j->bo = *bo;
        /* without a memo the searches are the same, only slower */
        if (o->mode != AC_TAGS_OFF) j->memo = ac_beam_memo_new(&m->dec);
        if (!(j->img = ac_name_task_prepare(&m->dec, task, &task->err))) { /* its regions too: a copy model copies */
            task->failed = 1;
            continue;
        }
        const int by_classes = (o->absent > 0 || o->absent_object > 0) && t && task->probs && ac_tag_table_classes(t) == n_classes;
        const int by_groups = o->presence && (o->presence_absent > 0 || o->presence_ratio > 0);
        if (o->mode == AC_TAGS_AUTO && (by_classes || by_groups)) {
            if (!(j->banned = ac_calloc((size_t)m->dec.cfg.vocab, 1))) {
                task->failed = ac_errf(&task->err, "out of memory");
                continue;
            }
            const int nb = by_classes ? absent_words(m, t, o, task->probs, n_rows, n_classes, j->banned, &task->err) : 0;
            const int ng = nb >= 0 && by_groups ? absent_groups(m, o, task, j->banned, &task->err) : 0;
            if (nb < 0 || ng < 0) {
                task->failed = 1;
                continue;
            }
            if (nb + ng > 0) j->bo.banned = j->banned;
        }
        want[i] = 1;
    }
    if (!jobs || !want || !got) { /* every task failed above; nothing of theirs was made */
        free(jobs), free(want), free(got);
        return n > 0 ? -1 : 0;
    }
    search_round(m, n, tasks, jobs, want, got); /* the free captions */
    /* the caller's table of the words' objects (the captioner's, made once), else one made here */
    const int by_objects = o->mode == AC_TAGS_AUTO && o->tag_objects_only;
    signed char *own = by_objects && !o->word_object ? ac_malloc((size_t)m->dec.cfg.vocab) : NULL;
    if (own) ac_objects_of_vocab(m->vocab, own);
    const signed char *word_object = by_objects ? (o->word_object ? o->word_object : own) : NULL;
    for (int i = 0; i < n; i++) {
        if (tasks[i].failed || !want[i]) continue;
        tasks[i].out = got[i];
        if (choose_tags(m, t, o, tasks[i].probs, n_rows, n_classes, &tasks[i], &jobs[i])) tasks[i].failed = 1;
        else if (by_objects && jobs[i].k > 0 &&
                 (word_object ? ban_new_objects(m, word_object, &tasks[i], &jobs[i]) : ac_errf(&tasks[i].err, "out of memory")))
            tasks[i].failed = 1;
    }
    free(own);
    /* Try all the selected tags, then fewer (dropping the least probable), until the model agrees:
     * each round searches every photo still trying. */
    for (int more = 1; more;) {
        more = 0;
        for (int i = 0; i < n; i++) more |= want[i] = !tasks[i].failed && jobs[i].k > 0;
        if (!more) break;
        search_round(m, n, tasks, jobs, want, got);
        for (int i = 0; i < n; i++)
            if (want[i] && !tasks[i].failed) take_if_agreed(o, &tasks[i], &jobs[i], &got[i]);
    }
    int failed = 0;
    const ac_dec_image **account = ac_calloc((size_t)(n > 0 ? n : 1), sizeof *account);
    for (int i = 0; i < n; i++) {
        if (!tasks[i].failed && jobs && add_confidence_and_tags(m, o, &tasks[i], &jobs[i])) tasks[i].failed = 1;
        if (!account) tasks[i].failed = tasks[i].failed || ac_errf(&tasks[i].err, "out of memory");
        else if (!tasks[i].failed && jobs && tasks[i].regions && tasks[i].n_regions) account[i] = jobs[i].img;
    }
    if (account) ac_name_tasks_copy_account(&m->dec, n, tasks, account); /* a copy model's, all together */
    free(account);
    for (int i = 0; i < n; i++) {
        if (tasks[i].failed) ac_caption_free(&tasks[i].out), failed++;
        if (jobs) ac_dec_image_free(jobs[i].img), ac_beam_memo_free(jobs[i].memo), free(jobs[i].banned), free(jobs[i].tag_banned), free(jobs[i].cands);
    }
    free(jobs), free(want), free(got);
    return failed ? -1 : 0;
}

int ac_name_caption(const ac_model *m, const ac_tag_table *t, const ac_naming_opts *o, const ac_beam_opts *bo,
                    const float *ann, const float *probs, int n_rows, int n_classes, ac_caption *out, ac_err *err) {
    ac_name_task task = {.ann = ann, .probs = probs};
    const int rc = ac_name_captions(m, t, o, bo, n_rows, n_classes, 1, &task);
    *out = task.out;
    if (rc && err) *err = task.err;
    return rc;
}
