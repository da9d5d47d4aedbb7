/* dataset.c: readers for captioned-photo sets (see dataset.h). Every reader fills the same
 * ac_dataset: one entry per photo in order of first appearance, its raw captions, its split. */
#include "attncap/dataset.h"
#include "json_internal.h"

#include <cjson/cJSON.h>
#include <ctype.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "strmap.h"
#include "alloc_internal.h"

ac_split ac_split_parse(const char *s) {
    if (!s) return AC_SPLIT_NONE;
    if (!strcasecmp(s, "train") || !strcasecmp(s, "restval")) return AC_SPLIT_TRAIN;
    if (!strcasecmp(s, "val") || !strcasecmp(s, "dev") || !strcasecmp(s, "valid") || !strcasecmp(s, "validation"))
        return AC_SPLIT_VAL;
    if (!strcasecmp(s, "test")) return AC_SPLIT_TEST;
    return AC_SPLIT_NONE;
}

/* Deterministic split by a hash of the key: 90% train, 5% val, 5% test. */
static ac_split hash_split(const char *key) {
    uint64_t h = ac_hash_bytes(key, strlen(key));
    h ^= h >> 29; /* mix the high bits into the remainder */
    unsigned r = (unsigned)(h % 100);
    return r < 90 ? AC_SPLIT_TRAIN : r < 95 ? AC_SPLIT_VAL : AC_SPLIT_TEST;
}

typedef struct {
    ac_dataset *ds;
    int cap;
    ac_strmap index; /* key or id -> image index */
} builder;

static int utf8_ok(const char *s) {
    const unsigned char *p = (const unsigned char *)s;
    while (*p) {
        int len = *p < 0x80 ? 1 : (*p >= 0xC2 && *p <= 0xDF) ? 2 : (*p >= 0xE0 && *p <= 0xEF) ? 3
                : (*p >= 0xF0 && *p <= 0xF4) ? 4 : 0;
        if (!len) return 0;
        for (int j = 1; j < len; j++)
            if ((p[j] & 0xC0) != 0x80) return 0;
        p += len;
    }
    return 1;
}

/* Checks one caption; `where` names file and line for the message. */
static int check_caption(const char *cap, const char *where, ac_err *err) {
    const char *p = cap;
    while (*p && isspace((unsigned char)*p)) p++;
    if (!*p) return ac_errf(err, "%s: empty caption", where);
    if (!utf8_ok(cap)) return ac_errf(err, "%s: caption is not valid UTF-8", where);
    ac_limits lim = ac_limits_get();
    if (strlen(cap) > lim.max_caption_bytes)
        return ac_errf(err, "%s: caption of %zu bytes is over the limit of %llu (raise ATTNCAP_MAX_CAPTION_BYTES)", where,
                       strlen(cap), (unsigned long long)lim.max_caption_bytes);
    return 0;
}

/* Finds or adds the image named `index_key`; returns its index or -1. */
static int get_image(builder *b, const char *index_key, const char *key, const char *id, ac_err *err) {
    int k = ac_strmap_get(&b->index, index_key);
    if (k >= 0) return k;
    ac_dataset *ds = b->ds;
    if (ds->n == b->cap) {
        int nc = b->cap ? b->cap * 2 : 256;
        ac_ds_image *ni = ac_realloc(ds->images, (size_t)nc * sizeof *ni);
        if (!ni) return ac_errf(err, "dataset: out of memory");
        ds->images = ni;
        b->cap = nc;
    }
    ac_ds_image *im = &ds->images[ds->n];
    memset(im, 0, sizeof *im);
    im->key = ac_strdup(key);
    im->id = ac_strdup(id);
    im->split = AC_SPLIT_NONE;
    if (!im->key || !im->id || ac_strmap_put(&b->index, index_key, ds->n) < 0) {
        free(im->key);
        free(im->id);
        return ac_errf(err, "dataset: out of memory");
    }
    return ds->n++;
}

static int add_caption(ac_ds_image *im, const char *cap, ac_err *err) {
    char **nc = ac_realloc(im->caps, (size_t)(im->n_caps + 1) * sizeof *nc);
    if (!nc) return ac_errf(err, "dataset: out of memory");
    im->caps = nc;
    if (!(im->caps[im->n_caps] = ac_strdup(cap))) return ac_errf(err, "dataset: out of memory");
    im->n_caps++;
    return 0;
}

