/* metrics_cider.c: CIDEr-D as coco-caption's cider/cider_scorer.py computes it.
 *   - n-grams n = 1..4 of each caption (str.split()), term frequencies;
 *   - document frequency df(g) = number of images whose references (any of them) contain g;
 *   - weight of g in a caption: tf * (log(N images) - log(max(1, df)));
 *   - the scorer's "length" of a caption is its number of bigrams (its counts2vec adds term
 *     frequencies where the n-gram index is 1), and the penalty is exp(-delta^2 / (2 sigma^2));
 *   - per n: sum over candidate n-grams of min(w_cand, w_ref) * w_ref, divided by both norms when
 *     both are non-zero; mean over n, sum over references / number of references, x10. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "attncap/metrics.h"
#include "metrics_internal.h"
#include "alloc_internal.h"

static const double SIGMA = 6.0;

typedef struct { uint32_t w[4]; int n; } gram;

typedef struct {
    uint64_t h;
    gram g;
    int id; /* -1 empty */
} gm_slot;

typedef struct {
    gm_slot *slots;
    size_t cap, n;
} gram_map;

static uint64_t gram_hash(const gram *g) {
    uint64_t h = 0x9E3779B97F4A7C15ull * (uint64_t)(g->n + 1);
    for (int k = 0; k < g->n; k++) h = (h ^ g->w[k]) * 0xBF58476D1CE4E5B9ull, h ^= h >> 29;
    return h;
}
static int gram_eq(const gram *a, const gram *b) {
    if (a->n != b->n) return 0;
    for (int k = 0; k < a->n; k++)
        if (a->w[k] != b->w[k]) return 0;
    return 1;
}
static int gm_grow(gram_map *m) {
    size_t nc = m->cap ? m->cap * 2 : 1u << 16;
    gm_slot *ns = ac_malloc(nc * sizeof *ns);
    if (!ns) return -1;
    for (size_t i = 0; i < nc; i++) ns[i].id = -1;
    for (size_t i = 0; i < m->cap; i++)
        if (m->slots[i].id >= 0) {
            size_t j = m->slots[i].h & (nc - 1);
            while (ns[j].id >= 0) j = (j + 1) & (nc - 1);
            ns[j] = m->slots[i];
        }
    free(m->slots);
    m->slots = ns, m->cap = nc;
    return 0;
}
/* Id of g, adding it if new (ids are dense from 0). -1 on OOM. */
static int gm_id(gram_map *m, const gram *g) {
    if ((m->n + 1) * 2 > m->cap && gm_grow(m)) return -1;
    uint64_t h = gram_hash(g);
    size_t j = h & (m->cap - 1);
    while (m->slots[j].id >= 0) {
        if (m->slots[j].h == h && gram_eq(&m->slots[j].g, g)) return m->slots[j].id;
        j = (j + 1) & (m->cap - 1);
    }
    m->slots[j].h = h;
    m->slots[j].g = *g;
    m->slots[j].id = (int)m->n;
    return (int)m->n++;
}

/* A caption as sorted (n-gram id, tf) pairs with weights, norms and length. */
typedef struct {
    int n;
    int *id;
    int *order; /* n-gram order - 1 */
    double *w;
    double norm[4];
    int length;
} vec;

static int cmp_int2(const void *a, const void *b) {
    const int *x = a, *y = b;
    return (x[0] > y[0]) - (x[0] < y[0]);
}

