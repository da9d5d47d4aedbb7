/* vocab.c: word <-> id (see vocab.h). */
#include "attncap/vocab.h"

#include <cjson/cJSON.h>
#include <stdlib.h>
#include <string.h>

#include "strmap.h"
#include "alloc_internal.h"

static const char *const SPECIALS[4] = {"<pad>", "<start>", "<end>", "<unk>"};

struct ac_vocab {
    int n;
    char **words;
    ac_strmap index;
};

typedef struct { const char *w; int count; } wc;

static int by_count(const void *a, const void *b) {
    const wc *x = a, *y = b;
    if (x->count != y->count) return x->count > y->count ? -1 : 1;
    return strcmp(x->w, y->w);
}

static int vocab_add(ac_vocab *v, const char *w, ac_err *err) {
    char *d = ac_strdup(w);
    if (!d || ac_strmap_put(&v->index, w, v->n) == -2) { free(d); return ac_errf(err, "vocabulary: out of memory"); }
    v->words[v->n++] = d;
    return 0;
}

int ac_vocab_build(const ac_tokens *caps, int n_caps, int min_count, ac_vocab **out, ac_err *err) {
    *out = NULL;
    ac_strmap counts = {0};
    int n_words = 0, cap = 0;
    int *cnt = NULL;
    char **wl = NULL;
    for (int c = 0; c < n_caps; c++)
        for (int i = 0; i < caps[c].n; i++) {
            const char *w = caps[c].tok[i];
            int id = ac_strmap_get(&counts, w);
            if (id < 0) {
                if (n_words == cap) {
                    cap = cap ? cap * 2 : 1024;
                    int *nc = ac_realloc(cnt, (size_t)cap * sizeof *nc);
                    if (nc) cnt = nc;
                    char **nw = ac_realloc(wl, (size_t)cap * sizeof *nw);
                    if (nw) wl = nw;
                    if (!nc || !nw) goto oom;
                }
                id = ac_strmap_put(&counts, w, n_words);
                if (id < 0) goto oom;
                wl[n_words] = (char *)w;
                cnt[n_words++] = 0;
            }
            cnt[id]++;
        }
    wc *arr = ac_malloc((size_t)(n_words ? n_words : 1) * sizeof *arr);
    if (!arr) goto oom;
    int m = 0;
    for (int i = 0; i < n_words; i++) {
        int special = 0;
        for (int k = 0; k < 4; k++) special |= !strcmp(wl[i], SPECIALS[k]);
        if (cnt[i] >= min_count && !special) arr[m++] = (wc){wl[i], cnt[i]};
    }
    qsort(arr, (size_t)m, sizeof *arr, by_count);
    ac_limits lim = ac_limits_get();
    if ((uint64_t)m + 4 > lim.max_vocab) {
        free(arr);
        ac_strmap_free(&counts);
        free(cnt);
        free(wl);
        return ac_errf(err, "vocabulary of %d words is over the limit of %llu (raise ATTNCAP_MAX_VOCAB or min_count)",
                       m + 4, (unsigned long long)lim.max_vocab);
    }
    ac_vocab *v = ac_calloc(1, sizeof *v);
    if (v) v->words = ac_malloc((size_t)(m + 4) * sizeof *v->words);
    int rc = 0;
    if (!v || !v->words) rc = ac_errf(err, "vocabulary: out of memory");
    for (int k = 0; !rc && k < 4; k++) rc = vocab_add(v, SPECIALS[k], err);
    for (int k = 0; !rc && k < m; k++) rc = vocab_add(v, arr[k].w, err);
    free(arr);
    ac_strmap_free(&counts);
    free(cnt);
    free(wl);
    if (rc) { ac_vocab_free(v); return -1; }
    *out = v;
    return 0;
oom:
    ac_strmap_free(&counts);
    free(cnt);
    free(wl);
    return ac_errf(err, "vocabulary: out of memory");
}

char *ac_vocab_to_json(const ac_vocab *v) {
    cJSON *a = cJSON_CreateArray();
    if (!a) return NULL;
    for (int i = 0; i < v->n; i++) {
        cJSON *s = cJSON_CreateString(v->words[i]);
        if (!s) { cJSON_Delete(a); return NULL; }
        cJSON_AddItemToArray(a, s);
    }
    char *out = cJSON_PrintUnformatted(a);
    cJSON_Delete(a);
    return out;
}

