/* attncap/confidence.h: not part of the stable API; may change in any release (the stable core: attncap.h). */
/* attncap/confidence.h: how sure a caption is, as a calibrated probability.
 *
 * The raw score is the caption's mean log-probability per predicted token (ac_caption_mean_logprob);
 * Platt scaling maps it to p = 1 / (1 + exp(-(a x + b))), with a and b fitted by maximum likelihood
 * on dev captions labelled right or wrong (`attncap tune --calibrate` labels a caption right when no
 * object it names is named by none of its references). The model file records a and b (metadata
 * "confidence"); a model without them has no confidence. */
#ifndef ATTNCAP_CONFIDENCE_H
#define ATTNCAP_CONFIDENCE_H
#include "attncap/common.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct ac_confidence {
    double a, b; /* p = sigmoid(a x + b) */
    int n;       /* captions it was fitted on (0: not calibrated) */
} ac_confidence;

/* Fits a, b to (x[i], y[i] in {0, 1}), i < n, by Newton's method on the log-likelihood with a tiny
 * L2 penalty (1e-6), so it also converges when the classes separate. Needs both labels present. */
int ac_confidence_fit(const double *x, const int *y, int n, ac_confidence *c, ac_err *err);
double ac_confidence_apply(const ac_confidence *c, double x);
/* Mean negative log-likelihood of the labels under p = apply(x) (for reports and tests). */
double ac_confidence_nll(const ac_confidence *c, const double *x, const int *y, int n);
/* Expected calibration error over `bins` equal-width bins of p. */
double ac_confidence_ece(const ac_confidence *c, const double *x, const int *y, int n, int bins);
/* {"a":..,"b":..,"n":..} (malloc'd) and back; from_json refuses non-finite or missing numbers. */
char *ac_confidence_to_json(const ac_confidence *c);
int ac_confidence_from_json(const char *json, ac_confidence *c, ac_err *err);

#ifdef __cplusplus
}
#endif
#endif
