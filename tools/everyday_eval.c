/* everyday_eval: scores captions of ../shared/data/everyday_dev (or a set labelled the same way) as
 * the held-back everyday set is scored: a photo's main object is named when the caption names any of
 * its `main` COCO categories; a named object is absent when it is in neither `main` nor `also`.
 * Objects are found in captions by the same matcher as every other object score (objects.h).
 *
 *   everyday_eval LABELS.tsv RESULTS.jsonl      (results: `attncap caption --json` lines)
 *
 * Prints one line per photo (name, main named?, the caption's objects, absent ones) and the totals. */
#include <cjson/cJSON.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "attncap/objects.h"

enum { MAX_PHOTOS = 4096 };

typedef struct {
    char name[256];
    uint8_t main[AC_N_OBJECTS], also[AC_N_OBJECTS];
} label;

static void parse_list(char *s, uint8_t *set) {
    for (char *save = NULL, *t = strtok_r(s, ",", &save); t; t = strtok_r(NULL, ",", &save)) {
        while (*t == ' ') t++;
        int k = ac_object_index(t);
        if (k >= 0) set[k] = 1;
        else fprintf(stderr, "everyday_eval: '%s' is not a COCO category (ignored)\n", t);
    }
}

static const char *stem_of(const char *path, char *buf, size_t n) {
    const char *b = strrchr(path, '/');
    b = b ? b + 1 : path;
    snprintf(buf, n, "%s", b);
    char *dot = strrchr(buf, '.');
    if (dot) *dot = 0;
    return buf;
}

int main(int argc, char **argv) {
    if (argc != 3) {
        fprintf(stderr, "usage: everyday_eval LABELS.tsv RESULTS.jsonl\n");
        return 2;
    }
    FILE *f = fopen(argv[1], "r");
    if (!f) return perror(argv[1]), 1;
    static label L[MAX_PHOTOS];
    int n = 0;
    char line[1 << 16];
    while (fgets(line, sizeof line, f) && n < MAX_PHOTOS) {
        line[strcspn(line, "\r\n")] = 0;
        char *cols[4] = {0};
        int c = 0;
        for (char *p = line; c < 4; c++) {
            cols[c] = p;
            char *tab = strchr(p, '\t');
            if (!tab) { c++; break; }
            *tab = 0, p = tab + 1;
        }
        if (!strcmp(cols[0], "name") || !cols[1]) continue; /* the header */
        memset(&L[n], 0, sizeof L[n]);
        snprintf(L[n].name, sizeof L[n].name, "%s", cols[0]);
        parse_list(cols[1], L[n].main);
        if (c > 2 && cols[2]) parse_list(cols[2], L[n].also);
        n++;
    }
    fclose(f);
    if (!(f = fopen(argv[2], "r"))) return perror(argv[2]), 1;
    int photos = 0, main_named = 0, named = 0, absent = 0;
    static char big[1 << 22];
    while (fgets(big, sizeof big, f)) {
        cJSON *o = cJSON_Parse(big);
        const cJSON *im = cJSON_GetObjectItemCaseSensitive(o, "image"), *cap = cJSON_GetObjectItemCaseSensitive(o, "caption");
        if (!cJSON_IsString(im) || !cJSON_IsString(cap)) {
            cJSON_Delete(o);
            continue;
        }
        char stem[256];
        stem_of(im->valuestring, stem, sizeof stem);
        int k = 0;
        while (k < n && strcmp(L[k].name, stem)) k++;
        if (k == n) {
            cJSON_Delete(o);
            continue;
        }
        uint8_t got[AC_N_OBJECTS];
        ac_err err;
        if (ac_objects_in_text(cap->valuestring, got, &err) < 0) memset(got, 0, sizeof got);
        int hit = 0, ab = 0, nm = 0;
        char objs[1024] = "", bad[1024] = "";
        for (int c = 0; c < AC_N_OBJECTS; c++) {
            if (!got[c]) continue;
            nm++;
            hit |= L[k].main[c];
            snprintf(objs + strlen(objs), sizeof objs - strlen(objs), "%s%s", *objs ? "," : "", ac_object_name(c));
            if (!L[k].main[c] && !L[k].also[c])
                ab++, snprintf(bad + strlen(bad), sizeof bad - strlen(bad), "%s%s", *bad ? "," : "", ac_object_name(c));
        }
        printf("%-28s main %-3s objects [%s] absent [%s]\t%s\n", stem, hit ? "yes" : "NO", objs, bad, cap->valuestring);
        photos++, main_named += hit, named += nm, absent += ab;
        cJSON_Delete(o);
    }
    fclose(f);
    printf("everyday: main object named in %d of %d photos; %d of %d named objects absent (%.1f %%)\n", main_named,
           photos, absent, named, named ? 100.0 * absent / named : 0.0);
    return 0;
}
