/* tag_precision.c: each tag word's precision curve, fitted on the training photos (tag_precision.h). */
#include "attncap/tag_precision.h"
#include "alloc_internal.h"

#include <cjson/cJSON.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static double sigmoid(double z) { return z >= 0 ? 1.0 / (1.0 + exp(-z)) : exp(z) / (1.0 + exp(z)); }

static double clipped_logit(double p) {
    if (p < 1e-4) p = 1e-4;
    if (p > 1 - 1e-4) p = 1 - 1e-4;
    return log(p / (1 - p));
}

void ac_tag_precision_free(ac_tag_precision *tp) {
    if (!tp) return;
    for (int i = 0; i < tp->n_words; i++) free(tp->words[i].word);
    free(tp->words);
    memset(tp, 0, sizeof *tp);
}

static int by_word(const void *x, const void *y) {
    return strcmp(((const ac_tag_precision_word *)x)->word, ((const ac_tag_precision_word *)y)->word);
}

/* The negative penalized log-likelihood at (a, b, u). */
static double loss(const ac_tag_obs *obs, int n, const double *x, double a, double b, const double *u, int n_words,
                   double lambda, double l2) {
    double s = l2 / 2 * (a * a + b * b);
    for (int i = 0; i < n; i++) {
        const double z = a + b * x[i] + u[obs[i].word], m = obs[i].named ? -z : z; /* -log sigmoid(-m) */
        s += m > 0 ? m + log1p(exp(-m)) : log1p(exp(m));
    }
    for (int w = 0; w < n_words; w++) s += lambda / 2 * u[w] * u[w];
    return s;
}

