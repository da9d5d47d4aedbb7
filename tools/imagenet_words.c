/* imagenet_words: for each ImageNet class, the word or phrase captions use for it, found through
 * WordNet's hypernyms and counted in caption corpora. Writes the table src/naming/tags.c loads
 * (models/imagenet_words.tsv; `make imagenet-words`).
 *
 *   imagenet_words --synsets imagenet_synsets.txt [--wordnet /usr/share/wordnet] [--min-count 20]
 *                  [--lambda 1.25] [--max-sense 3] --out FILE CORPUS...
 *
 * CORPUS: anything ac_dataset_load reads (a Flickr8k directory, COCO captions .json, a .tsv of
 * name<TAB>caption). Captions are tokenized as for training (ac_tokenize).
 *
 * The walk: breadth-first from the class's synset up its hypernyms (@ and @i in data.noun), each
 * synset at its shortest distance d. A synset's count is that of its most used lemma; a lemma's count
 * is how often its singular or plural appears as a token sequence in the captions. Among the synsets
 * whose count is at least --min-count and whose lemma is not too generic (GENERIC below), the choice
 * maximises ln(count) - lambda * d: the most specific name unless a nearby ancestor is used far more
 * often (Egyptian cat -> cat, golden retriever -> dog, but hot dog stays hot dog, lion stays lion
 * rather than animal). That is Ordonez et al. 2013's "entry-level category" trade-off between
 * naturalness and semantic distance, with caption counts for naturalness. One more rule: the walk
 * keeps an object. Once a candidate's forms (its lemmas captions use) name one of COCO's 80
 * categories (objects.h: toilet seat -> toilet), the ancestors whose forms do not name it are no
 * longer candidates, however much more captions use them ("seat" would lose the toilet the photo
 * shows; "motorcycle, bike" keeps a moped's motorcycle). No candidate: no word. */
#include <ctype.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "attncap/common.h"
#include "attncap/dataset.h"
#include "attncap/objects.h"
#include "attncap/tokenize.h"
#include "strmap.h"

#define MAX_NODES 256  /* synsets visited per class */
#define MAX_LEMMAS 64  /* per synset */
#define MAX_HYPER 16   /* hypernyms per synset */
#define MAX_TOKENS 6   /* longest phrase counted */

/* Names too general to tell a caption anything (lemmas, after tokenization). */
static const char *const GENERIC[] = {
    "entity", "physical entity", "object", "physical object", "whole", "unit", "artifact", "artefact",
    "instrumentality", "instrumentation", "organism", "being", "living thing", "animate thing", "thing",
    "matter", "substance", "part", "portion", "abstraction", "device", "equipment", "article", "commodity",
    "goods", "material", "stuff", "structure", "construction", "container", "covering", "implement",
    "system", "group", "causal agent", "cause", "agent", "vertebrate", "chordate", "invertebrate", "creation",
    "fixing", "protection", "piece", "instrument", "vehicle", "craft", "conveyance", "transport", "shelter",
    "furnishing", "arm", "pattern", "bar", "outfit",
    "barrier", "obstruction", /* a jetty, a dam, a grille and a sandbar are not what captions call a barrier */
    "animal", /* kingdom level: the ~110 classes that reach it are species captions never name */
};

/* Lemmas whose caption count belongs to another sense, ignored in one synset (kept tiny; each entry
 * says why). */
static const struct {
    long synset;
    const char *lemma, *why;
} EXCEPTIONS[] = {
    {2127808, "cat", "big cat: 'cat' in captions is the house cat (lion, tiger, leopard... would all become cat)"},
    {1608432, "kite", "the bird of prey: 'kite' in captions is the toy flown on a string (an eagle would become a kite)"},
    {0, NULL, NULL},
};

/* Classes whose WordNet hypernyms miss what ImageNet's photos of them show: the word is given. */
static const struct {
    const char *cls, *word, *why;
} FORCED[] = {
    {"n01871265", "elephant", "tusker: WordNet's only hypernym is mammal, but ImageNet's tusker photos are elephants"},
    {NULL, NULL, NULL},
};

static int is_exception(long synset, const char *lemma) {
    for (size_t e = 0; EXCEPTIONS[e].lemma; e++)
        if (EXCEPTIONS[e].synset == synset && !strcmp(EXCEPTIONS[e].lemma, lemma)) return 1;
    return 0;
}

