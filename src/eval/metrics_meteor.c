/* metrics_meteor.c: METEOR 1.5 (meteor-1.5.jar -l en -norm, as coco-caption runs it) in C.
 *
 * Pipeline per candidate/reference pair, following METEOR's MeteorScorer and Aligner:
 *  1. -norm: METEOR's Normalizer (Moses-style tokenisation, quote/dash normalisation, dashes
 *     between alphanumerics removed, English contractions split, sentence dots split) + lowercase.
 *  2. Matching stages, each adding every candidate match (also overlapping ones): exact (equal
 *     words), stem (different words, equal Snowball English stems), synonym (different words
 *     sharing a WordNet synset, with exception-list / suffix-rule base forms), paraphrase (no
 *     table here: never matches). Identical sentences use the exact stage only.
 *  3. Matches that are the only one for both of their words are fixed; a beam search (40 paths,
 *     left to right over the reference) resolves the rest, preferring more weighted matches, then
 *     fewer chunks, then smaller position distance. Reproduced quirks: the search's match weights
 *     1/0.5/0.5/0.5 are added to int counters, so non-exact matches add nothing there; the skip
 *     path (not the new one) accumulates the distance of the matches it tried; Java's stable sort.
 *  4. Content/function weighting (delta), module weights in P and R, Fmean, fragmentation
 *     penalty; best reference by score; corpus score from summed statistics.
 *
 * Golden case (../shared/metrics/magic_mscoco_result.json, coco-caption printed 0.174): 0.1683;
 * 0.1651 without synonyms. Differences from METEOR 1.5, measured on that set:
 *  - no paraphrase table (METEOR's paraphrase-en.gz is not available here), so its matches
 *    (weight 0.6, also multi-word) are missing: this and the next item are what remains of the
 *    0.006 gap to 0.174;
 *  - function words: METEOR's english.words is not available; ours is a reconstruction by the
 *    rule METEOR's list was made with (words above 1e-3 relative frequency in English news).
 *    A minimal closed-class list gives 0.1661, a 40-word larger one 0.1697: +-0.002;
 *  - WordNet from Debian's wordnet-base 3.0 (same synsets; a few byte offsets differ from the
 *    Princeton files METEOR's english.synsets was made from, which only matters for the rare
 *    offset collisions across parts of speech); words are compared as strings where METEOR
 *    compares Java hash codes.
 * Reproduced on purpose: the int truncation of search weights (without it: 0.1713) and the
 * corpus score from summed statistics (the mean of segment scores would be 0.1734). */
#include <libstemmer.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "attncap/meteor.h"
#include "meteor_internal.h"
#include "alloc_internal.h"

static const double ALPHA = 0.85, BETA = 0.20, GAMMA = 0.60, DELTA = 0.75;
static const double MODULE_WEIGHT[AC_METEOR_MODULES] = {1.0, 0.6, 0.8, 0.6};
static const double SEARCH_WEIGHT[AC_METEOR_MODULES] = {1.0, 0.5, 0.5, 0.5};
enum { BEAM = 40 };

/* Function words: punctuation and the words of English news text with a relative frequency
 * above 1e-3 (METEOR's rule), as normalised by -norm ("'s" becomes "' s", "n't" "n 't"). */
static const char *const FUNCTION_WORDS[] = {
    ",", ".", "\"", "'", "-", "(", ")", ":", ";", "?", "!", "...", "s", "'s", "'t", "n't", "n",
    "the", "a", "an", "of", "to", "in", "and", "for", "on", "with", "at", "by", "from", "as",
    "that", "is", "was", "be", "are", "were", "been", "have", "has", "had", "it", "its", "he",
    "his", "him", "she", "her", "they", "their", "them", "we", "our", "i", "you", "this", "not",
    "but", "or", "will", "would", "can", "could", "do", "who", "which", "what", "there", "if",
    "than", "so", "all", "no", "about", "after", "more", "up", "out", "into", "over", "also",
    "when", "only", "some", "other", "one", "two", "new", "first", "last", "said", "mr", "year",
    "years", "time", "people", "just", "now", "like"};

/* ---- Word cache: every distinct word seen, with its stem, synsets and function-word flag ---- */

typedef struct {
    uint32_t stem;          /* id in the stem table */
    uint32_t syn_off, nsyn; /* into syn pool */
    uint8_t func;
} word_info;