int ac_vocab_from_json(const char *json, ac_vocab **out, ac_err *err) {
    *out = NULL;
    cJSON *a = cJSON_Parse(json);
    if (!a) return ac_errf(err, "vocabulary: not valid JSON");
    if (!cJSON_IsArray(a)) { cJSON_Delete(a); return ac_errf(err, "vocabulary: expected a JSON array of words"); }
    int n = cJSON_GetArraySize(a);
    ac_limits lim = ac_limits_get();
    if (n < 4 || (uint64_t)n > lim.max_vocab) {
        cJSON_Delete(a);
        return ac_errf(err, "vocabulary: %d words (need 4..%llu; limit ATTNCAP_MAX_VOCAB)", n, (unsigned long long)lim.max_vocab);
    }
    ac_vocab *v = ac_calloc(1, sizeof *v);
    if (v) v->words = ac_malloc((size_t)n * sizeof *v->words);
    if (!v || !v->words) { free(v); cJSON_Delete(a); return ac_errf(err, "vocabulary: out of memory"); }
    int i = 0, rc = 0;
    cJSON *it;
    cJSON_ArrayForEach(it, a) {
        if (!cJSON_IsString(it) || !it->valuestring[0]) { rc = ac_errf(err, "vocabulary: entry %d is not a non-empty string", i); break; }
        if (i < 4 && strcmp(it->valuestring, SPECIALS[i])) {
            rc = ac_errf(err, "vocabulary: entry %d is '%.64s', expected '%s'", i, it->valuestring, SPECIALS[i]);
            break;
        }
        if (ac_strmap_get(&v->index, it->valuestring) >= 0) {
            rc = ac_errf(err, "vocabulary: word '%.64s' appears twice", it->valuestring);
            break;
        }
        if ((rc = vocab_add(v, it->valuestring, err))) break;
        i++;
    }
    cJSON_Delete(a);
    if (rc) { ac_vocab_free(v); return -1; }
    *out = v;
    return 0;
}

int ac_vocab_size(const ac_vocab *v) { return v->n; }
const char *ac_vocab_word(const ac_vocab *v, int id) { return id >= 0 && id < v->n ? v->words[id] : SPECIALS[AC_UNK]; }
int ac_vocab_id(const ac_vocab *v, const char *word) {
    int id = ac_strmap_get(&v->index, word);
    return id < 0 ? AC_UNK : id;
}
void ac_vocab_encode(const ac_vocab *v, const ac_tokens *t, int *out) {
    for (int i = 0; i < t->n; i++) out[i] = ac_vocab_id(v, t->tok[i]);
}
int ac_vocab_repeatable(const ac_vocab *v, const ac_tokens *caps, int n_caps, double min_rate, int min_captions,
                        unsigned char *repeatable, ac_err *err) {
    const int V = v->n;
    int *used = ac_calloc((size_t)V, sizeof *used), *twice = ac_calloc((size_t)V, sizeof *twice), *ids = NULL, n_ids = 0;
    for (int c = 0; used && twice && c < n_caps; c++) {
        if (caps[c].n > n_ids) {
            free(ids);
            if (!(ids = ac_malloc(sizeof *ids * (size_t)caps[c].n))) break;
            n_ids = caps[c].n;
        }
        ac_vocab_encode(v, &caps[c], ids);
        /* a word's first occurrence counts it as used, its second as said twice: the count of ids
         * before i that equal ids[i] (captions are short) */
        for (int i = 0; i < caps[c].n; i++) {
            int before = 0;
            for (int j = 0; j < i && before < 2; j++) before += ids[j] == ids[i];
            if (before == 0) used[ids[i]]++;
            else if (before == 1) twice[ids[i]]++;
        }
    }
    const int ok = used && twice && (n_caps == 0 || ids);
    for (int w = 0; ok && w < V; w++)
        repeatable[w] = w > AC_UNK && used[w] >= min_captions && used[w] > 0 && twice[w] >= min_rate * used[w];
    free(used), free(twice), free(ids);
    return ok ? 0 : ac_errf(err, "out of memory counting repeated words");
}

void ac_vocab_free(ac_vocab *v) {
    if (!v) return;
    for (int i = 0; i < v->n; i++) free(v->words[i]);
    free(v->words);
    ac_strmap_free(&v->index);
    free(v);
}