typedef struct synset {
    long offset;
    int n_lemmas, n_hyper;
    char *lemmas[MAX_LEMMAS]; /* tokenized, joined by spaces, lowercase */
    int rank[MAX_LEMMAS];     /* this synset's sense number among the lemma's noun senses (1 = most frequent) */
    int plural[MAX_LEMMAS];   /* the lemma is itself a plural ("cows" of cattle): no plural of it */
    long hyper[MAX_HYPER];
} synset;

typedef struct node {
    long offset;
    int depth;
} node;

typedef struct wordnet {
    char *data; /* data.noun */
    size_t len;
    ac_strmap index; /* lowercase lemma (underscores) -> its line in index.noun */
    char *index_data;
    size_t index_len;
    char **index_lines;
    int n_index;
} wordnet;

/* Sense number of synset `off` among lemma's noun senses (index.noun lists them most frequent first),
 * or 99 if not found. */
static int sense_rank(const wordnet *wn, const char *lemma, long off) {
    int i = ac_strmap_get(&wn->index, lemma);
    if (i < 0) return 99;
    char *save = NULL, *line = strdup(wn->index_lines[i]);
    if (!line) return 99;
    strtok_r(line, " ", &save);                          /* lemma */
    strtok_r(NULL, " ", &save);                          /* pos */
    char *t = strtok_r(NULL, " ", &save);                /* synset_cnt */
    int n_syn = t ? atoi(t) : 0, rank = 99;
    t = strtok_r(NULL, " ", &save);                      /* p_cnt */
    int p_cnt = t ? atoi(t) : 0;
    for (int k = 0; k < p_cnt + 2; k++) strtok_r(NULL, " ", &save); /* pointer symbols, sense_cnt, tagsense_cnt */
    for (int k = 0; k < n_syn && rank == 99; k++) {
        t = strtok_r(NULL, " ", &save);
        if (!t) break;
        if (strtol(t, NULL, 10) == off) rank = k + 1;
    }
    free(line);
    return rank;
}

static int load_index(wordnet *wn, const char *path, ac_err *err) {
    if (ac_read_file(path, 64u << 20, &wn->index_data, &wn->index_len, err)) return -1;
    int cap = 0;
    for (char *p = wn->index_data, *e; p < wn->index_data + wn->index_len; p = e + 1) {
        e = memchr(p, '\n', (size_t)(wn->index_data + wn->index_len - p));
        if (!e) e = wn->index_data + wn->index_len;
        *e = 0;
        if (*p == ' ' || !*p) continue; /* the licence header */
        char *sp = strchr(p, ' ');
        if (!sp) continue;
        if (wn->n_index == cap) {
            cap = cap ? 2 * cap : 1 << 16;
            char **l = realloc(wn->index_lines, (size_t)cap * sizeof *l);
            if (!l) return ac_errf(err, "out of memory");
            wn->index_lines = l;
        }
        *sp = 0;
        int r = ac_strmap_put(&wn->index, p, wn->n_index);
        *sp = ' ';
        if (r == -2) return ac_errf(err, "out of memory");
        wn->index_lines[wn->n_index++] = p;
    }
    return 0;
}

typedef struct counts {
    ac_strmap map; /* phrase -> index */
    long *n;       /* per index */
    int size, cap, max_tokens;
} counts;

static int is_generic(const char *w) {
    for (size_t i = 0; i < sizeof GENERIC / sizeof *GENERIC; i++)
        if (!strcmp(GENERIC[i], w)) return 1;
    return 0;
}

/* Whether lemma l of s may name a class at distance d: not generic, not an exception, and one of the
 * lemma's max_sense most frequent senses (else its caption count belongs to another sense: "piece"
 * of firearm, "game" of game bird, "wood" of woodwind, "cat" of big cat); the class's own synset
 * (d = 0) is trusted further, up to CLASS_MAX_SENSE ("mouse" of computer mouse is sense 4, but not
 * "board" of dining table, sense 6). */
#define CLASS_MAX_SENSE 4
static int usable(const synset *s, int l, int d, int max_sense) {
    return !is_generic(s->lemmas[l]) && !is_exception(s->offset, s->lemmas[l]) &&
           s->rank[l] <= (d == 0 ? (max_sense > CLASS_MAX_SENSE ? max_sense : CLASS_MAX_SENSE) : max_sense);
}

/* ---- a simple English pluralizer (the last word of a phrase) ---- */

