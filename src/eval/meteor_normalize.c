/* meteor_normalize.c: METEOR 1.5's -norm normaliser (edu.cmu.meteor.util.Normalizer for English,
 * keeping punctuation, then lowercasing), on code points.
 *
 * Each of METEOR's regular expressions is reproduced with Java's replaceAll semantics (left to
 * right, non-overlapping) and its character classes: METEOR's letters are ASCII, Latin-1,
 * Latin Extended-A and Cyrillic; every other non-alphanumeric character except . ' ` , - and
 * the curly single quotes becomes a token of its own (so do letters outside those ranges, e.g.
 * Vietnamese horned vowels). Java's \s, \p{Digit} and \p{Lower} are ASCII classes. */
#include <stdlib.h>
#include <string.h>

#include "attncap/meteor.h"
#include "meteor_internal.h"
#include "alloc_internal.h"

typedef struct {
    uint32_t *v;
    size_t n, cap;
} cpbuf;

static int cp_push(cpbuf *b, uint32_t c) {
    if (b->n == b->cap) {
        size_t cap = b->cap ? b->cap * 2 : 256;
        uint32_t *v = ac_realloc(b->v, cap * sizeof *v);
        if (!v) return -1;
        b->v = v;
        b->cap = cap;
    }
    b->v[b->n++] = c;
    return 0;
}

static int cp_push_str(cpbuf *b, const char *s) {
    for (; *s; s++)
        if (cp_push(b, (unsigned char)*s)) return -1;
    return 0;
}

/* UTF-8 -> code points; malformed bytes become U+FFFD as Java's decoder makes them. */
static int cp_decode(const char *s, cpbuf *out) {
    const unsigned char *p = (const unsigned char *)s;
    while (*p) {
        uint32_t c = *p, need = 0, min = 0;
        if (c < 0x80) need = 0;
        else if ((c & 0xE0) == 0xC0) need = 1, c &= 0x1F, min = 0x80;
        else if ((c & 0xF0) == 0xE0) need = 2, c &= 0x0F, min = 0x800;
        else if ((c & 0xF8) == 0xF0) need = 3, c &= 0x07, min = 0x10000;
        else need = 99;
        p++;
        if (need == 99) c = 0xFFFD;
        for (uint32_t k = 0; k < need && need != 99; k++, p++) {
            if ((*p & 0xC0) != 0x80) {
                c = 0xFFFD;
                break;
            }
            c = (c << 6) | (*p & 0x3F);
        }
        if (need && need != 99 && c != 0xFFFD && (c < min || c > 0x10FFFF)) c = 0xFFFD;
        if (cp_push(out, c)) return -1;
    }
    return 0;
}

static size_t cp_encode(uint32_t c, char *o) {
    if (c < 0x80) return o[0] = (char)c, 1;
    if (c < 0x800) return o[0] = (char)(0xC0 | c >> 6), o[1] = (char)(0x80 | (c & 0x3F)), 2;
    if (c < 0x10000)
        return o[0] = (char)(0xE0 | c >> 12), o[1] = (char)(0x80 | ((c >> 6) & 0x3F)),
               o[2] = (char)(0x80 | (c & 0x3F)), 3;
    return o[0] = (char)(0xF0 | c >> 18), o[1] = (char)(0x80 | ((c >> 12) & 0x3F)),
           o[2] = (char)(0x80 | ((c >> 6) & 0x3F)), o[3] = (char)(0x80 | (c & 0x3F)), 4;
}