/* Builds the sorted id/tf list of a caption (weights filled later). */
static int make_vec(gram_map *gm, const int *w, int len, vec *v) {
    memset(v, 0, sizeof *v);
    int total = 0;
    for (int k = 1; k <= 4; k++) total += len - k + 1 > 0 ? len - k + 1 : 0;
    int *pairs = ac_malloc((size_t)(total ? total : 1) * 2 * sizeof *pairs);
    if (!pairs) return -1;
    int m = 0;
    for (int k = 1; k <= 4; k++)
        for (int i = 0; i + k <= len; i++) {
            gram g = {{0}, k};
            for (int q = 0; q < k; q++) g.w[q] = (uint32_t)w[i + q];
            int id = gm_id(gm, &g);
            if (id < 0) { free(pairs); return -1; }
            pairs[2 * m] = id;
            pairs[2 * m + 1] = k - 1;
            m++;
        }
    if (m > 64) qsort(pairs, (size_t)m, 2 * sizeof *pairs, cmp_int2);
    else /* captions are short: insertion sort beats qsort's overhead */
        for (int i = 1; i < m; i++) {
            int a = pairs[2 * i], b = pairs[2 * i + 1], j = i - 1;
            while (j >= 0 && pairs[2 * j] > a) pairs[2 * j + 2] = pairs[2 * j], pairs[2 * j + 3] = pairs[2 * j + 1], j--;
            pairs[2 * j + 2] = a, pairs[2 * j + 3] = b;
        }
    v->id = ac_malloc((size_t)(m ? m : 1) * sizeof *v->id);
    v->order = ac_malloc((size_t)(m ? m : 1) * sizeof *v->order);
    v->w = ac_malloc((size_t)(m ? m : 1) * sizeof *v->w);
    if (!v->id || !v->order || !v->w) { free(pairs); return -1; }
    for (int i = 0; i < m; i++) {
        if (v->n && v->id[v->n - 1] == pairs[2 * i]) { v->w[v->n - 1] += 1; continue; }
        v->id[v->n] = pairs[2 * i];
        v->order[v->n] = pairs[2 * i + 1];
        v->w[v->n++] = 1; /* tf for now */
    }
    free(pairs);
    return 0;
}

static void weigh(vec *v, const double *idf) {
    for (int k = 0; k < 4; k++) v->norm[k] = 0;
    v->length = 0;
    for (int i = 0; i < v->n; i++) {
        double tf = v->w[i];
        v->w[i] = tf * idf[v->id[i]];
        v->norm[v->order[i]] += v->w[i] * v->w[i];
        if (v->order[i] == 1) v->length += (int)tf;
    }
    for (int k = 0; k < 4; k++) v->norm[k] = sqrt(v->norm[k]);
}

static double sim(const vec *h, const vec *r) {
    double val[4] = {0};
    int j = 0;
    for (int i = 0; i < h->n; i++) {
        while (j < r->n && r->id[j] < h->id[i]) j++;
        if (j < r->n && r->id[j] == h->id[i]) {
            double a = h->w[i], b = r->w[j];
            val[h->order[i]] += (a < b ? a : b) * b;
        }
    }
    double delta = (double)(h->length - r->length), s = 0;
    for (int k = 0; k < 4; k++) {
        if (h->norm[k] != 0 && r->norm[k] != 0) val[k] /= h->norm[k] * r->norm[k];
        val[k] *= exp(-(delta * delta) / (2 * SIGMA * SIGMA));
        s += val[k];
    }
    return s;
}

static void free_vec(vec *v) { free(v->id); free(v->order); free(v->w); }

/* ---- one corpus, many candidates (self-critical training's rewards) ---- */

struct ac_cider_corpus {
    ac_strmap words;
    gram_map gm;
    int n;        /* images */
    int *ref_off; /* image i's references are refs[ref_off[i] .. ref_off[i + 1]) */
    vec *refs;
    double *idf;  /* [idf_n]: the n-grams seen so far; one a candidate brings is in no reference */
    size_t idf_n;
    double log_n;
};

/* idf of every n-gram id below gm.n (a new one: df 0, so log N). */
static int corpus_idf_grow(ac_cider_corpus *c) {
    if (c->gm.n <= c->idf_n) return 0;
    size_t cap = c->idf_n ? c->idf_n : 1024;
    while (cap < c->gm.n) cap *= 2;
    double *idf = ac_realloc(c->idf, cap * sizeof *idf);
    if (!idf) return -1;
    for (size_t g = c->idf_n; g < cap; g++) idf[g] = c->log_n;
    c->idf = idf, c->idf_n = cap;
    return 0;
}