static const char *const IRREGULAR[][2] = {
    {"man", "men"}, {"woman", "women"}, {"child", "children"}, {"person", "people"}, {"foot", "feet"},
    {"tooth", "teeth"}, {"goose", "geese"}, {"mouse", "mice"}, {"louse", "lice"}, {"ox", "oxen"},
    {"sheep", "sheep"}, {"fish", "fish"}, {"deer", "deer"}, {"moose", "moose"}, {"bison", "bison"},
    {"salmon", "salmon"}, {"trout", "trout"}, {"aircraft", "aircraft"}, {"species", "species"},
    {"series", "series"}, {"cattle", "cattle"}, {"police", "police"}, {"clothes", "clothes"}, {"knife", "knives"}, {"wife", "wives"}, {"life", "lives"}, {"leaf", "leaves"},
    {"loaf", "loaves"}, {"wolf", "wolves"}, {"calf", "calves"}, {"half", "halves"}, {"shelf", "shelves"},
    {"thief", "thieves"}, {"scarf", "scarves"}, {"hoof", "hooves"}, {"potato", "potatoes"},
    {"tomato", "tomatoes"}, {"hero", "heroes"}, {"volcano", "volcanoes"}, {"mosquito", "mosquitoes"},
    {"torpedo", "torpedoes"}, {"cactus", "cacti"}, {"human", "humans"}, {"german", "germans"},
};

/* out: the plural of phrase (capacity cap). */
static void pluralize(const char *phrase, char *out, size_t cap) {
    const char *last = strrchr(phrase, ' ');
    last = last ? last + 1 : phrase;
    size_t head = (size_t)(last - phrase), n = strlen(last);
    for (size_t i = 0; i < sizeof IRREGULAR / sizeof *IRREGULAR; i++)
        if (!strcmp(last, IRREGULAR[i][0])) {
            snprintf(out, cap, "%.*s%s", (int)head, phrase, IRREGULAR[i][1]);
            return;
        }
    if (n > 3 && !strcmp(last + n - 3, "man")) { /* fireman -> firemen, snowman -> snowmen */
        snprintf(out, cap, "%.*sen", (int)(head + n - 2), phrase);
        return;
    }
    char prev = n >= 2 ? last[n - 2] : 0, end = n ? last[n - 1] : 0;
    if (end == 's' || end == 'x' || end == 'z' || (n >= 2 && (!strcmp(last + n - 2, "ch") || !strcmp(last + n - 2, "sh"))))
        snprintf(out, cap, "%ses", phrase);
    else if (end == 'y' && prev && !strchr("aeiou", prev))
        snprintf(out, cap, "%.*sies", (int)(head + n - 1), phrase);
    else
        snprintf(out, cap, "%ss", phrase);
}

/* Whether lemma (WordNet spelling, '_' between words) is the plural of another noun lemma
 * ("cows" -> "cow"): then its own plural would be nonsense ("cowses"). */
static int is_plural(const wordnet *wn, const char *lemma) {
    size_t n = strlen(lemma);
    char cand[512], pl[520];
    if (n < 3 || n >= sizeof cand || lemma[n - 1] != 's' || lemma[n - 2] == 's') return 0;
    for (int strip = 1; strip <= 3; strip++) {
        if ((size_t)strip >= n) break;
        snprintf(cand, sizeof cand, "%.*s%s", (int)(n - (size_t)strip), lemma, strip == 3 ? "y" : "");
        if (strip == 3 && strcmp(lemma + n - 3, "ies")) continue;
        pluralize(cand, pl, sizeof pl);
        if (!strcmp(pl, lemma) && ac_strmap_get(&wn->index, cand) >= 0) return 1;
    }
    return 0;
}

/* ---- WordNet data.noun ---- */

