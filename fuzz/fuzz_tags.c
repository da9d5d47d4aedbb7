/* fuzz/fuzz_tags.c: libFuzzer target for the class -> caption word table (ac_tag_table_parse). Whatever
 * loads must be self-consistent (every class's word in range, every word with forms, the word its own
 * first form), and the tag functions on it must stay in range: scores in (threshold, rows], sorted,
 * each tag's alternatives made of vocabulary ids. Seeds: fuzz/corpus/tags. Replayed by
 * tests/test_fuzz_regress.c. */
#include "fuzz_main.h"
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "attncap/tags.h"

static int fuzz_tags(const uint8_t *data, size_t size) {
    ac_tag_table *t;
    ac_err err;
    if (ac_tag_table_parse((const char *)data, size, "fuzz.tsv", &t, &err)) return 0;
    const int nc = ac_tag_table_classes(t), nw = ac_tag_table_words(t);
    if (nc < 1 || nw < 0) abort();
    for (int c = 0; c < nc; c++) {
        int w = ac_tag_class_word(t, c);
        if (w < -1 || w >= nw) abort();
    }
    for (int w = 0; w < nw; w++) {
        const char *const *forms;
        int nf = ac_tag_word_forms(t, w, &forms);
        if (nf < 1 || nf > AC_TAG_MAX_FORMS || strcmp(forms[0], ac_tag_word(t, w))) abort();
    }
    /* two rows: even probabilities, then all mass on the last class */
    float *probs = calloc(2 * (size_t)nc, sizeof *probs);
    ac_tag *tags = malloc(((size_t)nw + 1) * sizeof *tags);
    ac_tag_ids *ids = malloc(((size_t)nw + 1) * sizeof *ids);
    int *dropped = malloc(((size_t)nw + 1) * sizeof *dropped);
    if (!probs || !tags || !ids || !dropped) abort();
    for (int c = 0; c < nc; c++) probs[c] = 1.0f / (float)nc;
    probs[2 * (size_t)nc - 1] = 1.0f;
    int n = ac_tags_from_probs(t, probs, 2, nc, 0.0f, tags, nw, &err);
    if (n < 0 || n > nw) abort();
    for (int k = 0; k < n; k++)
        if (tags[k].word < 0 || tags[k].word >= nw || !(tags[k].prob > 0 && tags[k].prob <= 1.0001f) ||
            (k && tags[k].prob > tags[k - 1].prob))
            abort();
    ac_vocab *v;
    if (ac_vocab_from_json("[\"<pad>\",\"<start>\",\"<end>\",\"<unk>\",\"a\",\"cat\",\"dog\",\"hot\",\"dogs\"]", &v, &err)) abort();
    int nd = -1, m = ac_tags_to_ids(t, v, tags, n, ids, dropped, &nd, &err);
    if (m < 0 || m + nd != n) abort();
    for (int k = 0; k < m; k++)
        for (int a = 0; a < ids[k].n_alts; a++)
            for (int j = 0; j < ids[k].alts[a].n; j++)
                if (ids[k].alts[a].ids[j] < 4 || ids[k].alts[a].ids[j] >= ac_vocab_size(v)) abort();
    ac_vocab_free(v);
    free(probs), free(tags), free(ids), free(dropped);
    ac_tag_table_free(t);
    return 0;
}

AC_FUZZ_MAIN(fuzz_tags, "", "")
