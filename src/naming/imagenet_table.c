/* imagenet_table.c: which ImageNet words a new copy model gets, from the tag table (tags.h,
 * imagenet_words.h's ac_imagenet_words_from_table). */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "attncap/imagenet_words.h"
#include "attncap/objects.h"
#include "attncap/tags.h"
#include "alloc_internal.h"

/* The vocabulary ids of a table word's one-token forms that name no COCO category and that no word
 * before it took (taken[id]), into ids (room for AC_TAG_MAX_FORMS, or for every id not taken yet);
 * returns how many. None when the word itself names a COCO object (couch: its other forms, lounge,
 * are the detector's couch too). */
static int usable_forms(const ac_tag_table *t, int word, const ac_vocab *v, const signed char *coco,
                        const unsigned char *taken, int *ids) {
    uint8_t present[AC_N_OBJECTS];
    if (ac_objects_in_tokens(ac_tag_word(t, word), present) > 0) return 0;
    const char *const *forms;
    const int nf = ac_tag_word_forms(t, word, &forms);
    int n = 0;
    for (int f = 0; f < nf && n < AC_TAG_MAX_FORMS; f++) {
        if (strchr(forms[f], ' ')) continue;
        const int id = ac_vocab_id(v, forms[f]);
        if (id <= AC_UNK || coco[id] >= 0 || taken[id]) continue;
        int seen = 0;
        for (int k = 0; k < n; k++) seen |= ids[k] == id;
        if (!seen) ids[n++] = id;
    }
    return n;
}

typedef struct ranked {
    int word;
    long long count;
} ranked;

static int by_count(const void *a, const void *b) {
    const ranked *x = a, *y = b;
    return x->count != y->count ? (x->count < y->count) - (x->count > y->count) : (x->word > y->word) - (x->word < y->word);
}

int ac_imagenet_words_from_table(const ac_tag_table *t, const ac_vocab *v, int max, ac_imagenet_words *out,
                                 ac_err *err) {
    memset(out, 0, sizeof *out);
    if (max > AC_IMAGENET_WORDS_MAX) max = AC_IMAGENET_WORDS_MAX;
    const int V = ac_vocab_size(v), nw = ac_tag_table_words(t), nc = ac_tag_table_classes(t);
    signed char *coco = ac_malloc((size_t)V);
    unsigned char *taken = ac_calloc((size_t)V, 1);
    ranked *order = ac_malloc(sizeof *order * ((size_t)nw + 1));
    int *word_of = ac_malloc(sizeof *word_of * ((size_t)nw + 1));
    /* the chosen words' forms, in order: a form is taken once, so V of them at most */
    int *form_id = ac_malloc(sizeof *form_id * ((size_t)V + 1)), form_off[AC_IMAGENET_WORDS_MAX + 1] = {0};
    int chosen[AC_IMAGENET_WORDS_MAX], rc = -1;
    if (!coco || !taken || !order || !word_of || !form_id) {
        ac_errf(err, "out of memory");
        goto done;
    }
    ac_objects_of_vocab(v, coco);
    for (int k = 0; k < nw; k++) order[k] = (ranked){k, ac_tag_word_count(t, k)}, word_of[k] = -1;
    qsort(order, (size_t)nw, sizeof *order, by_count);
    int n = 0;
    for (int i = 0; i < nw && n < max; i++) {
        const int nf = usable_forms(t, order[i].word, v, coco, taken, form_id + form_off[n]);
        if (!nf) continue;
        for (int f = form_off[n]; f < form_off[n] + nf; f++) taken[form_id[f]] = 1;
        form_off[n + 1] = form_off[n] + nf;
        chosen[n] = order[i].word, word_of[order[i].word] = n++;
    }
    if (ac_imagenet_words_alloc(out, n, form_off[n], nc, err)) goto done;
    memcpy(out->form_off, form_off, sizeof *form_off * ((size_t)n + 1));
    memcpy(out->form_id, form_id, sizeof *form_id * (size_t)form_off[n]);
    for (int j = 0; j < n; j++)
        if (!(out->word[j] = ac_strdup(ac_tag_word(t, chosen[j])))) {
            ac_imagenet_words_free(out);
            ac_errf(err, "out of memory");
            goto done;
        }
    for (int c = 0; c < nc; c++) {
        const int k = ac_tag_class_word(t, c);
        if (k >= 0 && word_of[k] >= 0) out->class_word[c] = (short)word_of[k];
    }
    rc = 0;
done:
    free(coco), free(taken), free(order), free(word_of), free(form_id);
    return rc;
}