/* Parses the synset at byte offset `off` of data.noun. */
static int parse_synset(const wordnet *wn, long off, synset *s, ac_err *err) {
    memset(s, 0, sizeof *s);
    s->offset = off;
    if (off < 0 || (size_t)off + 20 > wn->len || (off > 0 && wn->data[off - 1] != '\n') || strtol(wn->data + off, NULL, 10) != off)
        return ac_errf(err, "no synset at offset %08ld", off);
    const char *p = wn->data + off, *end = memchr(p, '\n', wn->len - (size_t)off);
    if (!end) end = wn->data + wn->len;
    char *line = strndup(p, (size_t)(end - p)), *save = NULL;
    if (!line) return ac_errf(err, "out of memory");
    char *tok = strtok_r(line, " ", &save); /* offset */
    strtok_r(NULL, " ", &save);             /* lex_filenum */
    strtok_r(NULL, " ", &save);             /* ss_type */
    tok = strtok_r(NULL, " ", &save);
    int w_cnt = tok ? (int)strtol(tok, NULL, 16) : -1;
    if (w_cnt < 1 || w_cnt > 255) {
        free(line);
        return ac_errf(err, "synset %08ld: bad word count", off);
    }
    for (int k = 0; k < w_cnt; k++) {
        char *w = strtok_r(NULL, " ", &save);
        strtok_r(NULL, " ", &save); /* lex_id */
        if (!w) break;
        if (s->n_lemmas == MAX_LEMMAS) continue;
        for (char *c = w; *c; c++) *c = (char)tolower((unsigned char)*c);
        size_t wl = strlen(w);
        if (wl > 3 && w[wl - 1] == ')' && strchr(w, '(')) *strrchr(w, '(') = 0; /* adjective markers */
        int rank = sense_rank(wn, w, off), plural = is_plural(wn, w);
        for (char *c = w; *c; c++) *c = *c == '_' ? ' ' : *c;
        ac_tokens t = {0};
        if (ac_tokenize(w, &t, err) == 0 && t.n > 0) {
            char *j = ac_tokens_join(&t);
            int dup = 0;
            for (int q = 0; q < s->n_lemmas && j && !dup; q++) dup = !strcmp(s->lemmas[q], j);
            if (j && !dup) s->rank[s->n_lemmas] = rank, s->plural[s->n_lemmas] = plural, s->lemmas[s->n_lemmas++] = j;
            else free(j);
        }
        ac_tokens_free(&t);
    }
    tok = strtok_r(NULL, " ", &save);
    int p_cnt = tok ? atoi(tok) : 0;
    for (int k = 0; k < p_cnt; k++) {
        char *sym = strtok_r(NULL, " ", &save), *to = strtok_r(NULL, " ", &save), *pos = strtok_r(NULL, " ", &save);
        strtok_r(NULL, " ", &save); /* source/target */
        if (!sym || !to || !pos) break;
        if ((!strcmp(sym, "@") || !strcmp(sym, "@i")) && !strcmp(pos, "n") && s->n_hyper < MAX_HYPER)
            s->hyper[s->n_hyper++] = strtol(to, NULL, 10);
    }
    free(line);
    return 0;
}

static void synset_free(synset *s) {
    for (int k = 0; k < s->n_lemmas; k++) free(s->lemmas[k]);
    s->n_lemmas = 0;
}

/* Breadth-first up the hypernyms: nodes in order of distance. */
static int walk(const wordnet *wn, long start, node *nodes, int *n, ac_err *err) {
    *n = 0;
    nodes[(*n)++] = (node){start, 0};
    for (int q = 0; q < *n; q++) {
        synset s;
        if (parse_synset(wn, nodes[q].offset, &s, err)) return -1;
        for (int h = 0; h < s.n_hyper && *n < MAX_NODES; h++) {
            int seen = 0;
            for (int k = 0; k < *n && !seen; k++) seen = nodes[k].offset == s.hyper[h];
            if (!seen) nodes[(*n)++] = (node){s.hyper[h], nodes[q].depth + 1};
        }
        synset_free(&s);
    }
    return 0;
}

/* ---- phrase counts ---- */

static int count_add(counts *c, const char *phrase) {
    int i = ac_strmap_get(&c->map, phrase);
    if (i >= 0) return 0;
    if (c->size == c->cap) {
        c->cap = c->cap ? 2 * c->cap : 4096;
        long *n = realloc(c->n, (size_t)c->cap * sizeof *n);
        if (!n) return -1;
        c->n = n;
    }
    if (ac_strmap_put(&c->map, phrase, c->size) < 0) return -1;
    c->n[c->size++] = 0;
    int words = 1;
    for (const char *p = phrase; *p; p++) words += *p == ' ';
    if (words > c->max_tokens) c->max_tokens = words;
    return 0;
}

static long count_of(const counts *c, const char *phrase) {
    int i = ac_strmap_get(&c->map, phrase);
    return i >= 0 ? c->n[i] : 0;
}