static const char *base_name(const char *p) {
    const char *s = strrchr(p, '/');
    return s ? s + 1 : p;
}

static char *dir_of(const char *path) {
    const char *s = strrchr(path, '/');
    if (!s) return ac_strdup(".");
    if (s == path) return ac_strdup("/");
    return ac_strndup(path, (size_t)(s - path));
}

/* Line number of byte offset off in text. */
static int line_of(const char *text, size_t off) {
    int line = 1;
    for (size_t i = 0; i < off && text[i]; i++) line += text[i] == '\n';
    return line;
}

cJSON *ac_json_parse_file(const char *path, ac_err *err) {
    char *data;
    size_t len;
    ac_limits lim = ac_limits_get();
    if (ac_read_file(path, lim.max_file_bytes, &data, &len, err)) return NULL;
    const char *end = NULL;
    cJSON *j = cJSON_ParseWithLengthOpts(data, len, &end, 0);
    if (!j) {
        size_t off = end ? (size_t)(end - data) : 0;
        ac_errf(err, "%s:%d: not valid JSON", path, line_of(data, off));
        free(data);
        return NULL;
    }
    free(data);
    return j;
}

/* ---- COCO captions JSON: {"images":[{"id","file_name"}], "annotations":[{"image_id","caption"}]} ---- */

int ac_json_id_text(const cJSON *v, char *buf, size_t n) {
    if (cJSON_IsNumber(v)) {
        double d = v->valuedouble;
        /* range first: converting a double outside long long's range is undefined (fuzz finding: 2e28) */
        if (d >= -9223372036854775808.0 && d < 9223372036854775808.0 && d == (double)(long long)d)
            snprintf(buf, n, "%lld", (long long)d);
        else snprintf(buf, n, "%.17g", d);
        return 0;
    }
    if (cJSON_IsString(v) && v->valuestring[0]) {
        snprintf(buf, n, "%s", v->valuestring);
        return 0;
    }
    return -1;
}

static int read_coco(const char *path, cJSON *root, builder *b, ac_err *err) {
    cJSON *images = cJSON_GetObjectItemCaseSensitive(root, "images");
    cJSON *anns = cJSON_GetObjectItemCaseSensitive(root, "annotations");
    if (!cJSON_IsArray(images) || !cJSON_IsArray(anns))
        return ac_errf(err, "%s: COCO captions JSON needs arrays \"images\" and \"annotations\"", path);
    int i = 0;
    cJSON *it;
    char idb[128], where[600];
    cJSON_ArrayForEach(it, images) {
        cJSON *id = cJSON_GetObjectItemCaseSensitive(it, "id");
        cJSON *fn = cJSON_GetObjectItemCaseSensitive(it, "file_name");
        if (ac_json_id_text(id, idb, sizeof idb) || !cJSON_IsString(fn) || !fn->valuestring[0])
            return ac_errf(err, "%s: images[%d] needs \"id\" and \"file_name\"", path, i);
        if (ac_strmap_get(&b->index, idb) >= 0) return ac_errf(err, "%s: images[%d]: id %s appears twice", path, i, idb);
        int k = get_image(b, idb, base_name(fn->valuestring), idb, err);
        if (k < 0) return -1;
        b->ds->images[k].path = ac_strdup(fn->valuestring); /* relative for now */
        i++;
    }
    i = 0;
    cJSON_ArrayForEach(it, anns) {
        cJSON *id = cJSON_GetObjectItemCaseSensitive(it, "image_id");
        cJSON *cap = cJSON_GetObjectItemCaseSensitive(it, "caption");
        if (ac_json_id_text(id, idb, sizeof idb) || !cJSON_IsString(cap))
            return ac_errf(err, "%s: annotations[%d] needs \"image_id\" and \"caption\"", path, i);
        int k = ac_strmap_get(&b->index, idb);
        if (k < 0) return ac_errf(err, "%s: annotations[%d]: image_id %s is not in \"images\"", path, i, idb);
        snprintf(where, sizeof where, "%s: annotations[%d]", path, i);
        if (check_caption(cap->valuestring, where, err) || add_caption(&b->ds->images[k], cap->valuestring, err)) return -1;
        i++;
    }
    for (int k = 0; k < b->ds->n; k++) b->ds->images[k].split = hash_split(b->ds->images[k].key);
    return 0;
}

/* ---- Karpathy dataset_*.json: {"images":[{"filepath","filename","split","sentences":[{"raw"}],"cocoid"}]} ---- */

