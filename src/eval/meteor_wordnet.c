/* meteor_wordnet.c: WordNet 3.0 synsets and exception lists for METEOR's synonym matcher.
 *
 * Strings (lemmas, inflected forms, bases) are interned in one table; lemma -> synset offsets and
 * form -> bases are kept as CSR arrays indexed by string id. Offsets of different parts of speech
 * are compared as bare integers, exactly as in METEOR's english.synsets (where a noun and a verb
 * synset with the same byte offset do collide; Debian's data.verb offsets differ slightly from
 * Princeton's, so the rare collisions differ too). */
#include "meteor_internal.h"
#include "alloc_internal.h"

#include <stdlib.h>
#include <string.h>

typedef struct {
    uint32_t a, b;
} pair32;

typedef struct {
    pair32 *v;
    size_t n, cap;
} pairvec;

struct ac_wordnet {
    ac_strtab str; /* lemmas, inflected forms and bases */
    /* CSR: string id -> synset offsets (lemmas only), string id -> base ids (exception forms). */
    uint32_t *syn_start, *syn;
    uint32_t *exc_start, *exc;
    int n_lemmas;
};

static uint32_t hash_str(const char *s, size_t n) {
    uint32_t h = 2166136261u;
    for (size_t i = 0; i < n; i++) h = (h ^ (uint8_t)s[i]) * 16777619u;
    return h;
}

int64_t ac_strtab_find(const ac_strtab *t, const char *s, size_t n) {
    if (!t->n_slots) return -1;
    uint32_t mask = t->n_slots - 1;
    for (uint32_t h = hash_str(s, n) & mask;; h = (h + 1) & mask) {
        uint32_t v = t->slots[h];
        if (!v) return -1;
        const char *u = ac_strtab_str(t, v - 1);
        if (strncmp(u, s, n) == 0 && u[n] == 0) return v - 1;
    }
}

static int str_grow_slots(ac_strtab *t) {
    uint32_t n = t->n_slots ? t->n_slots * 2 : 1u << 10;
    uint32_t *s = ac_calloc(n, sizeof *s);
    if (!s) return -1;
    for (uint32_t id = 0; id < t->n; id++) {
        const char *u = ac_strtab_str(t, id);
        uint32_t h = hash_str(u, strlen(u)) & (n - 1);
        while (s[h]) h = (h + 1) & (n - 1);
        s[h] = id + 1;
    }
    free(t->slots);
    t->slots = s;
    t->n_slots = n;
    return 0;
}

int64_t ac_strtab_intern(ac_strtab *t, const char *s, size_t n) {
    int64_t id = ac_strtab_find(t, s, n);
    if (id >= 0) return id;
    if ((uint64_t)(t->n + 1) * 2 > t->n_slots && str_grow_slots(t)) return -1;
    if (t->chars_len + n + 1 > t->chars_cap) {
        size_t cap = t->chars_cap ? t->chars_cap * 2 : 1 << 12;
        while (cap < t->chars_len + n + 1) cap *= 2;
        char *c = ac_realloc(t->chars, cap);
        if (!c) return -1;
        t->chars = c;
        t->chars_cap = cap;
    }
    if (t->n == t->cap) {
        uint32_t cap = t->cap ? t->cap * 2 : 1 << 10;
        uint32_t *o = ac_realloc(t->off, cap * sizeof *o);
        if (!o) return -1;
        t->off = o;
        t->cap = cap;
    }
    memcpy(t->chars + t->chars_len, s, n);
    t->chars[t->chars_len + n] = 0;
    t->off[t->n] = (uint32_t)t->chars_len;
    t->chars_len += n + 1;
    uint32_t mask = t->n_slots - 1, h = hash_str(s, n) & mask;
    while (t->slots[h]) h = (h + 1) & mask;
    t->slots[h] = t->n + 1;
    return t->n++;
}

void ac_strtab_free(ac_strtab *t) {
    free(t->chars);
    free(t->off);
    free(t->slots);
    memset(t, 0, sizeof *t);
}

static int pv_push(pairvec *pv, uint32_t a, uint32_t b) {
    if (pv->n == pv->cap) {
        size_t cap = pv->cap ? pv->cap * 2 : 1 << 16;
        pair32 *v = ac_realloc(pv->v, cap * sizeof *v);
        if (!v) return -1;
        pv->v = v;
        pv->cap = cap;
    }
    pv->v[pv->n++] = (pair32){a, b};
    return 0;
}