struct ac_meteor {
    struct sb_stemmer *stemmer;
    ac_wordnet *wn; /* NULL without WordNet */
    int synonyms;   /* synonym stage on */
    ac_strtab fwords, words, stems;
    word_info *info;
    uint32_t info_cap;
    uint32_t *syn;
    size_t syn_len, syn_cap;
    uint32_t *tmp_syn;
    int tmp_cap;
    /* Memo of the synonym relation between word ids: key (lo << 32 | hi) + 1, 0 = empty; the
     * answer in memo_val. Common word pairs recur in every caption. */
    uint64_t *memo_key;
    uint8_t *memo_val;
    size_t memo_n, memo_cap;
    /* Scratch, grown as needed */
    unsigned char *scratch;
    size_t scratch_cap;
};

/* Id of a word in the cache, computing its stem / synsets / function flag when new; -1 if OOM. */
static int64_t word_id(ac_meteor *m, const char *w, size_t len) {
    int64_t id = ac_strtab_find(&m->words, w, len);
    if (id >= 0) return id;
    id = ac_strtab_intern(&m->words, w, len);
    if (id < 0) return -1;
    if ((uint32_t)id >= m->info_cap) {
        uint32_t cap = m->info_cap ? m->info_cap * 2 : 1024;
        word_info *p = ac_realloc(m->info, cap * sizeof *p);
        if (!p) return -1;
        m->info = p;
        m->info_cap = cap;
    }
    word_info *wi = &m->info[id];
    memset(wi, 0, sizeof *wi);
    const char *word = ac_strtab_str(&m->words, (uint32_t)id);
    const sb_symbol *st = sb_stemmer_stem(m->stemmer, (const sb_symbol *)word, (int)len);
    int64_t sid = st ? ac_strtab_intern(&m->stems, (const char *)st, (size_t)sb_stemmer_length(m->stemmer))
                     : ac_strtab_intern(&m->stems, word, len);
    if (sid < 0) return -1;
    wi->stem = (uint32_t)sid;
    wi->func = ac_strtab_find(&m->fwords, word, len) >= 0;
    wi->syn_off = (uint32_t)m->syn_len;
    if (m->wn) {
        int n = ac_wordnet_synonym_sets(m->wn, word, &m->tmp_syn, &m->tmp_cap);
        if (n < 0) return -1;
        if (m->syn_len + (size_t)n > m->syn_cap) {
            size_t cap = m->syn_cap ? m->syn_cap * 2 : 4096;
            while (cap < m->syn_len + (size_t)n) cap *= 2;
            uint32_t *p = ac_realloc(m->syn, cap * sizeof *p);
            if (!p) return -1;
            m->syn = p;
            m->syn_cap = cap;
        }
        if (n) memcpy(m->syn + m->syn_len, m->tmp_syn, (size_t)n * sizeof(uint32_t));
        m->syn_len += (size_t)n;
        wi->nsyn = (uint32_t)n;
    }
    return id;
}


/* Normalises a line and maps its first AC_METEOR_MAX_WORDS tokens to word ids. Returns the
 * count, -1 if out of memory. */
static int line_words(ac_meteor *m, const char *line, int64_t **ids, int *cap) {
    char *norm = ac_meteor_normalize(line);
    if (!norm) return -1;
    int n = 0;
    for (char *p = norm; *p && n < AC_METEOR_MAX_WORDS;) {
        while (*p == ' ') p++;
        if (!*p) break;
        char *q = p;
        while (*q && *q != ' ') q++;
        if (n == *cap) {
            int c = *cap ? *cap * 2 : 64;
            int64_t *v = ac_realloc(*ids, (size_t)c * sizeof *v);
            if (!v) {
                free(norm);
                return -1;
            }
            *ids = v;
            *cap = c;
        }
        int64_t id = word_id(m, p, (size_t)(q - p));
        if (id < 0) {
            free(norm);
            return -1;
        }
        (*ids)[n++] = id;
        p = q;
    }
    free(norm);
    return n;
}

/* ---- Aligner ---- */

