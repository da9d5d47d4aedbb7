/* absent.c: a copy model's absent priors (decoder.h config.absent) matched on held-out photos: the
 * captions name an object no region shows no more often than the photos' references do (tune.h
 * ac_absent_match). */
#include "attncap/tune.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "attncap/decode_rows.h"
#include "attncap/objects.h"
#include "alloc_internal.h"

#define CATS AC_COPY_CATEGORIES

void ac_absent_step(const double *refs, const double *said, float *prior) {
    for (int c = 0; c < CATS; c++) {
        const double step = log((refs[c] + AC_ABSENT_PSEUDO) / (said[c] + AC_ABSENT_PSEUDO));
        const double b = prior[c] + (step > 2 ? 2 : step < -2 ? -2 : step);
        prior[c] = (float)(b < 0 ? b : 0); /* the detector's silence only ever lowers the odds */
    }
}

/* The categories a caption names (as the objects' matcher reads it: CHAIR's), added to count [80] with
 * weight wgt where unseen[c]; -1 when the tokenizer refuses the text. */
static int count_unseen(const char *text, const unsigned char *unseen, double wgt, double *count, ac_err *err) {
    uint8_t named[AC_N_OBJECTS];
    if (ac_objects_in_text(text, named, err) < 0) return -1;
    for (int c = 0; c < CATS; c++)
        if (named[c] && unseen[c]) count[c] += wgt;
    return 0;
}

int ac_absent_match(ac_model *m, const ac_feature_cache *fc, const ac_rows_regions *regions, const ac_tune_photo *photos,
                    int n, const ac_beam_opts *opts, int rounds, int threads, ac_absent_match_report *out, ac_err *err) {
    memset(out, 0, sizeof *out);
    if (!m->dec.cfg.copy || !m->dec.copy || !regions)
        return ac_errf(err, "absent priors: a copy model and its photos' detections are needed");
    if (ac_decoder_add_absent(&m->dec, err)) return -1;
    int *rows = ac_malloc(sizeof(int) * (size_t)n);
    char **texts = ac_calloc((size_t)n, sizeof *texts);
    unsigned char *unseen = ac_malloc((size_t)n * CATS);
    int rc = rows && texts && unseen ? 0 : ac_errf(err, "out of memory");
    for (int i = 0; !rc && i < n; i++) { /* the categories each photo's regions lack, as the decoder reads them */
        const ac_region *reg;
        const int k = ac_rows_regions_of(regions, rows[i] = photos[i].row, m->dec.cfg.regions, &reg);
        unsigned char *u = unseen + (size_t)i * CATS;
        memset(u, 1, CATS);
        for (int r = 0; r < k; r++)
            if (reg[r].category >= 0 && reg[r].category < CATS) u[reg[r].category] = 0;
    }
    for (int i = 0; !rc && i < n; i++)
        for (int r = 0; !rc && r < photos[i].n_refs; r++)
            rc = count_unseen(photos[i].refs[r], unseen + (size_t)i * CATS, 1.0 / photos[i].n_refs, out->refs, err);
    for (int round = 0; !rc && round <= rounds; round++) {
        if (ac_decode_rows(&m->dec, m->vocab, fc, rows, n, regions, opts, threads, texts, err)) {
            rc = -1;
            break;
        }
        double said[CATS] = {0};
        for (int i = 0; !rc && i < n; i++) rc = count_unseen(texts[i], unseen + (size_t)i * CATS, 1.0, said, err);
        for (int i = 0; i < n; i++) free(texts[i]), texts[i] = NULL;
        if (rc) break;
        if (round == 0) memcpy(out->said_before, said, sizeof said);
        memcpy(out->said_after, said, sizeof said);
        if (round == rounds) break; /* the last decode only measures */
        ac_absent_step(out->refs, said, m->dec.absent_b);
    }
    for (int c = 0; c < CATS; c++) out->prior[c] = m->dec.absent_b[c];
    out->photos = n, out->rounds = rounds;
    free(rows), free(texts), free(unseen);
    return rc;
}