static int cmp_u32(const void *a, const void *b) {
    uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
    return (x > y) - (x < y);
}

/* Counting sort of pairs by .a into CSR (start has n_str + 1 entries). If dedupe, each row's
 * values are sorted and made unique. */
static int build_csr(const pairvec *pv, uint32_t n_str, int dedupe, uint32_t **start_out,
                     uint32_t **vals_out) {
    uint32_t *start = ac_calloc((size_t)n_str + 1, sizeof *start);
    uint32_t *vals = ac_malloc((pv->n ? pv->n : 1) * sizeof *vals);
    uint32_t *fill = ac_calloc((size_t)n_str + 1, sizeof *fill);
    if (!start || !vals || !fill) {
        free(start), free(vals), free(fill);
        return -1;
    }
    for (size_t k = 0; k < pv->n; k++) start[pv->v[k].a + 1]++;
    for (uint32_t i = 0; i < n_str; i++) start[i + 1] += start[i];
    for (size_t k = 0; k < pv->n; k++) {
        uint32_t a = pv->v[k].a;
        vals[start[a] + fill[a]++] = pv->v[k].b;
    }
    free(fill);
    if (dedupe) {
        /* Compact rows in place after sorting each one. */
        uint32_t w = 0, row_begin = 0;
        for (uint32_t i = 0; i < n_str; i++) {
            uint32_t b = row_begin, e = start[i + 1];
            row_begin = e;
            qsort(vals + b, e - b, sizeof *vals, cmp_u32);
            start[i] = w;
            for (uint32_t k = b; k < e; k++)
                if (k == b || vals[k] != vals[k - 1]) vals[w++] = vals[k];
        }
        start[n_str] = w;
    }
    *start_out = start;
    *vals_out = vals;
    return 0;
}

/* Splits the next whitespace-separated token from *p (within a line). */
static int next_tok(const char **p, const char *end, const char **tok, size_t *len) {
    const char *s = *p;
    while (s < end && (*s == ' ' || *s == '\t' || *s == '\r')) s++;
    if (s >= end) return 0;
    const char *t = s;
    while (t < end && *t != ' ' && *t != '\t' && *t != '\r') t++;
    *tok = s;
    *len = (size_t)(t - s);
    *p = t;
    return 1;
}

static int parse_uint(const char *s, size_t n, uint32_t *out) {
    uint64_t v = 0;
    if (n == 0 || n > 9) return -1;
    for (size_t i = 0; i < n; i++) {
        if (s[i] < '0' || s[i] > '9') return -1;
        v = v * 10 + (uint64_t)(s[i] - '0');
    }
    *out = (uint32_t)v;
    return 0;
}

/* index.<pos> lines: lemma pos synset_cnt p_cnt ptr_symbol*p_cnt sense_cnt tagsense_cnt offset*synset_cnt.
 * Lines starting with a space are the licence header. */
static int load_index(ac_wordnet *wn, const char *path, pairvec *pv, ac_err *err) {
    char *data;
    size_t len;
    if (ac_read_file(path, (size_t)1 << 28, &data, &len, err)) return -1;
    const char *p = data, *end = data + len;
    int line_no = 0, rc = 0;
    while (p < end) {
        const char *eol = memchr(p, '\n', (size_t)(end - p));
        if (!eol) eol = end;
        line_no++;
        if (*p != ' ' && p < eol) {
            const char *q = p, *tok, *lemma;
            size_t tl, lemma_len;
            uint32_t n_syn, n_ptr, tmp;
            int ok = next_tok(&q, eol, &lemma, &lemma_len) && next_tok(&q, eol, &tok, &tl) &&
                     next_tok(&q, eol, &tok, &tl) && !parse_uint(tok, tl, &n_syn) &&
                     next_tok(&q, eol, &tok, &tl) && !parse_uint(tok, tl, &n_ptr);
            for (uint32_t k = 0; ok && k < n_ptr; k++) ok = next_tok(&q, eol, &tok, &tl);
            ok = ok && next_tok(&q, eol, &tok, &tl) && !parse_uint(tok, tl, &tmp) &&
                 next_tok(&q, eol, &tok, &tl) && !parse_uint(tok, tl, &tmp) && n_syn > 0;
            int64_t id = ok ? ac_strtab_intern(&wn->str, lemma, lemma_len) : 0;
            if (id < 0) {
                rc = ac_errf(err, "%s: out of memory", path);
                break;
            }
            for (uint32_t k = 0; ok && k < n_syn; k++) {
                ok = next_tok(&q, eol, &tok, &tl) && !parse_uint(tok, tl, &tmp);
                if (ok && pv_push(pv, (uint32_t)id, tmp)) {
                    rc = ac_errf(err, "%s: out of memory", path);
                    break;
                }
            }
            if (rc) break;
            if (!ok) {
                rc = ac_errf(err, "%s:%d: malformed WordNet index line", path, line_no);
                break;
            }
        }
        p = eol + 1;
    }
    free(data);
    return rc;
}