/* A partial alignment of METEOR's beam search. Arrays live in the owning pool's arena. */
typedef struct {
    int m1, m2;   /* weighted match counts, int as in METEOR (non-exact matches add 0) */
    int chunks, idx, last_end, distance;
    int32_t *choice; /* per reference word: index of the chosen match, or -1 */
    uint8_t *used1, *used2;
} mpath;

typedef struct {
    mpath *p;
    unsigned char *arena;
    int n, cap;
} pool;

typedef struct {
    int n1, n2;
    const int64_t *w1, *w2;
    /* Matches grouped by reference position j: mstart[j]..mstart[j+1]. */
    int32_t *mstart;
    int16_t *mi; /* candidate position (lines have at most AC_METEOR_MAX_WORDS words) */
    uint8_t *mmod;
    int *cov1, *cov2;
    size_t path_bytes;
} stage;

static mpath *pool_add(pool *pl, const mpath *src, const stage *s) {
    mpath *d = &pl->p[pl->n];
    unsigned char *mem = pl->arena + (size_t)pl->n * s->path_bytes;
    pl->n++;
    *d = *src;
    d->choice = (int32_t *)mem;
    d->used1 = mem + (size_t)s->n2 * sizeof(int32_t);
    d->used2 = d->used1 + s->n1;
    memcpy(d->choice, src->choice, s->path_bytes);
    return d;
}

/* METEOR's PARTIAL_COMPARE_TOTAL (more weighted matches, then fewer chunks, then less
 * distance) as one integer key: matches and chunks stay far below 2^17 (AC_METEOR_MAX_WORDS),
 * the distance is clamped to 30 bits (not reachable at that length). */
static uint64_t path_key(const mpath *p) {
    uint64_t d = p->distance < 0 ? 0 : (uint64_t)p->distance;
    if (d > 0x3FFFFFFF) d = 0x3FFFFFFF;
    return ((uint64_t)(0x1FFFF - (p->m1 + p->m2)) << 47) | ((uint64_t)p->chunks << 30) | d;
}

/* Stable sort of path indices by key (Java's Collections.sort is stable): insertion sort for
 * the usual short lists, bottom-up merge sort otherwise. */
static void sort_paths(const pool *pl, int *ord, int *tmp, int n) {
    uint64_t key[64];
    if (n <= 64) {
        for (int a = 0; a < n; a++) key[a] = path_key(&pl->p[ord[a]]);
        for (int a = 1; a < n; a++) {
            int v = ord[a], b = a;
            uint64_t kv = key[a];
            for (; b > 0 && kv < key[b - 1]; b--) ord[b] = ord[b - 1], key[b] = key[b - 1];
            ord[b] = v;
            key[b] = kv;
        }
        return;
    }
    for (int w = 1; w < n; w *= 2) {
        for (int lo = 0; lo < n; lo += 2 * w) {
            int mid = lo + w < n ? lo + w : n, hi = lo + 2 * w < n ? lo + 2 * w : n;
            int a = lo, b = mid, o = lo;
            while (a < mid && b < hi)
                tmp[o++] = path_key(&pl->p[ord[b]]) < path_key(&pl->p[ord[a]]) ? ord[b++] : ord[a++];
            while (a < mid) tmp[o++] = ord[a++];
            while (b < hi) tmp[o++] = ord[b++];
        }
        memcpy(ord, tmp, (size_t)n * sizeof *ord);
    }
}

static void take_match(mpath *p, const stage *s, int k, int j) {
    int i = s->mi[k];
    double w = SEARCH_WEIGHT[s->mmod[k]];
    p->m1 = (int)(p->m1 + 1 * w);
    p->m2 = (int)(p->m2 + 1 * w);
    if (p->last_end != -1 && i != p->last_end) p->chunks++;
    p->idx = j + 1;
    p->last_end = i + 1;
}