/* Singular + plural occurrences of a lemma (a plural lemma: its own). */
static long lemma_count(const counts *c, const char *lemma, int plural) {
    char pl[512];
    pluralize(lemma, pl, sizeof pl);
    return count_of(c, lemma) + (!plural && strcmp(pl, lemma) ? count_of(c, pl) : 0);
}

/* Whether lemma l of s (top: its most used one, the word) is among the forms the table lists for it. */
static int listed_form(const synset *s, int l, int top, int depth, int max_sense, const counts *cnt, long min_count) {
    return l == top || (usable(s, l, depth, max_sense) && lemma_count(cnt, s->lemmas[l], s->plural[l]) >= min_count);
}

/* Each caption is cut greedily into the longest registered phrases: "traffic light" counts for
 * itself, not for "light" (the head word of a compound is not a use of the word alone). */
static int count_corpus(counts *c, const char *spec, long *n_caps, ac_err *err) {
    ac_dataset ds;
    if (ac_dataset_load(spec, NULL, &ds, err)) return -1;
    char buf[4096];
    for (int i = 0; i < ds.n; i++)
        for (int k = 0; k < ds.images[i].n_caps; k++) {
            ac_tokens t = {0};
            if (ac_tokenize(ds.images[i].caps[k], &t, err)) continue; /* a bad caption is skipped */
            (*n_caps)++;
            for (int a = 0; a < t.n;) { /* the longest registered phrase at a counts, alone */
                size_t len = 0;
                int found = -1, found_len = 1;
                for (int b = a; b < t.n && b - a < c->max_tokens; b++) {
                    size_t l = strlen(t.tok[b]);
                    if (len + l + 2 > sizeof buf) break;
                    if (b > a) buf[len++] = ' ';
                    memcpy(buf + len, t.tok[b], l + 1);
                    len += l;
                    int idx = ac_strmap_get(&c->map, buf);
                    if (idx >= 0) found = idx, found_len = b - a + 1;
                }
                if (found >= 0) c->n[found]++;
                a += found_len;
            }
            ac_tokens_free(&t);
        }
    ac_dataset_free(&ds);
    return 0;
}

/* ---- the table ---- */

typedef struct cls {
    char id[16];   /* "n02124075", "" for background */
    char *label;
    node nodes[MAX_NODES];
    int n_nodes;
} cls;

static int read_synsets(const char *path, cls **out, int *n, ac_err *err) {
    char *data;
    size_t len;
    *out = NULL, *n = 0;
    if (ac_read_file(path, 16u << 20, &data, &len, err)) return -1;
    int cap = 0, line = 0;
    for (char *p = data, *e; p < data + len; p = e + 1, line++) {
        e = memchr(p, '\n', (size_t)(data + len - p));
        if (!e) e = data + len;
        *e = 0;
        if (e > p && e[-1] == '\r') e[-1] = 0;
        if (*n == cap) {
            cap = cap ? 2 * cap : 1024;
            cls *c = realloc(*out, (size_t)cap * sizeof *c);
            if (!c) break;
            *out = c;
        }
        cls *c = &(*out)[(*n)++];
        memset(c, 0, sizeof *c);
        char *tab = strchr(p, '\t');
        if (tab) {
            *tab = 0;
            if (strlen(p) != 9 || p[0] != 'n' || strspn(p + 1, "0123456789") != 8) {
                ac_errf(err, "%s:%d: '%.20s' is not a WordNet noun synset id (n + 8 digits)", path, line + 1, p);
                free(data);
                return -1;
            }
            snprintf(c->id, sizeof c->id, "%s", p);
            c->label = strdup(tab + 1);
        } else {
            c->label = strdup(p);
        }
    }
    free(data);
    return 0;
}

static void usage(FILE *f) {
    fprintf(f, "usage: imagenet_words --synsets FILE [--wordnet DIR] [--min-count N] [--lambda L] [--max-sense K] --out FILE CORPUS...\n"
               "ImageNet class -> caption word through WordNet hypernyms and caption counts (see tools/imagenet_words.c).\n");
}