static int read_karpathy(const char *path, cJSON *root, builder *b, ac_err *err) {
    cJSON *images = cJSON_GetObjectItemCaseSensitive(root, "images");
    int i = 0;
    cJSON *it;
    char idb[128], where[600];
    cJSON_ArrayForEach(it, images) {
        cJSON *fn = cJSON_GetObjectItemCaseSensitive(it, "filename");
        cJSON *fp = cJSON_GetObjectItemCaseSensitive(it, "filepath");
        cJSON *sp = cJSON_GetObjectItemCaseSensitive(it, "split");
        cJSON *sents = cJSON_GetObjectItemCaseSensitive(it, "sentences");
        cJSON *cocoid = cJSON_GetObjectItemCaseSensitive(it, "cocoid");
        if (!cJSON_IsString(fn) || !fn->valuestring[0] || !cJSON_IsArray(sents))
            return ac_errf(err, "%s: images[%d] needs \"filename\" and \"sentences\"", path, i);
        if (ac_json_id_text(cocoid, idb, sizeof idb)) snprintf(idb, sizeof idb, "%s", fn->valuestring);
        if (ac_strmap_get(&b->index, idb) >= 0) return ac_errf(err, "%s: images[%d]: '%s' appears twice", path, i, idb);
        int k = get_image(b, idb, fn->valuestring, idb, err);
        if (k < 0) return -1;
        ac_ds_image *im = &b->ds->images[k];
        if (cJSON_IsString(fp) && fp->valuestring[0]) im->path = ac_path_join(fp->valuestring, fn->valuestring);
        else im->path = ac_strdup(fn->valuestring);
        if (cJSON_IsString(sp)) {
            im->split = ac_split_parse(sp->valuestring);
            if (im->split == AC_SPLIT_NONE)
                return ac_errf(err, "%s: images[%d]: unknown split '%.32s'", path, i, sp->valuestring);
        } else im->split = hash_split(im->key);
        int j = 0;
        cJSON *s;
        cJSON_ArrayForEach(s, sents) {
            cJSON *raw = cJSON_GetObjectItemCaseSensitive(s, "raw");
            snprintf(where, sizeof where, "%s: images[%d].sentences[%d]", path, i, j);
            if (!cJSON_IsString(raw)) return ac_errf(err, "%s: no \"raw\" string", where);
            if (check_caption(raw->valuestring, where, err) || add_caption(im, raw->valuestring, err)) return -1;
            j++;
        }
        i++;
    }
    return 0;
}

/* ---- line formats: Flickr8k token file and TSV/CSV ---- */

/* Parses one CSV field (RFC 4180 quotes) starting at *p; returns a malloc'd string. */
static char *csv_field(char **p, int *bad) {
    char *s = *p;
    char *out = ac_malloc(strlen(s) + 1), *o = out;
    if (!out) return NULL;
    if (*s == '"') {
        s++;
        for (;;) {
            if (!*s) { *bad = 1; break; }
            if (*s == '"') {
                if (s[1] == '"') { *o++ = '"'; s += 2; continue; }
                s++;
                break;
            }
            *o++ = *s++;
        }
    } else {
        while (*s && *s != ',') *o++ = *s++;
    }
    *o = 0;
    if (*s == ',') s++;
    else if (*s) *bad = 1;
    *p = s;
    return out;
}

/* Reads "image<TAB>caption[<TAB>split]" (tsv/flickr8k) or "image,caption[,split]" (csv) lines. A
 * Flickr8k key "name.jpg#k" names the photo "name.jpg". Blank lines are skipped; a first line
 * "image,caption[,split]" (or with tabs) is taken as a header. A photo's split, when its lines give
 * one, must be the same on all of them; photos without one are split by hash_split afterwards. In a
 * TSV without the header's "split", a third field that names no split is part of the caption (older
 * files have tabs in captions). */