/* METEOR's letter class: ASCII, Western European and Cyrillic ranges (no digits). */
static int is_alpha(uint32_t c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= 0xC0 && c <= 0xD6) ||
           (c >= 0xD8 && c <= 0xF6) || (c >= 0xF8 && c <= 0x17E) || (c >= 0x400 && c <= 0x527) ||
           (c >= 0xA640 && c <= 0xA66E) || (c >= 0xA67E && c <= 0xA697) || (c >= 0x1D00 && c <= 0x1D7F);
}
static int is_digit(uint32_t c) { return c >= '0' && c <= '9'; }
static int is_alnum(uint32_t c) { return is_alpha(c) || is_digit(c); }
static int not_digit(uint32_t c) { return !is_digit(c); }
static int not_alpha(uint32_t c) { return !is_alpha(c); }
static int not_alpha_digit(uint32_t c) { return !is_alpha(c) && !is_digit(c); }
static int alnum_or_dot(uint32_t c) { return is_alnum(c) || c == '.'; }
static int is_s(uint32_t c) { return c == 's'; }
static int java_space(uint32_t c) { return c == ' ' || c == '\t' || c == '\n' || c == 0x0B || c == '\f' || c == '\r'; }
static int tok_delim(uint32_t c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f'; }
static int uni_space(uint32_t c) {
    return c == ' ' || c == 0xA0 || c == 0x1680 || (c >= 0x2000 && c <= 0x200A) || c == 0x202F ||
           c == 0x205F || c == 0x3000;
}

/* Java's String.replaceAll of a pattern "(A)X(B)" with single code point classes: left to right,
 * non-overlapping. The middle X is replaced by rep. */
static int replace3(const cpbuf *in, cpbuf *out, int (*a)(uint32_t), uint32_t x, int (*b)(uint32_t),
                    const char *rep) {
    out->n = 0;
    for (size_t i = 0; i < in->n;) {
        if (i + 2 < in->n && in->v[i + 1] == x && a(in->v[i]) && b(in->v[i + 2])) {
            if (cp_push(out, in->v[i]) || cp_push_str(out, rep) || cp_push(out, in->v[i + 2])) return -1;
            i += 3;
        } else {
            if (cp_push(out, in->v[i])) return -1;
            i++;
        }
    }
    return 0;
}

static void cp_swap(cpbuf *a, cpbuf *b) {
    cpbuf t = *a;
    *a = *b;
    *b = t;
}

static uint32_t lower_cp(uint32_t c) {
    if (c >= 'A' && c <= 'Z') return c + 32;
    if (c < 0x80) return c;
    if ((c >= 0xC0 && c <= 0xDE && c != 0xD7) || (c >= 0x391 && c <= 0x3AB && c != 0x3A2) ||
        (c >= 0x410 && c <= 0x42F))
        return c + 32;
    if (c >= 0x400 && c <= 0x40F) return c + 80;
    if (c == 0x178) return 0xFF;
    if ((c >= 0x100 && c <= 0x137) || (c >= 0x14A && c <= 0x177) || (c >= 0x1E00 && c <= 0x1EFF) ||
        (c >= 0x460 && c <= 0x481) || (c >= 0x48A && c <= 0x4BF))
        return (c & 1) ? c : c + 1;
    if ((c >= 0x139 && c <= 0x148) || (c >= 0x179 && c <= 0x17E) || (c >= 0x4C1 && c <= 0x4CE))
        return (c & 1) ? c + 1 : c;
    return c;
}

/* Moses' English nonbreaking prefixes (METEOR's english.prefixes). */
static int nbp_type(const uint32_t *w, size_t n) {
    static const char *const any[] = {
        "Adj", "Adm", "Adv", "Asst", "Bart", "Bldg", "Brig", "Bros", "Capt", "Cmdr", "Col", "Comdr",
        "Con", "Corp", "Cpl", "DR", "Dr", "Drs", "Ens", "Gen", "Gov", "Hon", "Hr", "Hosp", "Insp",
        "Lt", "MM", "MR", "MRS", "MS", "Maj", "Messrs", "Mlle", "Mme", "Mr", "Mrs", "Ms", "Msgr",
        "Op", "Ord", "Pfc", "Ph", "Prof", "Pvt", "Rep", "Reps", "Res", "Rev", "Rt", "Sen", "Sens",
        "Sfc", "Sgt", "Sr", "St", "Supt", "Surg", "v", "vs", "i.e", "rev", "e.g", "Jan", "Feb",
        "Mar", "Apr", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"};
    static const char *const num[] = {"No", "Nos", "Art", "Nr", "pp"};
    if (n == 1 && w[0] >= 'A' && w[0] <= 'Z') return 1;
    char s[16];
    if (n >= sizeof s) return 0;
    for (size_t k = 0; k < n; k++) {
        if (w[k] >= 0x80) return 0;
        s[k] = (char)w[k];
    }
    s[n] = 0;
    for (size_t k = 0; k < sizeof any / sizeof *any; k++)
        if (!strcmp(s, any[k])) return 1;
    for (size_t k = 0; k < sizeof num / sizeof *num; k++)
        if (!strcmp(s, num[k])) return 2;
    return 0;
}

static char *normalize_line(const char *line) {
    /* Lines of lowercase ASCII letters, digits and spaces (coco-caption's usual input) are left
     * unchanged by every rule below but the whitespace collapsing. */
    const char *c = line;
    while ((*c >= 'a' && *c <= 'z') || (*c >= '0' && *c <= '9') || *c == ' ') c++;
    if (!*c) {
        char *r = ac_malloc(strlen(line) + 1);
        if (!r) return NULL;
        size_t o = 0;
        for (c = line; *c; c++)
            if (*c != ' ') r[o++] = *c;
            else if (o && c[1] && c[1] != ' ') r[o++] = ' ';
        r[o] = 0;
        return r;
    }
    cpbuf a = {0}, b = {0};
    char *res = NULL;
    int bad = cp_push(&a, ' ') || cp_decode(line, &a) || cp_push(&a, ' ');
    /* Separate every character that is not alphanumeric, space or . ' ` , - U+2018 U+2019. */
    for (size_t i = 0; i < a.n && !bad; i++) {
        uint32_t c = a.v[i];
        int keep = is_alnum(c) || java_space(c) || c == '.' || c == '\'' || c == '`' || c == ',' ||
                   c == '-' || c == 0x2018 || c == 0x2019;
        bad = keep ? cp_push(&b, c) : (cp_push(&b, ' ') || cp_push(&b, c) || cp_push(&b, ' '));
    }
    cp_swap(&a, &b);
    /* Runs of two or more dots become a separate token. */
    b.n = 0;
    for (size_t i = 0; i < a.n && !bad;) {
        size_t j = i;
        while (j < a.n && a.v[j] == '.') j++;
        if (j - i >= 2) {
            bad = cp_push(&b, ' ');
            for (size_t k = i; k < j && !bad; k++) bad = cp_push(&b, '.');
            bad = bad || cp_push(&b, ' ');
            i = j;
        } else {
            bad = cp_push(&b, a.v[i++]);
        }
    }
    cp_swap(&a, &b);
    /* Commas, except between digits. */
    bad = bad || replace3(&a, &b, not_digit, ',', not_digit, " , ");
    cp_swap(&a, &b);
    bad = bad || replace3(&a, &b, is_digit, ',', not_digit, " , ");
    cp_swap(&a, &b);
    bad = bad || replace3(&a, &b, not_digit, ',', is_digit, " , ");
    cp_swap(&a, &b);
    /* Quotes: ` and curly singles -> ', curly doubles and '' -> a separate ". En dash, -- -> -. */
    b.n = 0;
    for (size_t i = 0; i < a.n; i++)
        if (a.v[i] == '`' || a.v[i] == 0x2018 || a.v[i] == 0x2019) a.v[i] = '\'';
    for (size_t i = 0; i < a.n && !bad;) {
        uint32_t c = a.v[i];
        if (c == 0x201C || c == 0x201D || (c == '\'' && i + 1 < a.n && a.v[i + 1] == '\'')) {
            bad = cp_push_str(&b, " \" ");
            i += c == '\'' ? 2 : 1;
        } else {
            bad = cp_push(&b, c == 0x2013 ? '-' : c);
            i++;
        }
    }
    cp_swap(&a, &b);
    b.n = 0;
    for (size_t i = 0; i < a.n && !bad;) {
        bad = cp_push(&b, a.v[i]);
        i += (a.v[i] == '-' && i + 1 < a.n && a.v[i + 1] == '-') ? 2 : 1;
    }
    cp_swap(&a, &b);
    /* Dashes between alphanumerics (or after a dot) become spaces: partial credit for t-shirt. */
    bad = bad || replace3(&a, &b, alnum_or_dot, '-', is_alnum, " ");
    cp_swap(&a, &b);
    /* English contractions split to the right. */
    bad = bad || replace3(&a, &b, not_alpha, '\'', not_alpha, " ' ");
    cp_swap(&a, &b);
    bad = bad || replace3(&a, &b, not_alpha_digit, '\'', is_alpha, " ' ");
    cp_swap(&a, &b);
    bad = bad || replace3(&a, &b, is_alpha, '\'', not_alpha, " ' ");
    cp_swap(&a, &b);
    bad = bad || replace3(&a, &b, is_alpha, '\'', is_alpha, " '");
    cp_swap(&a, &b);
    bad = bad || replace3(&a, &b, is_digit, '\'', is_s, " '");
    cp_swap(&a, &b);
    /* Words: a final dot is split off unless the word is dotted (U.S. -> US), a nonbreaking
     * prefix, or followed by a lowercase word (numeric-only prefixes: by a number). */
    b.n = 0;
    size_t i = 0;
    while (!bad) {
        while (i < a.n && tok_delim(a.v[i])) i++;
        if (i >= a.n) break;
        size_t s = i;
        while (i < a.n && !tok_delim(a.v[i])) i++;
        size_t e = i, n = e - s, ns = i;
        while (ns < a.n && tok_delim(a.v[ns])) ns++;
        uint32_t next = ns < a.n ? a.v[ns] : 0;
        const uint32_t *w = a.v + s;
        if (n > 1 && w[n - 1] == '.') {
            int has_dot = 0, has_alpha = 0;
            for (size_t k = 0; k + 1 < n; k++) has_dot |= w[k] == '.', has_alpha |= is_alpha(w[k]);
            int type = nbp_type(w, n - 1);
            if (has_dot && has_alpha) {
                for (size_t k = 0; k < n && !bad; k++)
                    if (w[k] != '.') bad = cp_push(&b, w[k]);
            } else if (type == 1 || (next >= 'a' && next <= 'z') || (type == 2 && is_digit(next))) {
                for (size_t k = 0; k < n && !bad; k++) bad = cp_push(&b, w[k]);
            } else {
                for (size_t k = 0; k + 1 < n && !bad; k++) bad = cp_push(&b, w[k]);
                bad = bad || cp_push_str(&b, " .");
            }
        } else {
            for (size_t k = 0; k < n && !bad; k++) bad = cp_push(&b, w[k]);
        }
        bad = bad || cp_push(&b, ' ');
    }
    /* Whitespace runs -> one space, trimmed; lowercase; back to UTF-8. */
    if (!bad && (res = ac_malloc(b.n * 4 + 1))) {
        size_t o = 0;
        int pending = 0;
        for (size_t k = 0; k < b.n; k++) {
            uint32_t c = b.v[k];
            if (uni_space(c) || tok_delim(c)) {
                pending = o > 0;
                continue;
            }
            if (pending) res[o++] = ' ', pending = 0;
            o += cp_encode(lower_cp(c), res + o);
        }
        res[o] = 0;
    }
    free(a.v);
    free(b.v);
    return res;
}

char *ac_meteor_normalize(const char *line) { return normalize_line(line ? line : ""); }