int main(int argc, char **argv) {
    const char *syn_path = NULL, *wn_dir = "/usr/share/wordnet", *out_path = NULL;
    long min_count = 20;
    double lambda = 1.25;
    int max_sense = 3;
    const char *corpora[32];
    int n_corpora = 0;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (!strcmp(a, "--help") || !strcmp(a, "-h")) return usage(stdout), 0;
        else if (!strcmp(a, "--synsets") && v) syn_path = v, i++;
        else if (!strcmp(a, "--wordnet") && v) wn_dir = v, i++;
        else if (!strcmp(a, "--out") && v) out_path = v, i++;
        else if (!strcmp(a, "--min-count") && v) min_count = atol(v), i++;
        else if (!strcmp(a, "--lambda") && v) lambda = atof(v), i++;
        else if (!strcmp(a, "--max-sense") && v) max_sense = atoi(v), i++;
        else if (a[0] == '-') return fprintf(stderr, "imagenet_words: unknown option %s\n", a), usage(stderr), 2;
        else if (n_corpora < 32) corpora[n_corpora++] = a;
    }
    if (!syn_path || !out_path || n_corpora == 0 || min_count < 1 || !(lambda >= 0))
        return usage(stderr), 2;
    ac_err err;
    wordnet wn = {0};
    cls *classes = NULL;
    int n_cls = 0, rc = 1;
    counts cnt = {0};
    char *wn_path = ac_path_join(wn_dir, "data.noun");
    char *ix_path = ac_path_join(wn_dir, "index.noun");
    int ix_bad = !ix_path || load_index(&wn, ix_path, &err);
    free(ix_path);
    if (ix_bad || !wn_path || ac_read_file(wn_path, 64u << 20, &wn.data, &wn.len, &err)) goto fail;
    if (read_synsets(syn_path, &classes, &n_cls, &err)) goto fail;
    /* 1. walk every class; register every lemma on the way, singular and plural */
    for (int i = 0; i < n_cls; i++) {
        cls *c = &classes[i];
        if (!c->id[0]) continue;
        if (walk(&wn, strtol(c->id + 1, NULL, 10), c->nodes, &c->n_nodes, &err)) {
            ac_err_prefix(&err, "%s (class %d)", wn_path, i);
            goto fail;
        }
        for (int k = 0; k < c->n_nodes; k++) {
            synset s;
            if (parse_synset(&wn, c->nodes[k].offset, &s, &err)) goto fail;
            for (int l = 0; l < s.n_lemmas; l++) {
                char pl[512];
                pluralize(s.lemmas[l], pl, sizeof pl);
                if (count_add(&cnt, s.lemmas[l]) || count_add(&cnt, pl)) {
                    ac_errf(&err, "out of memory");
                    synset_free(&s);
                    goto fail;
                }
            }
            synset_free(&s);
        }
    }
    if (cnt.max_tokens > MAX_TOKENS) cnt.max_tokens = MAX_TOKENS;
    /* 2. count them in the captions */
    long n_caps = 0;
    for (int k = 0; k < n_corpora; k++)
        if (count_corpus(&cnt, corpora[k], &n_caps, &err)) goto fail;
    /* 3. choose, write */
    size_t cap = 1 << 20, len = 0;
    char *out = malloc(cap);
    if (!out) goto oom;
