/* beam_memo.c: the decoder's outputs per hypothesis of one photo, kept across its searches (beam.h).
 *
 * A step's outputs for a hypothesis depend only on the photo and the words before it, and are the
 * same bits whichever rows share the step, so a constrained search can take them from the free
 * search (and from the search with one constraint more) instead of computing them again: with the
 * tags, most hypotheses of the state that meets no constraint yet are the free search's. An open
 * addressing table keyed by a hash of the words; the words themselves are compared on a hit. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "beam_internal.h"
#include "alloc_internal.h"

typedef struct memo_entry {
    uint64_t hash;
    int t;
    int *words; /* [t], then the row (floats) in the same allocation */
    float *row;
} memo_entry;

struct ac_beam_memo {
    size_t row;       /* floats per row */
    size_t cap, n;    /* slots (a power of 2), used */
    memo_entry *slot; /* words == NULL: empty */
};

int ac_search_keeps_account(const ac_decoder *dec) {
    return dec->cfg.copy && dec->cfg.decoder == AC_DECODER_LSTM;
}

size_t ac_memo_row_size(const ac_decoder *dec) {
    return ac_decoder_state_size(&dec->cfg) + ac_decoder_hist_size(&dec->cfg) + (size_t)dec->cfg.vocab +
           (size_t)dec->cfg.n_ann + 1 + (ac_search_keeps_account(dec) ? AC_DECODER_ACCOUNT_ROW : 0);
}

ac_beam_memo *ac_beam_memo_new(const ac_decoder *dec) {
    ac_beam_memo *m = ac_calloc(1, sizeof *m);
    if (!m) return NULL;
    m->row = ac_memo_row_size(dec);
    return m;
}

void ac_beam_memo_free(ac_beam_memo *m) {
    if (!m) return;
    for (size_t i = 0; i < m->cap; i++) free(m->slot[i].words);
    free(m->slot);
    free(m);
}

static uint64_t hash_words(const int *words, int t) {
    uint64_t h = 0xcbf29ce484222325ull ^ (uint64_t)t;
    for (int i = 0; i < t; i++) h = (h ^ (uint32_t)words[i]) * 0x100000001b3ull;
    return h ^ (h >> 29);
}

static memo_entry *probe(memo_entry *slot, size_t cap, uint64_t h, const int *words, int t) {
    for (size_t i = h & (cap - 1);; i = (i + 1) & (cap - 1)) {
        memo_entry *e = &slot[i];
        if (!e->words || (e->hash == h && e->t == t && !memcmp(e->words, words, sizeof *words * (size_t)t))) return e;
    }
}

const float *ac_memo_find(const ac_beam_memo *m, const int *words, int t) {
    if (!m->n) return NULL;
    const memo_entry *e = probe(m->slot, m->cap, hash_words(words, t), words, t);
    return e->words ? e->row : NULL;
}

void ac_memo_add(ac_beam_memo *m, const int *words, int t, const float *row) {
    if (2 * (m->n + 1) > m->cap) { /* at most half full */
        const size_t cap = m->cap ? 2 * m->cap : 64;
        memo_entry *slot = ac_calloc(cap, sizeof *slot);
        if (!slot) return;
        for (size_t i = 0; i < m->cap; i++)
            if (m->slot[i].words) *probe(slot, cap, m->slot[i].hash, m->slot[i].words, m->slot[i].t) = m->slot[i];
        free(m->slot);
        m->slot = slot, m->cap = cap;
    }
    const uint64_t h = hash_words(words, t);
    memo_entry *e = probe(m->slot, m->cap, h, words, t);
    if (e->words) return; /* kept already */
    /* words first, then the row at a float boundary */
    const size_t nw = ((size_t)t + 1) & ~(size_t)1;
    int *blob = ac_malloc(sizeof(int) * nw + sizeof(float) * m->row);
    if (!blob) return;
    memcpy(blob, words, sizeof *words * (size_t)t);
    e->hash = h, e->t = t, e->words = blob, e->row = (float *)(blob + nw);
    memcpy(e->row, row, sizeof(float) * m->row);
    m->n++;
}