/* Beam search over reference positions; returns the best complete path's choice array in best. */
static void resolve(const stage *s, pool *cur, pool *next, int *ord, int *tmp, int32_t *best) {
    for (int j = 0; j <= s->n2; j++) {
        for (int k = 0; k < cur->n; k++) ord[k] = k;
        sort_paths(cur, ord, tmp, cur->n);
        next->n = 0;
        for (int r = 0; r < BEAM && r < cur->n; r++) {
            mpath *p = &cur->p[ord[r]];
            if (j == s->n2) {
                if (p->last_end != -1) p->chunks++;
                pool_add(next, p, s);
                continue;
            }
            if (p->used2[j]) {
                if (j < p->idx) {
                    pool_add(next, p, s);
                } else if (p->choice[p->idx] >= 0) { /* a fixed match */
                    int k = p->choice[p->idx], i = s->mi[k];
                    take_match(p, s, k, j);
                    p->distance += abs(j - i);
                    pool_add(next, p, s);
                }
                continue;
            }
            for (int k = s->mstart[j]; k < s->mstart[j + 1]; k++) {
                int i = s->mi[k];
                if (p->used1[i]) continue;
                mpath *q = pool_add(next, p, s);
                q->used1[i] = q->used2[j] = 1;
                q->choice[j] = k;
                take_match(q, s, k, j);
                p->distance += abs(j - i); /* sic: METEOR adds it to the path being extended */
            }
            if (p->last_end != -1) {
                p->chunks++;
                p->last_end = -1;
            }
            p->idx++;
            pool_add(next, p, s);
        }
        if (next->n == 0) pool_add(next, &cur->p[ord[0]], s);
        pool t = *cur;
        *cur = *next;
        *next = t;
    }
    for (int k = 0; k < cur->n; k++) ord[k] = k;
    sort_paths(cur, ord, tmp, cur->n);
    memcpy(best, cur->p[ord[0]].choice, (size_t)s->n2 * sizeof *best);
}

static void *scratch(ac_meteor *m, size_t bytes) {
    if (bytes > m->scratch_cap) {
        size_t cap = m->scratch_cap ? m->scratch_cap : 1 << 16;
        while (cap < bytes) cap *= 2;
        void *p = ac_realloc(m->scratch, cap);
        if (!p) return NULL;
        m->scratch = p;
        m->scratch_cap = cap;
    }
    return m->scratch;
}

static int syn_share_sets(const ac_meteor *m, const word_info *a, const word_info *b) {
    const uint32_t *x = m->syn + a->syn_off, *y = m->syn + b->syn_off;
    uint32_t i = 0, j = 0;
    while (i < a->nsyn && j < b->nsyn) {
        if (x[i] == y[j]) return 1;
        if (x[i] < y[j]) i++;
        else j++;
    }
    return 0;
}

static size_t memo_slot(const uint64_t *keys, size_t cap, uint64_t key) {
    size_t h = (size_t)((key * 0x9E3779B97F4A7C15ull) >> 20) & (cap - 1);
    while (keys[h] && keys[h] != key) h = (h + 1) & (cap - 1);
    return h;
}

/* Do words a and b share a synset? Memoised; falls back to computing if the memo can't grow. */
static int syn_share(ac_meteor *m, int64_t a, int64_t b) {
    const word_info *wa = &m->info[a], *wb = &m->info[b];
    if (!wa->nsyn || !wb->nsyn) return 0;
    uint64_t lo = (uint64_t)(a < b ? a : b), hi = (uint64_t)(a < b ? b : a), key = (lo << 32 | hi) + 1;
    if (m->memo_cap) {
        size_t h = memo_slot(m->memo_key, m->memo_cap, key);
        if (m->memo_key[h] == key) return m->memo_val[h];
    }
    int r = syn_share_sets(m, wa, wb);
    if ((m->memo_n + 1) * 2 > m->memo_cap) {
        size_t cap = m->memo_cap ? m->memo_cap * 2 : 1 << 14;
        uint64_t *k = ac_calloc(cap, sizeof *k);
        uint8_t *v = ac_malloc(cap);
        if (!k || !v) {
            free(k), free(v);
            return r;
        }
        for (size_t i = 0; i < m->memo_cap; i++)
            if (m->memo_key[i]) {
                size_t h = memo_slot(k, cap, m->memo_key[i]);
                k[h] = m->memo_key[i];
                v[h] = m->memo_val[i];
            }
        free(m->memo_key);
        free(m->memo_val);
        m->memo_key = k;
        m->memo_val = v;
        m->memo_cap = cap;
    }
    size_t h = memo_slot(m->memo_key, m->memo_cap, key);
    m->memo_key[h] = key;
    m->memo_val[h] = (uint8_t)r;
    m->memo_n++;
    return r;
}

#define ALIGN8(x) (((x) + 7) & ~(size_t)7)