#define EMIT(...)                                                                        \
    do {                                                                                 \
        int w_ = snprintf(out + len, cap - len, __VA_ARGS__);                            \
        if (w_ < 0) goto oom;                                                            \
        while ((size_t)w_ >= cap - len) {                                                \
            char *o_ = realloc(out, cap *= 2);                                           \
            if (!o_) goto oom;                                                           \
            out = o_;                                                                    \
            w_ = snprintf(out + len, cap - len, __VA_ARGS__);                            \
        }                                                                                \
        len += (size_t)w_;                                                               \
    } while (0)
    EMIT("# imagenet_words.tsv: ImageNet class -> the word captions use for it (generated by tools/imagenet_words.c; `make imagenet-words`)\n");
    EMIT("# WordNet 3.0 hypernym walk, counts in %ld captions of %d corpora, min-count %ld, lambda %g, max-sense %d\n",
         n_caps, n_corpora, min_count, lambda, max_sense);
    EMIT("# index\tsynset\tlabel\tword\tcount\tforms\tpath (distance:lemma=count, breadth-first)\n");
    int n_words = 0;
    for (int i = 0; i < n_cls; i++) {
        cls *c = &classes[i];
        char *label = c->label ? c->label : "";
        for (char *t = label; *t; t++) *t = *t == '\t' ? ' ' : *t;
        int best = -1, best_lemma = -1;
        double best_score = -1e300;
        long best_count = 0;
        char path[8192] = "";
        size_t pl = 0;
        synset chosen = {0};
        uint8_t kept[AC_N_OBJECTS] = {0}; /* the categories the nearest candidate naming one names */
        int keeping = 0;
        for (int k = 0; k < c->n_nodes; k++) {
            synset s;
            if (parse_synset(&wn, c->nodes[k].offset, &s, &err)) goto fail;
            int top = -1;
            long top_n = -1;
            for (int l = 0; l < s.n_lemmas; l++) {
                long n = usable(&s, l, c->nodes[k].depth, max_sense) ? lemma_count(&cnt, s.lemmas[l], s.plural[l]) : -1;
                if (n > top_n) top = l, top_n = n;
            }
            if (pl < sizeof path - 256)
                pl += (size_t)snprintf(path + pl, sizeof path - pl, "%s%d:%s=%ld", k ? " " : "", c->nodes[k].depth,
                                       top >= 0 ? s.lemmas[top] : "?", top_n < 0 ? 0 : top_n);
            int eligible = top_n >= min_count;
            if (eligible) { /* the walk keeps an object (the header comment) */
                uint8_t names[AC_N_OBJECTS] = {0}, one[AC_N_OBJECTS];
                int n_named = 0;
                for (int l = 0; l < s.n_lemmas; l++)
                    if (listed_form(&s, l, top, c->nodes[k].depth, max_sense, &cnt, min_count)) {
                        ac_objects_in_tokens(s.lemmas[l], one);
                        for (int o = 0; o < AC_N_OBJECTS; o++) n_named += one[o] && !names[o], names[o] |= one[o];
                    }
                for (int o = 0; keeping && o < AC_N_OBJECTS; o++)
                    if (kept[o] && !names[o]) eligible = 0;
                if (!keeping && n_named > 0) memcpy(kept, names, sizeof kept), keeping = 1;
            }
            double score = eligible ? log((double)top_n) - lambda * c->nodes[k].depth : -1e300;
            if (eligible && score > best_score) {
                synset_free(&chosen);
                chosen = s;
                best = k, best_lemma = top, best_score = score, best_count = top_n;
            } else {
                synset_free(&s);
            }
        }
        EMIT("%d\t%s\t%s\t", i, c->id, label);
        const char *forced = NULL;
        for (int e = 0; FORCED[e].cls; e++)
            if (!strcmp(FORCED[e].cls, c->id)) forced = FORCED[e].word;
        if (forced) {
            char plw[512];
            pluralize(forced, plw, sizeof plw);
            EMIT("%s\t%ld\t%s|%s", forced, lemma_count(&cnt, forced, 0), forced, plw);
            n_words++;
        } else if (best >= 0) {
            const char *w = chosen.lemmas[best_lemma];
            char plw[512];
            pluralize(w, plw, sizeof plw);
            EMIT("%s\t%ld\t%s", w, best_count, w);
            if (!chosen.plural[best_lemma] && strcmp(plw, w)) EMIT("|%s", plw);
            for (int l = 0; l < chosen.n_lemmas; l++) { /* the synset's other lemmas captions use */
                if (l == best_lemma || !listed_form(&chosen, l, best_lemma, c->nodes[best].depth, max_sense, &cnt, min_count)) continue;
                pluralize(chosen.lemmas[l], plw, sizeof plw);
                EMIT("|%s", chosen.lemmas[l]);
                if (!chosen.plural[l] && strcmp(plw, chosen.lemmas[l])) EMIT("|%s", plw);
            }
            n_words++;
        } else {
            EMIT("\t0\t");
        }
        EMIT("\t%s\n", path);
        synset_free(&chosen);
    }
    if (ac_write_file_atomic(out_path, out, len, &err)) {
        free(out);
        goto fail;
    }
    free(out);
    fprintf(stderr, "imagenet_words: %s: %d classes, %d with a word; %ld captions counted\n", out_path, n_cls - 1, n_words,
            n_caps);
    rc = 0;
    goto done;
oom:
    ac_errf(&err, "out of memory");
fail:
    fprintf(stderr, "imagenet_words: %s\n", err.msg);
done:
    for (int i = 0; i < n_cls; i++) free(classes[i].label);
    free(classes);
    free(wn.data);
    free(wn.index_data);
    free(wn.index_lines);
    ac_strmap_free(&wn.index);
    free(wn_path);
    free(cnt.n);
    ac_strmap_free(&cnt.map);
    return rc;
}