static int read_lines(const char *path, int csv, builder *b, ac_err *err) {
    char *data;
    size_t len;
    ac_limits lim = ac_limits_get();
    if (ac_read_file(path, lim.max_file_bytes, &data, &len, err)) return -1;
    if (memchr(data, 0, len)) {
        int l = line_of(data, (size_t)((char *)memchr(data, 0, len) - data));
        free(data);
        return ac_errf(err, "%s:%d: NUL byte (binary file?)", path, l);
    }
    char *p = data;
    if (len >= 3 && !memcmp(p, "\xEF\xBB\xBF", 3)) p += 3; /* BOM */
    int line = 0, rc = 0, split_column = 0; /* a header named a third column "split" */
    char where[600];
    while (*p && !rc) {
        line++;
        char *nl = strchr(p, '\n');
        if (nl) *nl = 0;
        char *next = nl ? nl + 1 : p + strlen(p);
        size_t l = strlen(p);
        if (l && p[l - 1] == '\r') p[--l] = 0;
        snprintf(where, sizeof where, "%s:%d", path, line);
        if (!l || strspn(p, " \t") == l) { p = next; continue; }
        char *img = NULL, *cap = NULL, *split = NULL;
        if (csv) {
            int bad = 0;
            char *q = p;
            img = csv_field(&q, &bad);
            cap = csv_field(&q, &bad);
            if (img && cap && !bad && *q) split = csv_field(&q, &bad);
            if (!img || !cap) rc = ac_errf(err, "dataset: out of memory");
            else if (bad || *q) rc = ac_errf(err, "%s: expected CSV fields \"image,caption\" or \"image,caption,split\"", where);
        } else {
            char *tab = strchr(p, '\t');
            if (!tab) rc = ac_errf(err, "%s: expected \"image<TAB>caption\" or \"image<TAB>caption<TAB>split\"", where);
            else {
                char *tab2 = strchr(tab + 1, '\t');
                img = ac_strndup(p, (size_t)(tab - p));
                cap = tab2 ? ac_strndup(tab + 1, (size_t)(tab2 - tab - 1)) : ac_strdup(tab + 1);
                if (tab2) split = ac_strdup(tab2 + 1);
                if (!img || !cap || (tab2 && !split)) rc = ac_errf(err, "dataset: out of memory");
            }
        }
        if (!rc && line == 1 && (!strcasecmp(img, "image") || !strcasecmp(img, "filename") || !strcasecmp(img, "file_name")) &&
            (!strcasecmp(cap, "caption") || !strcasecmp(cap, "captions")) && (!split || !strcasecmp(split, "split"))) {
            split_column = split != NULL;
            free(img), free(cap), free(split);
            p = next;
            continue;
        }
        ac_split sp = AC_SPLIT_NONE;
        if (!rc && split) {
            char word[16];
            size_t sl = strlen(split);
            while (sl && isspace((unsigned char)split[sl - 1])) sl--;
            snprintf(word, sizeof word, "%.*s", (int)(sl < 15 ? sl : 15), split);
            sp = sl < 15 ? ac_split_parse(word) : AC_SPLIT_NONE;
            if (sp == AC_SPLIT_NONE && (csv || split_column)) {
                rc = ac_errf(err, "%s: third field '%.32s' is not a split (train, val or test)", where, split);
            } else if (sp == AC_SPLIT_NONE) { /* no split column declared: the tab was the caption's own */
                char *whole = ac_strdup(strchr(p, '\t') + 1);
                if (!whole) rc = ac_errf(err, "dataset: out of memory");
                else free(cap), cap = whole;
            }
        }
        if (!rc) {
            char *hash = strrchr(img, '#'); /* Flickr8k "name.jpg#0" */
            if (hash && hash[1] && strspn(hash + 1, "0123456789") == strlen(hash + 1)) *hash = 0;
            while (*img && isspace((unsigned char)img[strlen(img) - 1])) img[strlen(img) - 1] = 0;
            if (!img[0]) rc = ac_errf(err, "%s: empty image name", where);
            else if (!utf8_ok(img)) rc = ac_errf(err, "%s: image name is not valid UTF-8", where);
        }
        if (!rc) rc = check_caption(cap, where, err);
        if (!rc) {
            int k = get_image(b, img, base_name(img), base_name(img), err);
            if (k < 0) rc = -1;
            else {
                ac_ds_image *im = &b->ds->images[k];
                static const char *names[] = {"train", "val", "test", "none"};
                if (sp != AC_SPLIT_NONE && im->split != AC_SPLIT_NONE && im->split != sp)
                    rc = ac_errf(err, "%s: %s is in split %s here but %s on an earlier line", where, im->key,
                                 names[sp], names[im->split]);
                else if (sp != AC_SPLIT_NONE) im->split = sp;
                if (!rc && !im->path && !(im->path = ac_strdup(img))) rc = ac_errf(err, "dataset: out of memory");
                if (!rc) rc = add_caption(im, cap, err);
            }
        }
        free(img);
        free(cap);
        free(split);
        p = next;
    }
    free(data);
    if (!rc && b->ds->n == 0) rc = ac_errf(err, "%s: no captions", path);
    return rc;
}