/* Aligns candidate words w1 to reference words w2 and fills st (counts only). -1 if OOM. */
static int align(ac_meteor *m, const int64_t *w1, int n1, const int64_t *w2, int n2, ac_meteor_stats *st) {
    memset(st, 0, sizeof *st);
    st->test_len = n1;
    st->ref_len = n2;
    for (int i = 0; i < n1; i++) st->test_func += m->info[w1[i]].func;
    for (int j = 0; j < n2; j++) st->ref_func += m->info[w2[j]].func;
    int identical = n1 == n2 && (n1 == 0 || !memcmp(w1, w2, (size_t)n1 * sizeof *w1));
    int mods = identical ? 1 : (m->synonyms ? 3 : 2);
    /* Upper bound of matches: each pair can match in at most one module of exact / stem /
     * synonym (stem and synonym need different words, but both may fire). */
    size_t max_match = (size_t)n1 * n2 * 2 + 1;
    size_t path_bytes = ALIGN8((size_t)n2 * 4 + n1 + n2 + 1);
    /* Matches first (their count per position sizes the pools), then the search. */
    stage s = {.n1 = n1, .n2 = n2, .w1 = w1, .w2 = w2, .path_bytes = path_bytes};
    size_t fixed = ALIGN8((n2 + 1) * sizeof(int32_t)) + ALIGN8(max_match * 2) + ALIGN8(max_match) +
                   ALIGN8((size_t)(n1 + n2) * sizeof(int)) + ALIGN8((size_t)n2 * sizeof(int32_t));
    unsigned char *mem = scratch(m, fixed);
    if (!mem) return -1;
    s.mstart = (int32_t *)mem;
    s.mi = (int16_t *)(mem + ALIGN8((n2 + 1) * sizeof(int32_t)));
    s.mmod = (uint8_t *)s.mi + ALIGN8(max_match * 2);
    s.cov1 = (int *)(s.mmod + ALIGN8(max_match));
    s.cov2 = s.cov1 + n1;
    memset(s.cov1, 0, (size_t)(n1 + n2) * sizeof(int));
    int nm = 0, maxk = 0;
    for (int j = 0; j < n2; j++) {
        s.mstart[j] = nm;
        const word_info *b = &m->info[w2[j]];
        for (int mod = 0; mod < mods; mod++)
            for (int i = 0; i < n1; i++) {
                const word_info *a = &m->info[w1[i]];
                int hit = mod == AC_METEOR_EXACT ? w1[i] == w2[j]
                          : w1[i] == w2[j]       ? 0
                          : mod == AC_METEOR_STEM ? a->stem == b->stem
                                                  : syn_share(m, w1[i], w2[j]);
                if (!hit) continue;
                s.mi[nm] = (int16_t)i;
                s.mmod[nm++] = (uint8_t)mod;
                s.cov1[i]++;
                s.cov2[j]++;
            }
        if (nm - s.mstart[j] > maxk) maxk = nm - s.mstart[j];
    }
    s.mstart[n2] = nm;
    /* Pools: at most BEAM paths expand, each into maxk + 1 successors. */
    int pcap = BEAM * (maxk + 1) + 1;
    size_t pool_bytes = ALIGN8((size_t)pcap * sizeof(mpath)) + (size_t)pcap * path_bytes;
    size_t total = fixed + 2 * pool_bytes + 2 * ALIGN8((size_t)pcap * sizeof(int));
    mem = scratch(m, total);
    if (!mem) return -1;
    /* scratch() may have moved the buffer: recompute the stage pointers. */
    s.mstart = (int32_t *)mem;
    s.mi = (int16_t *)(mem + ALIGN8((n2 + 1) * sizeof(int32_t)));
    s.mmod = (uint8_t *)s.mi + ALIGN8(max_match * 2);
    s.cov1 = (int *)(s.mmod + ALIGN8(max_match));
    s.cov2 = s.cov1 + n1;
    int32_t *best = (int32_t *)(mem + fixed - ALIGN8((size_t)n2 * sizeof(int32_t)));
    pool pa = {(mpath *)(mem + fixed), mem + fixed + ALIGN8((size_t)pcap * sizeof(mpath)), 0, pcap};
    pool pb = {(mpath *)(mem + fixed + pool_bytes), mem + fixed + pool_bytes + ALIGN8((size_t)pcap * sizeof(mpath)), 0, pcap};
    int *ord = (int *)(mem + fixed + 2 * pool_bytes), *tmp = ord + ALIGN8((size_t)pcap * sizeof(int)) / sizeof(int);
    /* The initial path: matches alone on both of their words are definite. */
    mpath init = {0};
    init.last_end = -1;
    mpath *p0 = &pa.p[0];
    *p0 = init;
    p0->choice = (int32_t *)pa.arena;
    p0->used1 = pa.arena + (size_t)n2 * sizeof(int32_t);
    p0->used2 = p0->used1 + n1;
    memset(p0->choice, 0xFF, (size_t)n2 * sizeof(int32_t));
    memset(p0->used1, 0, (size_t)(n1 + n2));
    pa.n = 1;
    for (int j = 0; j < n2; j++) {
        if (s.mstart[j + 1] - s.mstart[j] != 1) continue;
        int k = s.mstart[j], i = s.mi[k];
        if (s.cov2[j] != 1 || s.cov1[i] != 1) continue;
        p0->choice[j] = k;
        p0->used2[j] = p0->used1[i] = 1;
    }
    resolve(&s, &pa, &pb, ord, tmp, best);
    /* Statistics of the chosen alignment. */
    int idx = 0, last = -1, chunks = 0;
    for (int j = 0; j < n2; j++) {
        int k = best[j];
        if (k < 0) continue;
        int i = s.mi[k], mod = s.mmod[k];
        if (m->info[w1[i]].func) st->test_function[mod]++;
        else st->test_content[mod]++;
        if (m->info[w2[j]].func) st->ref_function[mod]++;
        else st->ref_content[mod]++;
        st->test_word_matches++;
        st->ref_word_matches++;
    }
    while (idx < n2) {
        int k = best[idx];
        if (k < 0) {
            if (last != -1) chunks++, last = -1;
            idx++;
        } else {
            int i = s.mi[k];
            if (last != -1 && i != last) chunks++;
            idx++;
            last = i + 1;
        }
    }
    if (last != -1) chunks++;
    st->chunks = chunks;
    return 0;
}