/* <pos>.exc lines: inflected_form base_form [base_form...]. */
static int load_exc(ac_wordnet *wn, const char *path, pairvec *pv, ac_err *err) {
    char *data;
    size_t len;
    if (ac_read_file(path, (size_t)1 << 26, &data, &len, err)) return -1;
    const char *p = data, *end = data + len;
    int line_no = 0, rc = 0;
    while (p < end && !rc) {
        const char *eol = memchr(p, '\n', (size_t)(end - p));
        if (!eol) eol = end;
        line_no++;
        const char *q = p, *tok;
        size_t tl;
        if (next_tok(&q, eol, &tok, &tl)) {
            int64_t form = ac_strtab_intern(&wn->str, tok, tl);
            int n_base = 0;
            while (form >= 0 && next_tok(&q, eol, &tok, &tl)) {
                int64_t base = ac_strtab_intern(&wn->str, tok, tl);
                if (base < 0 || pv_push(pv, (uint32_t)form, (uint32_t)base)) {
                    form = -1;
                    break;
                }
                n_base++;
            }
            if (form < 0) rc = ac_errf(err, "%s: out of memory", path);
            else if (!n_base) rc = ac_errf(err, "%s:%d: exception line without a base form", path, line_no);
        }
        p = eol + 1;
    }
    free(data);
    return rc;
}

int ac_wordnet_load(const char *dir, ac_wordnet **out, ac_err *err) {
    static const char *const pos[4] = {"noun", "verb", "adj", "adv"};
    *out = NULL;
    ac_wordnet *wn = ac_calloc(1, sizeof *wn);
    pairvec syn = {0}, exc = {0};
    char path[4096];
    int rc = wn ? 0 : ac_errf(err, "WordNet: out of memory");
    for (int k = 0; k < 4 && !rc; k++) {
        snprintf(path, sizeof path, "%s/index.%s", dir, pos[k]);
        rc = load_index(wn, path, &syn, err);
    }
    uint32_t n_lemma_ids = wn ? wn->str.n : 0;
    for (int k = 0; k < 4 && !rc; k++) {
        snprintf(path, sizeof path, "%s/%s.exc", dir, pos[k]);
        rc = load_exc(wn, path, &exc, err);
    }
    if (!rc && syn.n == 0) rc = ac_errf(err, "%s/index.noun: no WordNet lemmas found", dir);
    if (!rc && (build_csr(&syn, wn->str.n, 1, &wn->syn_start, &wn->syn) ||
                build_csr(&exc, wn->str.n, 0, &wn->exc_start, &wn->exc)))
        rc = ac_errf(err, "WordNet: out of memory");
    free(syn.v);
    free(exc.v);
    if (rc) {
        ac_wordnet_free(wn);
        return -1;
    }
    wn->n_lemmas = (int)n_lemma_ids;
    *out = wn;
    return 0;
}

void ac_wordnet_free(ac_wordnet *wn) {
    if (!wn) return;
    ac_strtab_free(&wn->str);
    free(wn->syn_start);
    free(wn->syn);
    free(wn->exc_start);
    free(wn->exc);
    free(wn);
}

int ac_wordnet_lemma_count(const ac_wordnet *wn) { return wn ? wn->n_lemmas : 0; }