int ac_tag_precision_fit(const char *const *words, int n_words, const ac_tag_obs *obs, int n_obs, double lambda,
                         ac_tag_precision *out, ac_err *err) {
    memset(out, 0, sizeof *out);
    if (!(lambda > 0) || !isfinite(lambda)) return ac_errf(err, "tag precision: lambda must be > 0");
    if (n_words < 1 || n_obs < 1) return ac_errf(err, "tag precision: no tags to fit on");
    int pos = 0;
    for (int i = 0; i < n_obs; i++) {
        if (obs[i].word < 0 || obs[i].word >= n_words) return ac_errf(err, "tag precision: tag %d names no word", i);
        if (!(obs[i].prob > 0 && obs[i].prob <= 1)) return ac_errf(err, "tag precision: tag %d's score is not in (0, 1]", i);
        pos += obs[i].named != 0;
    }
    if (pos == 0 || pos == n_obs)
        return ac_errf(err, "tag precision: needs tags both named and not by the references (%d of %d named)", pos, n_obs);
    /* per word: the gradient, the Hessian's diagonal and couplings, the step, the trial point; and at the
     * end the counts (fired, named) and the curvature that gives the posterior sd */
    const size_t W = (size_t)n_words;
    double *x = ac_malloc(sizeof *x * (size_t)n_obs), *u = ac_calloc(W, sizeof *u), *gu = ac_malloc(sizeof *gu * W),
           *d = ac_malloc(sizeof *d * W), *ba = ac_malloc(sizeof *ba * W), *bb = ac_malloc(sizeof *bb * W),
           *du = ac_malloc(sizeof *du * W), *u_try = ac_malloc(sizeof *u_try * W);
    int *fired = ac_calloc(W, sizeof *fired), *named = ac_calloc(W, sizeof *named);
    int rc = 0;
    if (!x || !u || !gu || !d || !ba || !bb || !du || !u_try || !fired || !named) {
        rc = ac_errf(err, "out of memory");
        goto done;
    }
    for (int i = 0; i < n_obs; i++) x[i] = clipped_logit(obs[i].prob);
    /* Newton's method on all of (a, b, u) at once: the Hessian is an arrow (a dense 2 x 2 block for a,
     * b, a diagonal for the u's, and their couplings), so a step costs a pass over the tags plus a 2 x 2
     * Schur complement. The objective is strictly convex (the prior on u, a tiny one on a, b); halving
     * the step until it decreases makes every step a descent, and Newton converges quadratically. */
    const double l2 = 1e-6 * n_obs;
    double a = log((double)pos / (n_obs - pos)), b = 1;
    int converged = 0;
    double f = loss(obs, n_obs, x, a, b, u, n_words, lambda, l2);
    for (int it = 0; it < 200 && !converged; it++) {
        double ga = l2 * a, gb = l2 * b, haa = l2, hab = 0, hbb = l2;
        for (int w = 0; w < n_words; w++) gu[w] = lambda * u[w], d[w] = lambda, ba[w] = bb[w] = 0;
        for (int i = 0; i < n_obs; i++) {
            const int w = obs[i].word;
            const double p = sigmoid(a + b * x[i] + u[w]), r = p - (obs[i].named != 0), h = p * (1 - p);
            ga += r, gb += r * x[i], gu[w] += r;
            haa += h, hab += h * x[i], hbb += h * x[i] * x[i];
            d[w] += h, ba[w] += h, bb[w] += h * x[i];
        }
        /* Schur complement: S = A - B D^-1 B^T, rhs = g_ab - B D^-1 g_u */
        double saa = haa, sab = hab, sbb = hbb, ra = ga, rb = gb;
        for (int w = 0; w < n_words; w++) {
            saa -= ba[w] * ba[w] / d[w], sab -= ba[w] * bb[w] / d[w], sbb -= bb[w] * bb[w] / d[w];
            ra -= ba[w] * gu[w] / d[w], rb -= bb[w] * gu[w] / d[w];
        }
        const double det = saa * sbb - sab * sab;
        if (!(det > 0)) break;
        const double da = (sbb * ra - sab * rb) / det, db = (saa * rb - sab * ra) / det;
        double biggest = fabs(da) > fabs(db) ? fabs(da) : fabs(db);
        for (int w = 0; w < n_words; w++) {
            du[w] = (gu[w] - ba[w] * da - bb[w] * db) / d[w];
            if (fabs(du[w]) > biggest) biggest = fabs(du[w]);
        }
        /* near the optimum the decrease is below the sum's rounding: allow that much */
        const double slack = 1e-12 * (fabs(f) + 1);
        double t = 1, f_try = INFINITY;
        for (int half = 0; half < 60; half++, t /= 2) {
            for (int w = 0; w < n_words; w++) u_try[w] = u[w] - t * du[w];
            f_try = loss(obs, n_obs, x, a - t * da, b - t * db, u_try, n_words, lambda, l2);
            if (f_try <= f + slack) break;
        }
        if (!(f_try <= f + slack)) break;
        a -= t * da, b -= t * db;
        memcpy(u, u_try, sizeof *u * (size_t)n_words);
        f = f_try;
        converged = t * biggest < 1e-10;
    }
    if (!converged || !isfinite(a) || !isfinite(b)) {
        rc = ac_errf(err, "tag precision: the fit did not converge");
        goto done;
    }
    for (int w = 0; w < n_words; w++) d[w] = lambda;
    for (int i = 0; i < n_obs; i++) {
        const int w = obs[i].word;
        const double p = sigmoid(a + b * x[i] + u[w]);
        fired[w]++, named[w] += obs[i].named != 0, d[w] += p * (1 - p);
    }
    for (int w = 0; w < n_words; w++) out->n_words += fired[w] > 0;
    if (!(out->words = ac_calloc((size_t)out->n_words, sizeof *out->words))) {
        rc = ac_errf(err, "out of memory");
        goto done;
    }
    out->n_words = 0;
    for (int w = 0; w < n_words && !rc; w++) {
        if (!fired[w]) continue;
        ac_tag_precision_word *e = &out->words[out->n_words++];
        if (!(e->word = ac_strdup(words[w]))) rc = ac_errf(err, "out of memory");
        e->fired = fired[w], e->named = named[w], e->u = u[w], e->sd = 1 / sqrt(d[w]);
    }
    if (!rc) qsort(out->words, (size_t)out->n_words, sizeof *out->words, by_word);
    for (int i = 1; i < out->n_words && !rc; i++)
        if (!strcmp(out->words[i - 1].word, out->words[i].word)) rc = ac_errf(err, "tag precision: word '%s' twice", out->words[i].word);
    out->a = a, out->b = b, out->lambda = lambda, out->n_obs = n_obs;
done:
    free(x), free(u), free(gu), free(d), free(ba), free(bb), free(du), free(u_try), free(fired), free(named);
    if (rc) ac_tag_precision_free(out);
    return rc;
}

const ac_tag_precision_word *ac_tag_precision_find(const ac_tag_precision *tp, const char *word) {
    if (!tp || !tp->n_words || !word) return NULL;
    const ac_tag_precision_word key = {.word = (char *)word};
    return bsearch(&key, tp->words, (size_t)tp->n_words, sizeof *tp->words, by_word);
}

double ac_tag_precision_bound(const ac_tag_precision *tp, const char *word, double prob, double z) {
    if (!tp || tp->n_obs <= 0) return NAN;
    const ac_tag_precision_word *e = ac_tag_precision_find(tp, word);
    const double u = e ? e->u : 0, sd = e ? e->sd : 1 / sqrt(tp->lambda);
    return sigmoid(tp->a + tp->b * clipped_logit(prob) + u + z * sd);
}

double ac_tag_precision_of(const ac_tag_precision *tp, const char *word, double prob) {
    return ac_tag_precision_bound(tp, word, prob, 0);
}

/* A number as JSON that reads back to the same double (cJSON prints 15 digits when they are close
 * enough by its tolerance, which loses the last bits). */