/* ---- Scoring ---- */

/* IEEE division without relying on the compiler or sanitizers to allow x/0. */
static double qdiv(double a, double b) {
    if (b != 0) return a / b;
    if (a == 0 || isnan(a)) return NAN;
    return a > 0 ? INFINITY : -INFINITY;
}

static double total_matches(const double *c, const double *f) {
    double t = 0;
    for (int k = 0; k < AC_METEOR_MODULES; k++) t += c[k] + f[k];
    return t;
}

static int perfect(const ac_meteor_stats *s) {
    return total_matches(s->test_content, s->test_function) == s->test_len &&
           total_matches(s->ref_content, s->ref_function) == s->ref_len && s->chunks == 1;
}

double ac_meteor_compute(ac_meteor_stats *s) {
    double tw = 0, rw = 0;
    double tl = DELTA * (s->test_len - s->test_func) + (1 - DELTA) * s->test_func;
    double rl = DELTA * (s->ref_len - s->ref_func) + (1 - DELTA) * s->ref_func;
    for (int k = 0; k < AC_METEOR_MODULES; k++) {
        tw += s->test_content[k] * MODULE_WEIGHT[k] * DELTA + s->test_function[k] * MODULE_WEIGHT[k] * (1 - DELTA);
        rw += s->ref_content[k] * MODULE_WEIGHT[k] * DELTA + s->ref_function[k] * MODULE_WEIGHT[k] * (1 - DELTA);
    }
    s->precision = qdiv(tw, tl);
    s->recall = qdiv(rw, rl);
    s->fmean = qdiv(1.0, qdiv(1 - ALPHA, s->precision) + qdiv(ALPHA, s->recall));
    double frag = perfect(s) ? 0 : qdiv(s->chunks, (s->test_word_matches + s->ref_word_matches) / 2);
    s->frag_penalty = GAMMA * pow(frag, BETA);
    double score = s->fmean * (1 - s->frag_penalty);
    s->score = isnan(score) ? 0 : (score > 0 ? score : 0);
    return s->score;
}

