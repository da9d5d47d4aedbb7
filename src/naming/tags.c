/* tags.c: the class -> caption word table (tags.h), class probabilities -> tag words, tag words ->
 * vocabulary ids. */
#include "attncap/tags.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "attncap/tokenize.h"
#include "strmap.h"
#include "alloc_internal.h"

#define MAX_CLASSES 100000
#define MAX_FIELD 4096 /* bytes of a label, word or forms field */
#define MAX_FORM 256   /* bytes of one surface form */

typedef struct tag_word {
    char *word;
    long long count; /* the captions that say it (the count column of its first class) */
    int n_forms;
    char *forms[AC_TAG_MAX_FORMS];
} tag_word;

struct ac_tag_table {
    int n_classes, n_words;
    int *class_word; /* [n_classes], -1 = none */
    char **labels;   /* [n_classes] the classes' labels ("Egyptian cat") */
    tag_word *words;
    ac_strmap index; /* word -> index */
};

void ac_tag_table_free(ac_tag_table *t) {
    if (!t) return;
    for (int w = 0; w < t->n_words; w++) {
        free(t->words[w].word);
        for (int f = 0; f < t->words[w].n_forms; f++) free(t->words[w].forms[f]);
    }
    free(t->words);
    free(t->class_word);
    for (int c = 0; c < t->n_classes; c++) free(t->labels[c]);
    free(t->labels);
    ac_strmap_free(&t->index);
    free(t);
}

int ac_tag_table_classes(const ac_tag_table *t) { return t ? t->n_classes : 0; }
int ac_tag_table_words(const ac_tag_table *t) { return t ? t->n_words : 0; }
const char *ac_tag_class_label(const ac_tag_table *t, int cls) {
    return t && cls >= 0 && cls < t->n_classes ? t->labels[cls] : NULL;
}

int ac_tag_class_word(const ac_tag_table *t, int cls) {
    return t && cls >= 0 && cls < t->n_classes ? t->class_word[cls] : -1;
}

long long ac_tag_word_count(const ac_tag_table *t, int word) {
    return t && word >= 0 && word < t->n_words ? t->words[word].count : 0;
}

const char *ac_tag_word(const ac_tag_table *t, int word) {
    return t && word >= 0 && word < t->n_words ? t->words[word].word : NULL;
}

int ac_tag_word_forms(const ac_tag_table *t, int word, const char *const **forms) {
    if (!t || word < 0 || word >= t->n_words) return *forms = NULL, 0;
    *forms = (const char *const *)t->words[word].forms;
    return t->words[word].n_forms;
}

int ac_tag_word_index(const ac_tag_table *t, const char *word) {
    return t && word ? ac_strmap_get(&t->index, word) : -1;
}

/* Whether the tokens of form, split at single spaces, occur in order in tok[0..n). */
static int has_phrase(const ac_tokens *tok, const char *form) {
    char buf[MAX_FORM];
    snprintf(buf, sizeof buf, "%s", form);
    const char *part[AC_TAG_MAX_TOKENS];
    int np = 0;
    char *save = NULL;
    for (char *s = strtok_r(buf, " ", &save); s && np < AC_TAG_MAX_TOKENS; s = strtok_r(NULL, " ", &save)) part[np++] = s;
    for (int i = 0; np > 0 && i + np <= tok->n; i++) {
        int k = 0;
        while (k < np && !strcmp(tok->tok[i + k], part[k])) k++;
        if (k == np) return 1;
    }
    return 0;
}

int ac_tag_word_in_text(const ac_tag_table *t, int word, const char *text, ac_err *err) {
    if (!t || word < 0 || word >= t->n_words) return ac_errf(err, "tags: word index %d out of range", word);
    ac_tokens tok;
    if (ac_tokenize(text, &tok, err)) return -1;
    int found = 0;
    for (int f = 0; f < t->words[word].n_forms && !found; f++) found = has_phrase(&tok, t->words[word].forms[f]);
    ac_tokens_free(&tok);
    return found;
}

/* A phrase as the tokenizer writes them: tokens of printable non-space bytes, single spaces between. */
static int phrase_ok(const char *s, size_t n, int *tokens) {
    *tokens = n ? 1 : 0;
    if (n == 0 || n > MAX_FORM || s[0] == ' ' || s[n - 1] == ' ') return 0;
    for (size_t i = 0; i < n; i++) {
        unsigned char c = (unsigned char)s[i];
        if (c < 0x20 || c == 0x7f || c == '|') return 0;
        if (c == ' ' && (s[i + 1] == ' ' || ++*tokens > AC_TAG_MAX_TOKENS)) return 0;
    }
    return 1;
}

