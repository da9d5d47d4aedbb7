/* constraints.c: the constraints of a beam search (beam.h: every constraint met by one of its
 * phrases) checked, and the automaton the search runs them on (beam_internal.h). */
#include <stdlib.h>
#include <string.h>

#include "beam_internal.h"
#include "alloc_internal.h"


int ac_beam_check_constraints(const ac_beam_opts *o, int V, ac_err *err) {
    if (o->n_constraints < 0 || o->n_constraints > AC_MAX_CONSTRAINTS)
        return ac_errf(err, "beam search: %d constraints, at most %d", o->n_constraints, AC_MAX_CONSTRAINTS);
    if (o->n_constraints && !o->constraints)
        return ac_errf(err, "beam search: %d constraints but none given", o->n_constraints);
    for (int c = 0; c < o->n_constraints; c++) {
        const ac_constraint *k = &o->constraints[c];
        if (k->n_alt < 1) return ac_errf(err, "beam search: constraint %d has no alternatives", c);
        if (k->n_alt > AC_MAX_ALTERNATIVES)
            return ac_errf(err, "beam search: constraint %d has %d alternatives, at most %d", c, k->n_alt,
                           AC_MAX_ALTERNATIVES);
        if (!k->alt) return ac_errf(err, "beam search: constraint %d: its alternatives are not given", c);
        for (int a = 0; a < k->n_alt; a++) {
            const ac_phrase *p = &k->alt[a];
            if (p->n < 1 || p->n > AC_MAX_PHRASE)
                return ac_errf(err, "beam search: constraint %d, alternative %d: a phrase of %d words (1..%d)", c, a,
                               p->n, AC_MAX_PHRASE);
            for (int i = 0; i < p->n; i++)
                if (p->words[i] <= AC_UNK || p->words[i] >= V)
                    return ac_errf(err, "beam search: constraint %d, alternative %d: word id %d is not a real word "
                                        "(%d..%d)", c, a, p->words[i], AC_UNK + 1, V - 1);
        }
    }
    return 0;
}

int ac_beam_fsm_init(ac_beam_fsm *f, const ac_beam_opts *o, int V) {
    memset(f, 0, sizeof *f);
    f->C = o->n_constraints, f->con = o->constraints, f->depths = 1;
    for (int c = 0; c < f->C; c++)
        for (int a = 0; a < f->con[c].n_alt; a++)
            if (f->con[c].alt[a].n > f->depths) f->depths = f->con[c].alt[a].n;
    f->n_states = (1 << f->C) * f->depths;
    if (!f->C) return 0;
    if (!(f->in_phrase = ac_calloc((size_t)V, 1))) return -1;
    for (int c = 0; c < f->C; c++)
        for (int a = 0; a < f->con[c].n_alt; a++)
            for (int i = 0; i < f->con[c].alt[a].n; i++) f->in_phrase[f->con[c].alt[a].words[i]] = 1;
    return 0;
}

/* Do the last n words of words[0..t) followed by w equal p[0..n)? */
static int ends_with(const int *words, int t, int w, const int *p, int n) {
    if (n > t + 1 || p[n - 1] != w) return 0;
    for (int i = 0; i < n - 1; i++)
        if (words[t - (n - 1) + i] != p[i]) return 0;
    return 1;
}

int ac_beam_fsm_next(const ac_beam_fsm *f, const int *words, int t, int mask, int w) {
    if (!f->in_phrase || !f->in_phrase[w]) return mask * f->depths;
    for (int c = 0; c < f->C; c++)
        for (int a = 0; !(mask >> c & 1) && a < f->con[c].n_alt; a++)
            if (ends_with(words, t, w, f->con[c].alt[a].words, f->con[c].alt[a].n)) mask |= 1 << c;
    int depth = 0;
    for (int c = 0; c < f->C; c++)
        for (int a = 0; !(mask >> c & 1) && a < f->con[c].n_alt; a++) {
            const ac_phrase *p = &f->con[c].alt[a];
            for (int d = p->n - 1; d > depth; d--)
                if (ends_with(words, t, w, p->words, d)) depth = d;
        }
    return mask * f->depths + depth;
}