static cJSON *exact_number(double v) {
    char buf[40];
    snprintf(buf, sizeof buf, "%.17g", v);
    return cJSON_CreateRaw(buf);
}

char *ac_tag_precision_to_json(const ac_tag_precision *tp) {
    cJSON *o = cJSON_CreateObject(), *w = cJSON_CreateObject();
    if (!o || !w) return cJSON_Delete(o), cJSON_Delete(w), NULL;
    cJSON_AddItemToObject(o, "a", exact_number(tp->a));
    cJSON_AddItemToObject(o, "b", exact_number(tp->b));
    cJSON_AddItemToObject(o, "lambda", exact_number(tp->lambda));
    cJSON_AddNumberToObject(o, "n", tp->n_obs);
    cJSON_AddItemToObject(o, "words", w);
    for (int i = 0; i < tp->n_words; i++) {
        const ac_tag_precision_word *e = &tp->words[i];
        cJSON *arr = cJSON_CreateArray();
        if (!arr) return cJSON_Delete(o), NULL;
        cJSON_AddItemToArray(arr, cJSON_CreateNumber(e->fired));
        cJSON_AddItemToArray(arr, cJSON_CreateNumber(e->named));
        cJSON_AddItemToArray(arr, exact_number(e->u));
        cJSON_AddItemToArray(arr, exact_number(e->sd));
        cJSON_AddItemToObject(w, e->word, arr);
    }
    char *s = cJSON_PrintUnformatted(o);
    cJSON_Delete(o);
    return s;
}

static int is_count(const cJSON *x) {
    return cJSON_IsNumber(x) && x->valuedouble >= 0 && x->valuedouble <= 1e9 && x->valuedouble == floor(x->valuedouble);
}

int ac_tag_precision_from_json(const char *json, ac_tag_precision *tp, ac_err *err) {
    memset(tp, 0, sizeof *tp);
    cJSON *o = cJSON_Parse(json);
    const cJSON *a = cJSON_GetObjectItemCaseSensitive(o, "a"), *b = cJSON_GetObjectItemCaseSensitive(o, "b"),
                *l = cJSON_GetObjectItemCaseSensitive(o, "lambda"), *n = cJSON_GetObjectItemCaseSensitive(o, "n"),
                *w = cJSON_GetObjectItemCaseSensitive(o, "words");
    int rc = 0;
    if (!cJSON_IsNumber(a) || !cJSON_IsNumber(b) || !cJSON_IsNumber(l) || !isfinite(a->valuedouble) ||
        !isfinite(b->valuedouble) || !isfinite(l->valuedouble) || !is_count(n) || n->valuedouble < 1 || !cJSON_IsObject(w)) {
        rc = ac_errf(err, "tag precision: needs finite numbers a, b, lambda, a count n >= 1 and an object words");
        goto done;
    }
    tp->a = a->valuedouble, tp->b = b->valuedouble, tp->lambda = l->valuedouble, tp->n_obs = (int)n->valuedouble;
    const int nw = cJSON_GetArraySize(w);
    if (nw > 0 && !(tp->words = ac_calloc((size_t)nw, sizeof *tp->words))) {
        rc = ac_errf(err, "out of memory");
        goto done;
    }
    for (const cJSON *e = w->child; e && !rc; e = e->next) {
        const cJSON *f = cJSON_GetArrayItem(e, 0), *k = cJSON_GetArrayItem(e, 1), *u = cJSON_GetArrayItem(e, 2),
                    *sd = cJSON_GetArrayItem(e, 3);
        if (!cJSON_IsArray(e) || cJSON_GetArraySize(e) != 4 || !is_count(f) || !is_count(k) || k->valuedouble > f->valuedouble ||
            !cJSON_IsNumber(u) || !isfinite(u->valuedouble) || !cJSON_IsNumber(sd) || !(sd->valuedouble > 0) ||
            !isfinite(sd->valuedouble) || !e->string || !*e->string) {
            rc = ac_errf(err, "tag precision: word '%.40s' needs [fired, named <= fired, finite u, sd > 0]", e->string ? e->string : "");
            break;
        }
        ac_tag_precision_word *t = &tp->words[tp->n_words++];
        t->fired = (int)f->valuedouble, t->named = (int)k->valuedouble, t->u = u->valuedouble, t->sd = sd->valuedouble;
        if (!(t->word = ac_strdup(e->string))) rc = ac_errf(err, "out of memory");
    }
    if (!rc) qsort(tp->words, (size_t)tp->n_words, sizeof *tp->words, by_word);
    for (int i = 1; i < tp->n_words && !rc; i++)
        if (!strcmp(tp->words[i - 1].word, tp->words[i].word)) rc = ac_errf(err, "tag precision: word '%.40s' twice", tp->words[i].word);
done:
    cJSON_Delete(o);
    if (rc) ac_tag_precision_free(tp);
    return rc;
}