void ac_meteor_stats_add(ac_meteor_stats *agg, const ac_meteor_stats *s) {
    agg->test_len += s->test_len;
    agg->ref_len += s->ref_len;
    agg->test_func += s->test_func;
    agg->ref_func += s->ref_func;
    for (int k = 0; k < AC_METEOR_MODULES; k++) {
        agg->test_content[k] += s->test_content[k];
        agg->ref_content[k] += s->ref_content[k];
        agg->test_function[k] += s->test_function[k];
        agg->ref_function[k] += s->ref_function[k];
    }
    if (!perfect(s)) agg->chunks += s->chunks;
    agg->test_word_matches += s->test_word_matches;
    agg->ref_word_matches += s->ref_word_matches;
}

double ac_meteor_segment(ac_meteor *m, const char *cand, const char *const *refs, int n_refs,
                         ac_meteor_stats *st) {
    ac_meteor_stats best, cur;
    memset(&best, 0, sizeof best);
    best.score = -1;
    int64_t *w1 = NULL, *w2 = NULL;
    int c1 = 0, c2 = 0;
    int n1 = line_words(m, cand, &w1, &c1);
    double ret = n1 < 0 ? -1 : 0;
    for (int r = 0; r < n_refs && ret == 0; r++) {
        int n2 = line_words(m, refs[r], &w2, &c2);
        if (n2 < 0 || align(m, w1, n1, w2, n2, &cur)) {
            ret = -1;
            break;
        }
        if (ac_meteor_compute(&cur) > best.score) best = cur;
    }
    free(w1);
    free(w2);
    if (ret < 0) return -1;
    if (best.score < 0) memset(&best, 0, sizeof best);
    if (st) *st = best;
    return best.score;
}

double ac_meteor_corpus(ac_meteor *m, int n, const char *const *cands, const char *const *const *refs,
                        const int *n_refs, double *seg_scores) {
    ac_meteor_stats agg, s;
    memset(&agg, 0, sizeof agg);
    for (int i = 0; i < n; i++) {
        double sc = ac_meteor_segment(m, cands[i], refs[i], n_refs[i], &s);
        if (sc < 0) return -1;
        if (seg_scores) seg_scores[i] = sc;
        ac_meteor_stats_add(&agg, &s);
    }
    return ac_meteor_compute(&agg);
}

/* ---- Resources ---- */

int ac_meteor_open(const char *wordnet_dir, ac_meteor **out, ac_err *err) {
    *out = NULL;
    ac_meteor *m = ac_calloc(1, sizeof *m);
    if (!m) return ac_errf(err, "METEOR: out of memory");
    m->stemmer = sb_stemmer_new("english", NULL);
    if (!m->stemmer) {
        ac_meteor_close(m);
        return ac_errf(err, "METEOR: the Snowball English stemmer (libstemmer) is unavailable");
    }
    for (size_t k = 0; k < sizeof FUNCTION_WORDS / sizeof *FUNCTION_WORDS; k++)
        if (ac_strtab_intern(&m->fwords, FUNCTION_WORDS[k], strlen(FUNCTION_WORDS[k])) < 0) {
            ac_meteor_close(m);
            return ac_errf(err, "METEOR: out of memory");
        }
    const char *dir = wordnet_dir ? wordnet_dir : "/usr/share/wordnet";
    char probe[4096];
    snprintf(probe, sizeof probe, "%s/index.noun", dir);
    if (wordnet_dir || ac_is_file(probe)) {
        if (ac_wordnet_load(dir, &m->wn, err)) {
            ac_meteor_close(m);
            return ac_err_prefix(err, "METEOR synonyms");
        }
        m->synonyms = 1;
    }
    *out = m;
    return 0;
}

void ac_meteor_close(ac_meteor *m) {
    if (!m) return;
    if (m->stemmer) sb_stemmer_delete(m->stemmer);
    ac_wordnet_free(m->wn);
    ac_strtab_free(&m->fwords);
    ac_strtab_free(&m->words);
    ac_strtab_free(&m->stems);
    free(m->info);
    free(m->syn);
    free(m->tmp_syn);
    free(m->memo_key);
    free(m->memo_val);
    free(m->scratch);
    free(m);
}

int ac_meteor_has_synonyms(const ac_meteor *m) { return m && m->synonyms; }

void ac_meteor_set_synonyms(ac_meteor *m, int on) { m->synonyms = on && m->wn; }