/* Flickr8k split files: one photo name per line. Unlisted photos keep AC_SPLIT_NONE. */
static int read_split_file(const char *path, ac_split split, builder *b, ac_err *err) {
    char *data;
    size_t len;
    if (ac_read_file(path, 64u << 20, &data, &len, err)) return -1;
    char *save = NULL;
    int line = 0;
    for (char *t = strtok_r(data, "\n", &save); t; t = strtok_r(NULL, "\n", &save)) {
        line++;
        size_t l = strlen(t);
        while (l && isspace((unsigned char)t[l - 1])) t[--l] = 0;
        if (!l) continue;
        int k = ac_strmap_get(&b->index, t);
        if (k < 0) continue; /* listed photo without captions: not part of the set */
        b->ds->images[k].split = split;
    }
    free(data);
    return 0;
}

static int read_flickr8k_dir(const char *dir, builder *b, ac_err *err) {
    char *tok = ac_path_join(dir, "Flickr8k.token.txt");
    if (!ac_is_file(tok)) {
        free(tok);
        tok = ac_path_join(dir, "Flickr8k_text/Flickr8k.token.txt");
    }
    if (!ac_is_file(tok)) {
        int rc = ac_errf(err, "%s: no Flickr8k.token.txt in this directory", dir);
        free(tok);
        return rc;
    }
    int rc = read_lines(tok, 0, b, err);
    char *tdir = dir_of(tok);
    free(tok);
    static const struct { const char *name; ac_split split; } files[] = {
        {"Flickr_8k.trainImages.txt", AC_SPLIT_TRAIN},
        {"Flickr_8k.devImages.txt", AC_SPLIT_VAL},
        {"Flickr_8k.testImages.txt", AC_SPLIT_TEST}};
    int any = 0;
    for (int i = 0; !rc && i < 3; i++) {
        char *f = ac_path_join(tdir, files[i].name);
        if (ac_is_file(f)) {
            any = 1;
            rc = read_split_file(f, files[i].split, b, err);
        }
        free(f);
    }
    free(tdir);
    if (!rc && !any)
        for (int k = 0; k < b->ds->n; k++) b->ds->images[k].split = hash_split(b->ds->images[k].key);
    return rc;
}

static int ends_with(const char *s, const char *suf) {
    size_t a = strlen(s), b = strlen(suf);
    return a >= b && !strcasecmp(s + a - b, suf);
}