/* Adds one class line's word and forms; returns the word index or -1 (message in why). */
static int add_word(ac_tag_table *t, const char *word, size_t wl, const char *forms, size_t fl, long long count,
                    char *why, size_t whylen) {
    int toks;
    if (!phrase_ok(word, wl, &toks)) return snprintf(why, whylen, "word is not a phrase of at most %d tokens", AC_TAG_MAX_TOKENS), -1;
    char *w = ac_strndup(word, wl);
    if (!w) return snprintf(why, whylen, "out of memory"), -1;
    int idx = ac_strmap_get(&t->index, w);
    if (idx < 0) {
        tag_word *nw = ac_realloc(t->words, ((size_t)t->n_words + 1) * sizeof *nw);
        if (!nw || ac_strmap_put(&t->index, w, t->n_words) < 0) {
            if (nw) t->words = nw;
            free(w);
            return snprintf(why, whylen, "out of memory"), -1;
        }
        t->words = nw;
        idx = t->n_words++;
        memset(&t->words[idx], 0, sizeof t->words[idx]);
        t->words[idx].word = w, t->words[idx].count = count;
    } else {
        free(w);
    }
    tag_word *tw = &t->words[idx];
    int first = 1;
    for (const char *p = forms, *end = forms + fl; p <= end; first = 0) {
        const char *bar = memchr(p, '|', (size_t)(end - p));
        if (!bar) bar = end;
        size_t n = (size_t)(bar - p);
        if (!phrase_ok(p, n, &toks))
            return snprintf(why, whylen, "form '%.*s' is not a phrase of at most %d tokens", (int)(n < 60 ? n : 60), p,
                            AC_TAG_MAX_TOKENS), -1;
        if (first && (n != wl || memcmp(p, word, n)))
            return snprintf(why, whylen, "the first form is not the word itself"), -1;
        int dup = 0;
        for (int f = 0; f < tw->n_forms && !dup; f++) dup = strlen(tw->forms[f]) == n && !memcmp(tw->forms[f], p, n);
        if (!dup) {
            if (tw->n_forms == AC_TAG_MAX_FORMS) return snprintf(why, whylen, "more than %d forms", AC_TAG_MAX_FORMS), -1;
            if (!(tw->forms[tw->n_forms] = ac_strndup(p, n))) return snprintf(why, whylen, "out of memory"), -1;
            tw->n_forms++;
        }
        p = bar + 1;
    }
    return idx;
}

static int parse_line(ac_tag_table *t, const char *p, size_t n, char *why, size_t whylen) {
    const char *f[7];
    size_t fl[7];
    int nf = 0;
    for (const char *q = p, *end = p + n; nf < 7; nf++) {
        const char *tab = memchr(q, '\t', (size_t)(end - q));
        f[nf] = q, fl[nf] = (size_t)((tab ? tab : end) - q);
        if (fl[nf] > MAX_FIELD) return snprintf(why, whylen, "field %d longer than %d bytes", nf + 1, MAX_FIELD), -1;
        if (!tab) {
            nf++;
            break;
        }
        q = tab + 1;
    }
    if (nf < 6) return snprintf(why, whylen, "%d tab-separated fields, expected at least 6", nf), -1;
    /* index: the line's position among classes */
    long idx = 0;
    if (fl[0] == 0 || fl[0] > 6) return snprintf(why, whylen, "bad class index"), -1;
    for (size_t i = 0; i < fl[0]; i++) {
        if (f[0][i] < '0' || f[0][i] > '9') return snprintf(why, whylen, "bad class index"), -1;
        idx = idx * 10 + (f[0][i] - '0');
    }
    if (idx != t->n_classes) return snprintf(why, whylen, "class index %ld out of order (expected %d)", idx, t->n_classes), -1;
    if (t->n_classes >= MAX_CLASSES) return snprintf(why, whylen, "more than %d classes", MAX_CLASSES), -1;
    if (fl[1] && (fl[1] != 9 || f[1][0] != 'n' || strspn(f[1] + 1, "0123456789") < 8))
        return snprintf(why, whylen, "synset '%.*s' is not n + 8 digits", (int)(fl[1] < 20 ? fl[1] : 20), f[1]), -1;
    for (size_t i = 0; i < fl[4]; i++)
        if (f[4][i] < '0' || f[4][i] > '9' || fl[4] > 12) return snprintf(why, whylen, "bad count"), -1;
    if (fl[4] == 0) return snprintf(why, whylen, "bad count"), -1;
    long long count = 0;
    for (size_t i = 0; i < fl[4]; i++) count = count * 10 + (f[4][i] - '0');
    if ((fl[3] == 0) != (fl[5] == 0)) return snprintf(why, whylen, "a word needs forms and forms need a word"), -1;
    int w = -1;
    if (fl[3] && (w = add_word(t, f[3], fl[3], f[5], fl[5], count, why, whylen)) < 0) return -1;
    int *cw = ac_realloc(t->class_word, ((size_t)t->n_classes + 1) * sizeof *cw);
    if (cw) t->class_word = cw;
    char **lb = ac_realloc(t->labels, ((size_t)t->n_classes + 1) * sizeof *lb);
    if (lb) t->labels = lb;
    char *label = cw && lb ? ac_strndup(f[2], fl[2]) : NULL;
    if (!label) return snprintf(why, whylen, "out of memory"), -1;
    lb[t->n_classes] = label;
    cw[t->n_classes++] = w;
    return 0;
}

