/* confidence.c: Platt scaling of a caption's mean token log-probability (confidence.h). */
#include "attncap/confidence.h"
#include "alloc_internal.h"

#include <cjson/cJSON.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

static double sigmoid(double z) { return z >= 0 ? 1.0 / (1.0 + exp(-z)) : exp(z) / (1.0 + exp(z)); }

double ac_confidence_apply(const ac_confidence *c, double x) { return sigmoid(c->a * x + c->b); }

double ac_confidence_nll(const ac_confidence *c, const double *x, const int *y, int n) {
    double s = 0;
    for (int i = 0; i < n; i++) {
        const double z = c->a * x[i] + c->b; /* -log sigmoid(+-z), computed without overflow */
        const double m = y[i] ? -z : z;
        s += m > 0 ? m + log1p(exp(-m)) : log1p(exp(m));
    }
    return n ? s / n : 0;
}

int ac_confidence_fit(const double *x, const int *y, int n, ac_confidence *c, ac_err *err) {
    int pos = 0;
    for (int i = 0; i < n; i++) {
        if (!isfinite(x[i])) return ac_errf(err, "confidence: score %d is not finite", i);
        pos += y[i] != 0;
    }
    if (pos == 0 || pos == n) return ac_errf(err, "confidence: needs captions labelled both right and wrong (%d of %d right)", pos, n);
    /* Centre x for conditioning; Newton on (a, b') for z = a (x - mu) + b'. */
    double mu = 0;
    for (int i = 0; i < n; i++) mu += x[i];
    mu /= n;
    double a = 0, b = log((double)pos / (n - pos));
    const double l2 = 1e-6 * n;
    for (int it = 0; it < 100; it++) {
        double ga = l2 * a, gb = 0, haa = l2, hab = 0, hbb = 0;
        for (int i = 0; i < n; i++) {
            const double u = x[i] - mu, p = sigmoid(a * u + b), r = p - (y[i] != 0), w = p * (1 - p);
            ga += r * u, gb += r;
            haa += w * u * u, hab += w * u, hbb += w;
        }
        const double det = haa * hbb - hab * hab;
        if (!(det > 0)) break;
        const double da = (hbb * ga - hab * gb) / det, db = (haa * gb - hab * ga) / det;
        a -= da, b -= db;
        if (fabs(da) < 1e-12 * (1 + fabs(a)) && fabs(db) < 1e-12 * (1 + fabs(b))) break;
    }
    c->a = a, c->b = b - a * mu, c->n = n;
    if (!isfinite(c->a) || !isfinite(c->b)) return ac_errf(err, "confidence: the fit did not converge");
    return 0;
}

double ac_confidence_ece(const ac_confidence *c, const double *x, const int *y, int n, int bins) {
    if (bins < 1 || bins > 1000 || n < 1) return NAN;
    double ps[1000] = {0}, ys[1000] = {0};
    int cnt[1000] = {0};
    for (int i = 0; i < n; i++) {
        const double p = ac_confidence_apply(c, x[i]);
        int k = (int)(p * bins);
        if (k >= bins) k = bins - 1;
        ps[k] += p, ys[k] += y[i] != 0, cnt[k]++;
    }
    double e = 0;
    for (int k = 0; k < bins; k++) e += fabs(ps[k] - ys[k]);
    return e / n;
}

char *ac_confidence_to_json(const ac_confidence *c) {
    char buf[160];
    snprintf(buf, sizeof buf, "{\"a\":%.17g,\"b\":%.17g,\"n\":%d}", c->a, c->b, c->n);
    char *s = ac_malloc(sizeof buf);
    if (s) snprintf(s, sizeof buf, "%s", buf);
    return s;
}

int ac_confidence_from_json(const char *json, ac_confidence *c, ac_err *err) {
    cJSON *o = cJSON_Parse(json);
    const cJSON *a = cJSON_GetObjectItemCaseSensitive(o, "a"), *b = cJSON_GetObjectItemCaseSensitive(o, "b"),
                *n = cJSON_GetObjectItemCaseSensitive(o, "n");
    int rc = 0;
    if (!cJSON_IsNumber(a) || !cJSON_IsNumber(b) || !isfinite(a->valuedouble) || !isfinite(b->valuedouble))
        rc = ac_errf(err, "confidence: needs finite numbers a and b");
    else
        c->a = a->valuedouble, c->b = b->valuedouble, c->n = cJSON_IsNumber(n) ? (int)n->valuedouble : 0;
    cJSON_Delete(o);
    return rc;
}