ac_cider_corpus *ac_cider_corpus_new(const ac_eval_item *items, int n) {
    ac_cider_corpus *c = ac_calloc(1, sizeof *c);
    if (!c) return NULL;
    c->n = n, c->log_n = log((double)(n > 0 ? n : 1));
    int n_caps = 0, rc = 0;
    for (int i = 0; i < n; i++) n_caps += items[i].n_refs;
    c->ref_off = ac_malloc(sizeof(int) * (size_t)(n + 1));
    c->refs = ac_calloc((size_t)(n_caps ? n_caps : 1), sizeof *c->refs);
    if (!c->ref_off || !c->refs) return ac_cider_corpus_free(c), NULL;
    int k = 0;
    for (int i = 0; i < n && !rc; i++) {
        c->ref_off[i] = k;
        for (int j = 0; j < items[i].n_refs && !rc; j++, k++) {
            int len;
            int *w = ac_metric_words(&c->words, items[i].refs[j], &len);
            if (!w || make_vec(&c->gm, w, len, &c->refs[k])) rc = -1;
            free(w);
        }
    }
    c->ref_off[n] = k;
    int *df = rc ? NULL : ac_calloc(c->gm.n ? c->gm.n : 1, sizeof *df);
    int *seen = df ? ac_malloc((c->gm.n ? c->gm.n : 1) * sizeof *seen) : NULL;
    if (rc || !df || !seen || corpus_idf_grow(c)) {
        free(df), free(seen);
        c->ref_off[n] = k; /* what was made is freed */
        return ac_cider_corpus_free(c), NULL;
    }
    /* df: per image, each distinct n-gram of its references once */
    for (size_t g = 0; g < c->gm.n; g++) seen[g] = -1;
    for (int i = 0; i < n; i++)
        for (int r = c->ref_off[i]; r < c->ref_off[i + 1]; r++)
            for (int q = 0; q < c->refs[r].n; q++)
                if (seen[c->refs[r].id[q]] != i) seen[c->refs[r].id[q]] = i, df[c->refs[r].id[q]]++;
    for (size_t g = 0; g < c->gm.n; g++) c->idf[g] = c->log_n - log(df[g] > 1 ? (double)df[g] : 1.0);
    for (int r = 0; r < k; r++) weigh(&c->refs[r], c->idf);
    free(df), free(seen);
    return c;
}

double ac_cider_corpus_score(ac_cider_corpus *c, int image, const char *cand) {
    if (image < 0 || image >= c->n) return -1;
    int len;
    vec h;
    int *w = ac_metric_words(&c->words, cand, &len);
    if (!w) return -1;
    const int bad = make_vec(&c->gm, w, len, &h);
    free(w);
    if (bad || corpus_idf_grow(c)) { /* make_vec zeroes h first: freeing it is safe either way */
        free_vec(&h);
        return -1;
    }
    weigh(&h, c->idf);
    const int n_refs = c->ref_off[image + 1] - c->ref_off[image];
    double s = 0;
    for (int r = c->ref_off[image]; r < c->ref_off[image + 1]; r++) s += sim(&h, &c->refs[r]);
    free_vec(&h);
    return n_refs ? s / 4.0 / n_refs * 10.0 : 0;
}

void ac_cider_corpus_free(ac_cider_corpus *c) {
    if (!c) return;
    for (int r = 0; c->refs && c->ref_off && r < c->ref_off[c->n]; r++) free_vec(&c->refs[r]);
    free(c->refs), free(c->ref_off), free(c->idf), free(c->gm.slots);
    ac_strmap_free(&c->words);
    free(c);
}

/* The set's own corpus: df depends on the references alone, so each image's score is its candidate's
 * against the corpus of the set's references. */
int ac_cider_d(const ac_eval_item *items, int n, double *mean, double *img) {
    ac_cider_corpus *c = ac_cider_corpus_new(items, n);
    if (!c) return -1;
    double sum = 0;
    for (int i = 0; i < n; i++) {
        const double score = items[i].n_refs ? ac_cider_corpus_score(c, i, items[i].cand) : 0;
        if (score < 0) {
            ac_cider_corpus_free(c);
            return -1;
        }
        if (img) img[i] = score;
        sum += score;
    }
    ac_cider_corpus_free(c);
    *mean = n ? sum / n : 0;
    return 0;
}
