/* cnn_operands.c: the planning helpers every operator's planner uses (cnn_plan.h): an error naming
 * the operator, an output's shape checked against the element limit, an operand's tensor once its
 * shape is known. Apart from cnn.c so the operator files (cnn_tensor_ops.c) and cnn.c both call
 * into it, never into each other. */
#include <stdio.h>
#include <string.h>

#include "cnn_plan.h"

int ac_cnn_plan_err(const ac_cnn *c, const cnn_step *s, ac_err *err, const char *why) {
    const char *out = s->op->n_out > 0 && s->op->outputs[0] >= 0 ? ac_cnn_tname(c, s->op->outputs[0]) : "?";
    return ac_errf(err, "%s: operator %d (%s, output '%.200s'): %s", c->m->path, s->index, s->op->opname, out, why);
}

/* Sets tensor i's shape; refuses sizes over the element limit. */
int ac_cnn_plan_shape(ac_cnn *c, const cnn_step *s, int i, const int *shape, int ndim, ac_err *err) {
    uint64_t lim = ac_limits_get().max_tensor_elems, n = 1;
    for (int d = 0; d < ndim; d++) {
        if (shape[d] <= 0) return ac_cnn_plan_err(c, s, err, "output would be empty (input too small for this operator)");
        n *= (uint64_t)shape[d];
        if (n > lim) {
            char why[160];
            snprintf(why, sizeof why, "output is over the limit of %llu tensor elements (raise ATTNCAP_MAX_TENSOR_ELEMS)",
                     (unsigned long long)lim);
            return ac_cnn_plan_err(c, s, err, why);
        }
    }
    cnn_tensor *t = &c->t[i];
    t->ndim = ndim;
    memcpy(t->shape, shape, (size_t)ndim * sizeof *shape);
    t->count = (size_t)n;
    t->planned = 1;
    return 0;
}

/* Operand k of step s: must exist and have a known shape (an activation already computed, or a constant). */
int ac_cnn_plan_operand(const ac_cnn *c, const cnn_step *s, int k, int want_const, ac_err *err) {
    if (k >= s->op->n_in || s->op->inputs[k] < 0) return ac_cnn_plan_err(c, s, err, "missing operand"), -1;
    int i = s->op->inputs[k];
    if (want_const && !c->m->tensors[i].data) return ac_cnn_plan_err(c, s, err, "operand must be a constant tensor"), -1;
    if (!c->t[i].planned) {
        ac_errf(err, "%s: operator %d (%s): input tensor '%.200s' is neither computed by an earlier operator nor a "
                "numeric constant", c->m->path, s->index, s->op->opname, ac_cnn_tname(c, i));
        return -1;
    }
    return i;
}