int ac_dataset_load(const char *spec, const char *image_dir, ac_dataset *ds, ac_err *err) {
    memset(ds, 0, sizeof *ds);
    builder b = {ds, 0, {0}};
    int rc;
    char *default_dir = NULL;
    if (ac_is_dir(spec)) {
        ds->format = ac_strdup("flickr8k");
        rc = read_flickr8k_dir(spec, &b, err);
        char *a = ac_path_join(spec, "images"), *c = ac_path_join(spec, "Flicker8k_Dataset");
        if (ac_is_dir(a) || !ac_is_dir(c)) default_dir = a, free(c);
        else default_dir = c, free(a);
    } else if (!ac_is_file(spec)) {
        rc = ac_errf(err, "%s: no such file or directory", spec);
    } else if (ends_with(spec, ".json")) {
        cJSON *root = ac_json_parse_file(spec, err);
        rc = root ? 0 : -1;
        if (!rc) {
            cJSON *images = cJSON_GetObjectItemCaseSensitive(root, "images");
            cJSON *first = cJSON_IsArray(images) ? cJSON_GetArrayItem(images, 0) : NULL;
            if (cJSON_IsObject(root) && cJSON_GetObjectItemCaseSensitive(root, "annotations")) {
                ds->format = ac_strdup("coco");
                rc = read_coco(spec, root, &b, err);
            } else if (cJSON_IsArray(images) && (!first || cJSON_GetObjectItemCaseSensitive(first, "sentences"))) {
                ds->format = ac_strdup("karpathy");
                rc = read_karpathy(spec, root, &b, err);
            } else {
                rc = ac_errf(err, "%s: neither COCO captions JSON (\"images\" + \"annotations\") nor Karpathy "
                                  "dataset JSON (\"images\" with \"sentences\")", spec);
            }
            cJSON_Delete(root);
        }
        char *d = dir_of(spec);
        default_dir = ac_path_join(d, "images");
        free(d);
    } else {
        /* A text file: the Flickr8k token file itself, CSV, or TSV. */
        int is_token = !strcmp(base_name(spec), "Flickr8k.token.txt");
        int csv = ends_with(spec, ".csv");
        ds->format = ac_strdup(is_token ? "flickr8k" : "tsv");
        if (is_token) {
            char *d = dir_of(spec);
            rc = d ? read_flickr8k_dir(d, &b, err) : ac_errf(err, "dataset: out of memory");
            char *a = ac_path_join(d, "images"), *c = ac_path_join(d, "Flicker8k_Dataset");
            if (!a || !c) free(a), free(c); /* default_dir NULL: out of memory, below */
            else if (ac_is_dir(a) || !ac_is_dir(c)) default_dir = a, free(c);
            else default_dir = c, free(a);
            free(d);
        } else {
            rc = read_lines(spec, csv, &b, err);
            if (!rc) /* photos whose lines name no split */
                for (int k = 0; k < ds->n; k++)
                    if (ds->images[k].split == AC_SPLIT_NONE) ds->images[k].split = hash_split(ds->images[k].key);
            char *d = dir_of(spec);
            default_dir = ac_path_join(d, "images");
            free(d);
        }
    }
    ac_strmap_free(&b.index);
    if (!rc && ds->format && default_dir) ds->image_dir = ac_strdup(image_dir ? image_dir : default_dir);
    if (!rc && !ds->image_dir) rc = ac_errf(err, "dataset: out of memory");
    if (!rc) {
        for (int k = 0; !rc && k < ds->n; k++) {
            ac_ds_image *im = &ds->images[k];
            char *rel = im->path ? im->path : ac_strdup(im->key);
            im->path = !rel ? NULL : rel[0] == '/' ? ac_strdup(rel) : ac_path_join(ds->image_dir, rel);
            free(rel);
            if (!im->path) rc = ac_errf(err, "dataset: out of memory");
        }
    }
    free(default_dir);
    if (rc) ac_dataset_free(ds);
    return rc;
}

void ac_dataset_free(ac_dataset *ds) {
    if (!ds) return;
    for (int i = 0; i < ds->n; i++) {
        ac_ds_image *im = &ds->images[i];
        free(im->key);
        free(im->path);
        free(im->id);
        for (int j = 0; j < im->n_caps; j++) free(im->caps[j]);
        free(im->caps);
    }
    free(ds->images);
    free(ds->image_dir);
    free(ds->format);
    memset(ds, 0, sizeof *ds);
}

int ac_dataset_read_tokens(const char *specs, ac_split split, int max_words, ac_tokens **toks, int *n, int *cap,
                           ac_err *err) {
    char *list = ac_strdup(specs), *save = NULL;
    if (!list) return ac_errf(err, "out of memory");
    int rc = 0;
    for (char *spec = strtok_r(list, ",", &save); spec && !rc; spec = strtok_r(NULL, ",", &save)) {
        ac_dataset ds;
        if (ac_dataset_load(spec, NULL, &ds, err)) {
            rc = -1;
            break;
        }
        int more = 0;
        for (int i = 0; i < ds.n; i++) more += ds.images[i].n_caps;
        if (*n + more > *cap) {
            ac_tokens *t = ac_realloc(*toks, sizeof **toks * (size_t)(*n + more + 1));
            if (!t) rc = ac_errf(err, "out of memory reading %s", spec);
            else *toks = t, *cap = *n + more + 1;
        }
        for (int i = 0; !rc && i < ds.n; i++) {
            if (split != AC_SPLIT_NONE && ds.images[i].split != split) continue;
            for (int k = 0; k < ds.images[i].n_caps; k++) {
                ac_tokens *t = &(*toks)[*n];
                ac_err e2;
                const int bad = ac_tokenize(ds.images[i].caps[k], t, &e2);
                if (bad == -2) { /* out of memory: the reading fails (skipping would change what is read) */
                    rc = ac_errf(err, "out of memory reading %s", spec);
                    break;
                }
                if (bad) continue; /* invalid UTF-8: skipped */
                if (t->n == 0 || t->n > max_words) {
                    ac_tokens_free(t);
                    continue;
                }
                (*n)++;
            }
        }
        ac_dataset_free(&ds);
    }
    free(list);
    return rc;
}