int ac_tag_table_parse(const char *data, size_t len, const char *name, ac_tag_table **out, ac_err *err) {
    *out = NULL;
    ac_tag_table *t = ac_calloc(1, sizeof *t);
    if (!t) return ac_errf(err, "out of memory");
    int line = 0;
    char why[200];
    for (const char *p = data, *end = data + len; p < end; line++) {
        const char *nl = memchr(p, '\n', (size_t)(end - p));
        size_t n = (size_t)((nl ? nl : end) - p);
        const char *next = nl ? nl + 1 : end;
        if (n && p[n - 1] == '\r') n--;
        if (memchr(p, 0, n)) {
            ac_tag_table_free(t);
            return ac_errf(err, "%s:%d: NUL byte", name, line + 1);
        }
        if (n && p[0] != '#' && parse_line(t, p, n, why, sizeof why)) {
            ac_tag_table_free(t);
            return ac_errf(err, "%s:%d: %s", name, line + 1, why);
        }
        p = next;
    }
    if (t->n_classes == 0) {
        ac_tag_table_free(t);
        return ac_errf(err, "%s: no classes", name);
    }
    *out = t;
    return 0;
}

int ac_tag_table_load(const char *path, ac_tag_table **t, ac_err *err) {
    char *data;
    size_t len;
    *t = NULL;
    if (ac_read_file(path, 64u << 20, &data, &len, err)) return -1;
    int rc = ac_tag_table_parse(data, len, path, t, err);
    free(data);
    return rc;
}

static int tag_cmp(const void *a, const void *b) {
    const ac_tag *x = a, *y = b;
    if (x->prob != y->prob) return x->prob > y->prob ? -1 : 1;
    return (x->word > y->word) - (x->word < y->word);
}

int ac_tags_from_probs(const ac_tag_table *t, const float *probs, int n_rows, int n_classes, float threshold,
                       ac_tag *out, int cap, ac_err *err) {
    if (n_classes != t->n_classes)
        return ac_errf(err, "tags: %d class probabilities, the table has %d classes", n_classes, t->n_classes);
    if (n_rows < 1) return ac_errf(err, "tags: no rows of probabilities");
    float *best = ac_calloc((size_t)t->n_words + 1, sizeof *best), *row = ac_calloc((size_t)t->n_words + 1, sizeof *row);
    ac_tag *all = ac_malloc(((size_t)t->n_words + 1) * sizeof *all);
    if (!best || !row || !all) {
        free(best), free(row), free(all);
        return ac_errf(err, "out of memory");
    }
    for (int r = 0; r < n_rows; r++) {
        memset(row, 0, (size_t)t->n_words * sizeof *row);
        const float *p = probs + (size_t)r * n_classes;
        for (int c = 0; c < n_classes; c++)
            if (t->class_word[c] >= 0) row[t->class_word[c]] += p[c];
        for (int w = 0; w < t->n_words; w++) best[w] = row[w] > best[w] ? row[w] : best[w];
    }
    int n = 0;
    for (int w = 0; w < t->n_words; w++)
        if (best[w] >= threshold && best[w] > 0) all[n++] = (ac_tag){w, best[w]};
    qsort(all, (size_t)n, sizeof *all, tag_cmp);
    if (n > cap) n = cap < 0 ? 0 : cap;
    if (n) memcpy(out, all, (size_t)n * sizeof *all);
    free(best), free(row), free(all);
    return n;
}

int ac_tags_to_ids(const ac_tag_table *t, const ac_vocab *v, const ac_tag *tags, int n_tags, ac_tag_ids *out,
                   int *dropped, int *n_dropped, ac_err *err) {
    int n = 0, nd = 0;
    for (int k = 0; k < n_tags; k++) {
        const int w = tags[k].word;
        if (w < 0 || w >= t->n_words) return ac_errf(err, "tags: word index %d out of range (%d words)", w, t->n_words);
        ac_tag_ids *o = &out[n];
        o->word = w, o->prob = tags[k].prob, o->n_alts = 0;
        const tag_word *tw = &t->words[w];
        for (int f = 0; f < tw->n_forms; f++) {
            ac_tag_alt alt = {0};
            int ok = 1;
            char tok[MAX_FORM + 1];
            for (const char *p = tw->forms[f]; ok && *p;) {
                size_t l = strcspn(p, " ");
                memcpy(tok, p, l);
                tok[l] = 0;
                int id = ac_vocab_id(v, tok);
                ok = id > AC_UNK && alt.n < AC_TAG_MAX_TOKENS; /* not <unk>, nor <pad> <start> <end> written out */
                if (ok) alt.ids[alt.n++] = id;
                p += l + (p[l] == ' ');
            }
            if (ok && alt.n > 0) o->alts[o->n_alts++] = alt;
        }
        if (o->n_alts) n++;
        else if (dropped) dropped[nd++] = k;
        else nd++;
    }
    if (n_dropped) *n_dropped = nd;
    return n;
}