/* Synsets of an exact string (empty if it is not a lemma). */
static const uint32_t *synsets_of(const ac_wordnet *wn, const char *s, size_t n, uint32_t *count) {
    int64_t id = ac_strtab_find(&wn->str, s, n);
    *count = 0;
    if (id < 0) return NULL;
    *count = wn->syn_start[id + 1] - wn->syn_start[id];
    return wn->syn + wn->syn_start[id];
}

static size_t utf16_length(const char *s) {
    size_t n = 0;
    for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
        if ((*p & 0xC0) != 0x80) n++;
        if ((*p & 0xF8) == 0xF0) n++; /* a supplementary character is two UTF-16 units */
    }
    return n;
}

static int ends_with(const char *s, size_t n, const char *suf) {
    size_t k = strlen(suf);
    return n >= k && memcmp(s + n - k, suf, k) == 0;
}

/* WordNet's suffix rules in METEOR's order (nouns, verbs, adjectives): the first rule whose
 * rewritten form is a lemma wins. Returns the length of the lemma written to out, 0 for none.
 * METEOR returns the word itself for words ending in "ss" or of length <= 2. */
static size_t morph(const ac_wordnet *wn, const char *w, char *out, size_t cap) {
    static const char *const sufx[20] = {"s", "ses", "xes", "zes", "ches", "shes", "men", "ies",
                                         "s", "ies", "es", "es", "ed", "ed", "ing", "ing",
                                         "er", "est", "er", "est"};
    static const char *const addr[20] = {"", "s", "x", "z", "ch", "sh", "man", "y",
                                         "", "y", "e", "", "e", "", "e", "",
                                         "", "", "e", "e"};
    size_t n = strlen(w);
    if (ends_with(w, n, "ss") || utf16_length(w) <= 2) {
        if (n >= cap) return 0;
        memcpy(out, w, n + 1);
        return n;
    }
    for (int r = 0; r < 20; r++) {
        if (!ends_with(w, n, sufx[r])) continue;
        size_t stem = n - strlen(sufx[r]), al = strlen(addr[r]);
        if (stem + al >= cap) continue;
        memcpy(out, w, stem);
        memcpy(out + stem, addr[r], al + 1);
        uint32_t k;
        synsets_of(wn, out, stem + al, &k);
        if (k) return stem + al;
    }
    return 0;
}

static int append(uint32_t **buf, int *cap, int n, const uint32_t *v, uint32_t k) {
    if (!k) return 0;
    if ((size_t)n + k > (size_t)*cap) {
        int c = *cap ? *cap : 64;
        while ((size_t)c < (size_t)n + k) c *= 2;
        uint32_t *b = ac_realloc(*buf, (size_t)c * sizeof *b);
        if (!b) return -1;
        *buf = b;
        *cap = c;
    }
    memcpy(*buf + n, v, k * sizeof *v);
    return 0;
}

int ac_wordnet_synonym_sets(const ac_wordnet *wn, const char *word, uint32_t **buf, int *cap) {
    uint32_t k;
    int n = 0;
    size_t wl = strlen(word);
    const uint32_t *s = synsets_of(wn, word, wl, &k);
    if (append(buf, cap, n, s, k)) return -1;
    n += (int)k;
    int64_t form = ac_strtab_find(&wn->str, word, wl);
    if (form >= 0 && wn->exc_start[form + 1] > wn->exc_start[form]) {
        for (uint32_t e = wn->exc_start[form]; e < wn->exc_start[form + 1]; e++) {
            const char *base = ac_strtab_str(&wn->str, wn->exc[e]);
            s = synsets_of(wn, base, strlen(base), &k);
            if (append(buf, cap, n, s, k)) return -1;
            n += (int)k;
        }
    } else {
        char tmp[256];
        size_t ml = wl < sizeof tmp ? morph(wn, word, tmp, sizeof tmp) : 0;
        if (ml) {
            s = synsets_of(wn, tmp, ml, &k);
            if (append(buf, cap, n, s, k)) return -1;
            n += (int)k;
        }
    }
    if (n > 1) {
        qsort(*buf, (size_t)n, sizeof **buf, cmp_u32);
        int w = 1;
        for (int i = 1; i < n; i++)
            if ((*buf)[i] != (*buf)[w - 1]) (*buf)[w++] = (*buf)[i];
        n = w;
    }
    return n;
}
