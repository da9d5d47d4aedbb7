/* tokenize.c: coco-caption's tokenization, i.e. Stanford PTBTokenizer 3.4.1 run as
 * `PTBTokenizer -preserveLines -lowerCase` followed by the removal of the tokens
 * '' ' `` ` -LRB- -RRB- -LCB- -RCB- . ? ! , : - -- ... ;
 *
 * PTBLexer is a JFlex scanner: at each position the longest match over all rules wins, ties go
 * to the rule written first. We do the same by hand with the rules that matter for captions,
 * in the lexer's priority order (see scan_one):
 *   cannot -> can not; unicode dashes -> --; word/'s 're 've 'll 'm 'd (split off); xx/n't;
 *   WORD = letter (letter|digit)* ([.!?] letter (letter|digit)*)* (no Americanize rewriting:
 *   the golden set's BLEU counts match only without it); 'n't 's ...; apostrophe words PTB keeps
 *   whole ('n' 'em '90s ma'am s'mores, y' of y'all);
 *   dates 12/25/2010 and fractions 1/2 (slash escaped as \/, PTB3); numbers [-+]?  3:00 1,000 3.5;
 *   abbreviations with their period (mr. dr. st. etc. e.g. a.m. and single letters: "a.");
 *   $ #; quotes -> `` '' (removed); ( ) [ ] { } -> -LRB- -RRB- -LCB- -RCB- (lowercased by
 *   -lowerCase, and so NOT removed by coco-caption's list, which is upper case: a quirk we keep);
 *   hyphen runs (- -- kept as punctuation), ellipses -> ..., slashes and asterisks escaped;
 *   hyphenated things (t-shirt, o'clock, 3.5-inch) and slashed words (red\/yellow) whole.
 * UTF-8: any non-ASCII code point that is not a space, a quote, a dash or a known symbol is a
 * letter, so Vietnamese syllables stay whole; lowercasing follows Java's toLowerCase for Latin,
 * Latin Extended (incl. Vietnamese), Greek and Cyrillic.
 * Not reproduced (rare in captions): URLs, e-mail addresses, SGML tags, smileys, phone numbers,
 * the deletion of characters PTBLexer cannot tokenize (we keep each as a one-character token). */
#include "attncap/tokenize.h"
#include "alloc_internal.h"

#include <stdlib.h>
#include <string.h>

/* ---- UTF-8 ---- */

/* Decodes s (n bytes) into cps; returns the count or -1 (with the byte offset) if invalid. */
static int utf8_decode(const unsigned char *s, size_t n, uint32_t *cps, size_t *bad) {
    size_t i = 0;
    int k = 0;
    while (i < n) {
        uint32_t c = s[i], cp;
        int len;
        if (c < 0x80) { cp = c; len = 1; }
        else if (c >= 0xC2 && c <= 0xDF) { cp = c & 0x1F; len = 2; }
        else if (c >= 0xE0 && c <= 0xEF) { cp = c & 0x0F; len = 3; }
        else if (c >= 0xF0 && c <= 0xF4) { cp = c & 0x07; len = 4; }
        else { *bad = i; return -1; }
        if (i + (size_t)len > n) { *bad = i; return -1; }
        for (int j = 1; j < len; j++) {
            if ((s[i + j] & 0xC0) != 0x80) { *bad = i; return -1; }
            cp = (cp << 6) | (s[i + j] & 0x3F);
        }
        if ((len == 3 && cp < 0x800) || (len == 4 && (cp < 0x10000 || cp > 0x10FFFF)) ||
            (cp >= 0xD800 && cp <= 0xDFFF)) { *bad = i; return -1; }
        cps[k++] = cp;
        i += (size_t)len;
    }
    return k;
}

/* A growable UTF-8 buffer. Out of memory is sticky: later puts do nothing and the owner checks
 * `failed` once, where it can return an error. */
typedef struct { char *p; size_t n, cap; int failed; } sbuf;

static void sb_put(sbuf *b, uint32_t cp) {
    if (b->failed) return;
    if (b->n + 5 > b->cap) {
        size_t cap = b->cap ? b->cap * 2 : 32;
        char *p = ac_realloc(b->p, cap);
        if (!p) {
            b->failed = 1;
            return;
        }
        b->p = p, b->cap = cap;
    }
    unsigned char *o = (unsigned char *)b->p + b->n;
    if (cp < 0x80) { o[0] = (unsigned char)cp; b->n += 1; }
    else if (cp < 0x800) { o[0] = 0xC0 | (cp >> 6); o[1] = 0x80 | (cp & 0x3F); b->n += 2; }
    else if (cp < 0x10000) {
        o[0] = 0xE0 | (cp >> 12); o[1] = 0x80 | ((cp >> 6) & 0x3F); o[2] = 0x80 | (cp & 0x3F);
        b->n += 3;
    } else {
        o[0] = 0xF0 | (cp >> 18); o[1] = 0x80 | ((cp >> 12) & 0x3F);
        o[2] = 0x80 | ((cp >> 6) & 0x3F); o[3] = 0x80 | (cp & 0x3F);
        b->n += 4;
    }
    b->p[b->n] = 0;
}
static void sb_puts(sbuf *b, const char *s) { while (*s) sb_put(b, (unsigned char)*s++); }

/* ---- character classes ---- */

static int is_space(uint32_t c) {
    return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\v' || c == '\f' || c == 0 ||
           c == 0xA0 || c == 0x85 || (c >= 0x2000 && c <= 0x200F) || c == 0x2028 || c == 0x2029 ||
           c == 0x202F || c == 0x205F || c == 0x3000 || c == 0xFEFF || c == 0x7F || c < 0x20;
}
static int is_digit(uint32_t c) { return c >= '0' && c <= '9'; }
static int is_alpha_ascii(uint32_t c) { return (c | 0x20) >= 'a' && (c | 0x20) <= 'z'; }
static int is_upper_ascii(uint32_t c) { return c >= 'A' && c <= 'Z'; }
/* Non-ASCII code points that are punctuation or symbols rather than letters. */
static int is_symbol_nonascii(uint32_t c) {
    if (c < 0x80) return 0;
    if (c <= 0x9F) return 1;                                   /* C1 / CP1252 punctuation */
    if (c >= 0xA1 && c <= 0xBF) return !(c == 0xAA || c == 0xAD || c == 0xB5 || c == 0xBA);
    if (c == 0xD7 || c == 0xF7) return 1;
    if (c >= 0x2010 && c <= 0x206F) return 1;                  /* general punctuation */
    if (c >= 0x2070 && c <= 0x209F) return 0;                  /* super/subscripts: letters */
    if (c >= 0x20A0 && c <= 0x2BFF) return 1;                  /* currency, symbols, arrows */
    if (c >= 0x2E00 && c <= 0x2E7F) return 1;
    if (c >= 0x3001 && c <= 0x303F) return 1;
    if (c >= 0xFE30 && c <= 0xFE4F) return 1;
    if ((c >= 0xFF01 && c <= 0xFF0F) || (c >= 0xFF1A && c <= 0xFF20) || (c >= 0xFF3B && c <= 0xFF40) ||
        (c >= 0xFF5B && c <= 0xFF65)) return 1;
    if (c >= 0x1F000 && c <= 0x1FAFF) return 1;               /* emoji */
    return 0;
}
static int is_letter(uint32_t c) {
    if (c < 0x80) return is_alpha_ascii(c);
    return !is_space(c) && !is_symbol_nonascii(c);
}
static int is_alnum(uint32_t c) { return is_letter(c) || is_digit(c); }
static int is_apos(uint32_t c) { return c == '\'' || c == 0x92 || c == 0x2019; }
static int is_apos_etc(uint32_t c) { return is_apos(c) || c == '`' || c == 0x91 || c == 0x2018 || c == 0x201B; }
static int is_hyphen(uint32_t c) { return c == '-' || c == '_' || c == 0x58A || c == 0x2010 || c == 0x2011; }
static int is_quote_char(uint32_t c) {
    return c == '`' || is_apos(c) || (c >= 0x2018 && c <= 0x201F) || c == 0x82 || c == 0x84 ||
           (c >= 0x91 && c <= 0x94) || c == 0x2039 || c == 0x203A || c == 0xAB || c == 0xBB;
}
static uint32_t lower_ascii(uint32_t c) { return is_upper_ascii(c) ? c + 32 : c; }

/* Java's String.toLowerCase for the scripts captions use. */
static uint32_t to_lower(uint32_t c) {
    if (c < 0x80) return lower_ascii(c);
    if (c >= 0xC0 && c <= 0xDE && c != 0xD7) return c + 32;
    if (c >= 0x100 && c <= 0x17F) {
        if (c == 0x130 || c == 0x131 || c == 0x138 || c == 0x149) return c == 0x130 ? 'i' : c;
        if (c == 0x178) return 0xFF;
        if ((c >= 0x139 && c <= 0x148) || (c >= 0x179 && c <= 0x17E)) return (c & 1) ? c + 1 : c;
        return (c & 1) ? c : c + 1;
    }
    if (c == 0x1A0 || c == 0x1AF) return c + 1;                /* Vietnamese O/U with horn */
    if (c >= 0x1CD && c <= 0x1DC) return (c & 1) ? c + 1 : c;
    if (c >= 0x1DE && c <= 0x1EF) return (c & 1) ? c : c + 1;
    if (c >= 0x1E00 && c <= 0x1EFF && !(c >= 0x1E96 && c <= 0x1E9F)) return (c & 1) ? c : c + 1;
    if (c == 0x1E9E) return 0xDF;
    if (c >= 0x391 && c <= 0x3AB && c != 0x3A2) return c + 32;
    if (c == 0x386) return 0x3AC;
    if (c >= 0x388 && c <= 0x38A) return c + 37;
    if (c == 0x38C) return 0x3CC;
    if (c == 0x38E || c == 0x38F) return c + 63;
    if (c >= 0x410 && c <= 0x42F) return c + 32;
    if (c >= 0x400 && c <= 0x40F) return c + 80;
    if (c >= 0x460 && c <= 0x4FF && !(c >= 0x482 && c <= 0x489) && c != 0x4C0) {
        if (c >= 0x4C1 && c <= 0x4CE) return (c & 1) ? c + 1 : c;
        return (c & 1) ? c : c + 1;
    }
    return c;
}

/* ---- the scanner ---- */

typedef struct {
    const uint32_t *c;
    int n;
} scan;

static uint32_t at(const scan *s, int i) { return i < s->n ? s->c[i] : 0; }

/* Case-insensitive match of ASCII word w at i; returns its length or 0. */
static int match_ci(const scan *s, int i, const char *w) {
    int k = 0;
    for (; w[k]; k++) {
        uint32_t c = at(s, i + k);
        if (c >= 0x80 || lower_ascii(c) != (uint32_t)(unsigned char)w[k]) return 0;
    }
    return k;
}

/* WORD = LETTER (LETTER|DIGIT)* ([.!?] LETTER (LETTER|DIGIT)*)* */
static int m_word(const scan *s, int i) {
    if (!is_letter(at(s, i))) return 0;
    int j = i + 1;
    for (;;) {
        while (j < s->n && is_alnum(s->c[j])) j++;
        uint32_t c = at(s, j);
        if ((c == '.' || c == '!' || c == '?') && is_letter(at(s, j + 1))) { j += 2; continue; }
        return j - i;
    }
}

/* NUMBER = [-+]? (DIGIT+ | DIGIT* ([.:,] DIGIT+)+) */
static int m_number(const scan *s, int i) {
    int j = i;
    if (at(s, j) == '-' || at(s, j) == '+') j++;
    int k = j;
    while (is_digit(at(s, k))) k++;
    int best = k > j ? k : -1;
    for (;;) {
        uint32_t c = at(s, k);
        if ((c == '.' || c == ':' || c == ',') && is_digit(at(s, k + 1))) {
            k++;
            while (is_digit(at(s, k))) k++;
            best = k;
        } else break;
    }
    return best < 0 ? 0 : best - i;
}

/* One THING segment: ([dDoOlL] APOSETC alnum)? alnum+ */
static int thing_seg(const scan *s, int i) {
    uint32_t c = at(s, i);
    int j = i;
    if (strchr("dDoOlL", (int)(c < 0x80 ? c : 1)) && c && is_apos_etc(at(s, i + 1)) && is_alnum(at(s, i + 2)))
        j = i + 3;
    else if (!is_alnum(c)) return 0;
    while (j < s->n && is_alnum(s->c[j])) j++;
    return j - i;
}
/* THING = seg (HYPHEN seg)*. A slash between two segments also joins them (red/yellow, and/or
 * stay one token, escaped red\/yellow): coco-caption's reference lengths on the golden set only
 * come out right that way. */
static int m_thing(const scan *s, int i) {
    int j = i, l = thing_seg(s, i);
    if (!l) return 0;
    j += l;
    while ((is_hyphen(at(s, j)) || at(s, j) == '/') && (l = thing_seg(s, j + 1)) > 0) j += 1 + l;
    return j - i;
}
/* ACRO2 = [A-Za-z](\.[A-Za-z])+ ; returns length or 0 */
static int m_acro2(const scan *s, int i) {
    if (!is_alpha_ascii(at(s, i))) return 0;
    int j = i + 1, reps = 0;
    while (at(s, j) == '.' && is_alpha_ascii(at(s, j + 1))) j += 2, reps++;
    return reps ? j - i : 0;
}
/* HTHING = (LETTER|DIGIT) [A-Za-z0-9.,\xAD]* (-([A-Za-z0-9\xAD]+ | ACRO2\.))+ */
static int is_hclass(uint32_t c) { return (c < 0x80 && (is_alpha_ascii(c) || is_digit(c))) || c == 0xAD; }
static int m_hthing(const scan *s, int i) {
    if (!is_alnum(at(s, i))) return 0;
    int j = i + 1;
    while (is_hclass(at(s, j)) || at(s, j) == '.' || at(s, j) == ',') j++;
    int end = 0;
    while (at(s, j) == '-') {
        int a = 0, k = j + 1;
        while (is_hclass(at(s, k))) k++, a++;
        int b = m_acro2(s, j + 1);
        if (b && at(s, j + 1 + b) == '.') b++; else b = 0;
        int l = a > b ? a : b;
        if (!l) break;
        j += 1 + l;
        end = j;
    }
    return end ? end - i : 0;
}
/* THINGA = [A-Z]+ ([+&][A-Z]+)+ */
static int m_thinga(const scan *s, int i) {
    int j = i;
    while (is_upper_ascii(at(s, j))) j++;
    if (j == i) return 0;
    int end = 0;
    while (at(s, j) == '+' || at(s, j) == '&') {
        int k = j + 1;
        while (is_upper_ascii(at(s, k))) k++;
        if (k == j + 1) break;
        j = k;
        end = j;
    }
    return end ? end - i : 0;
}
/* DATE = D{1,2}[-/]D{1,2}[-/]D{2,4} */
static int digits(const scan *s, int i, int lo, int hi) {
    int k = 0;
    while (k < hi && is_digit(at(s, i + k))) k++;
    return k >= lo ? k : 0;
}
static int m_date(const scan *s, int i) {
    int a = digits(s, i, 1, 2);
    if (!a || (at(s, i + a) != '-' && at(s, i + a) != '/')) return 0;
    int j = i + a + 1, b = digits(s, j, 1, 2);
    if (!b || (at(s, j + b) != '-' && at(s, j + b) != '/')) return 0;
    j += b + 1;
    int c = digits(s, j, 2, 4);
    return c ? j + c - i : 0;
}
/* FRAC = (D{1,4}[- \xA0])? D{1,4} (\\?/ | \u2044) D{1,4} */
static int frac_core(const scan *s, int i) {
    int a = digits(s, i, 1, 4);
    if (!a) return 0;
    int j = i + a;
    if (at(s, j) == '\\' && at(s, j + 1) == '/') j += 2;
    else if (at(s, j) == '/' || at(s, j) == 0x2044) j++;
    else return 0;
    int b = digits(s, j, 1, 4);
    return b ? j + b - i : 0;
}
static int m_frac(const scan *s, int i) {
    int best = frac_core(s, i);
    int a = digits(s, i, 1, 4);
    if (a) {
        uint32_t c = at(s, i + a);
        if (c == '-' || c == ' ' || c == 0xA0) {
            int l = frac_core(s, i + a + 1);
            if (l && a + 1 + l > best) best = a + 1 + l;
        }
    }
    return best;
}

/* Abbreviation lists (caseless, as the lexer is %caseless; "Miss" is case-sensitive there). */
static const char *const ABBREV1[] = { /* followed by '.' */
    "jan", "feb", "mar", "apr", "jun", "jul", "aug", "sep", "sept", "oct", "nov", "dec",
    "mon", "tue", "tues", "wed", "thu", "thurs", "fri",
    "calif", "mass", "conn", "fla", "ill", "mich", "pa", "va", "ariz", "tenn", "mo", "tex", "ga",
    "colo", "ky", "md", "wis", "la", "minn", "ind", "ore", "del", "okla", "wash", "kan", "kans",
    "neb", "nev", "ala", "ark", "vt", "wyo", "mont", "wisc",
    "inc", "co", "cos", "corp", "pty", "ptys", "ppty", "pptys", "ltd", "plc", "bancorp", "dept",
    "bhd", "assn", "univ", "intl", "sys", "jr", "sr", "bros", "ed.d", "ph.d", "blvd", "rd", "esq",
    "etc", "al", "seq", NULL};
static const char *const ABBREV2[] = { /* titles etc., followed by '.' */
    "mr", "mrs", "ms", "dr", "drs", "prof", "profs", "sen", "sens", "rep", "reps", "atty", "attys",
    "lt", "col", "gen", "messrs", "gov", "govs", "adm", "rev", "maj", "sgt", "cpl", "pvt", "mt",
    "capt", "st", "ste", "ave", "pres", "lieut", "hon", "brig", "cmdr", "comdr", "pfc", "spc",
    "supt", "supts", "det", "m", "mm", "mme", "mmes", "mlle", "mlles",
    "vs", "alex", "wm", "jos", "cie", "a.k.a", "cf", "treas", "invt", "elec", "natl", "mfg", "mtg",
    NULL};

/* Length of the longest listed abbreviation + '.' at i, or 0. */
static int m_abbrev_list(const scan *s, int i, const char *const *list) {
    int best = 0, k0 = 0;
    /* all entries are ASCII letters (with inner dots) followed by '.' within 15 characters */
    while (k0 < 15 && is_alpha_ascii(at(s, i + k0))) k0++;
    if (!k0 || (at(s, i + k0) != '.')) return 0;
    for (int k = 0; list[k]; k++) {
        int l = match_ci(s, i, list[k]);
        if (l && at(s, i + l) == '.' && l + 1 > best) best = l + 1;
    }
    return best;
}
static int m_abbrev2(const scan *s, int i) {
    int best = m_abbrev_list(s, i, ABBREV2);
    /* "Miss." only capitalised */
    if (at(s, i) == 'M' && match_ci(s, i + 1, "iss") && at(s, i + 4) == '.' && best < 5) best = 5;
    /* ACRO\. : [A-Za-z](\.[A-Za-z])*\. */
    if (is_alpha_ascii(at(s, i))) {
        int j = i + 1;
        while (at(s, j) == '.' && is_alpha_ascii(at(s, j + 1))) j += 2;
        if (at(s, j) == '.' && j + 1 - i > best) best = j + 1 - i;
    }
    return best;
}

/* APOWORD: words with an inner or edge apostrophe that PTB keeps whole ('n' 'em 'til 'cause '90s
 * l' d' dunkin' ol' c'mon s'mores nat'l ..., X'yy with X in [A-HJ-XZn], vowel'vowel as in ma'am). */
static int is_vowel(uint32_t c) { return c < 0x80 && strchr("aeiouyAEIOUY", (int)c) && c; }
static int m_apoword(const scan *s, int i) {
    uint32_t c = at(s, i);
    int best = 0;
#define APO_BEST(l) do { int l_ = (l); if (l_ > best) best = l_; } while (0)
    if (is_apos(c)) {
        if (lower_ascii(at(s, i + 1)) == 'n') APO_BEST(is_apos(at(s, i + 2)) ? 3 : 2);
        APO_BEST(match_ci(s, i + 1, "em") ? 3 : 0);
        APO_BEST(match_ci(s, i + 1, "till") ? 5 : match_ci(s, i + 1, "til") ? 4 : 0);
        APO_BEST(match_ci(s, i + 1, "cause") ? 6 : 0);
        if (at(s, i + 1) >= '2' && at(s, i + 1) <= '9' && at(s, i + 2) == '0' && lower_ascii(at(s, i + 3)) == 's') APO_BEST(4);
        return best;
    }
    if (strchr("lLdDjJ", (int)(c < 0x80 ? c : 1)) && c && is_apos(at(s, i + 1))) APO_BEST(2);
    static const char *const pre[] = {"dunkin", "somethin", "ol", NULL};
    for (int k = 0; pre[k]; k++) {
        int l = match_ci(s, i, pre[k]);
        if (l && is_apos(at(s, i + l))) APO_BEST(l + 1);
    }
    static const char *const fixed[] = {"cont'd", "'twas", "nor'easter", "c'mon", "e'er", "s'mores", "ev'ry",
                                        "li'l", "nat'l", NULL};
    for (int k = 0; fixed[k]; k++) APO_BEST(match_ci(s, i, fixed[k]));
    if (match_ci(s, i, "cont'd") && at(s, i + 6) == '.') APO_BEST(7);
    if (((c >= 'A' && c <= 'Z' && c != 'I' && c != 'Y') || c == 'n') && is_apos_etc(at(s, i + 1)) &&
        is_letter(at(s, i + 2)) && is_letter(at(s, i + 3))) {
        int j = i + 4;
        while (is_letter(at(s, j))) j++;
        APO_BEST(j - i);
    }
    if (is_letter(c)) { /* letter+ vowel ' [aeiouA-Z] letter* */
        int j = i + 1;
        while (is_letter(at(s, j))) j++;
        uint32_t a = at(s, j + 1);
        if (j - i >= 2 && is_vowel(at(s, j - 1)) && is_apos_etc(at(s, j)) && a < 0x80 && a &&
            (strchr("aeiou", (int)a) || is_upper_ascii(a))) {
            int k = j + 2;
            while (is_letter(at(s, k))) k++;
            APO_BEST(k - i);
        }
    }
#undef APO_BEST
    return best;
}

/* REDAUX = APOS ([msd] | re | ve | ll), caseless */
static int m_redaux(const scan *s, int i) {
    if (!is_apos(at(s, i))) return 0;
    uint32_t a = lower_ascii(at(s, i + 1)), b = lower_ascii(at(s, i + 2));
    if ((a == 'r' && b == 'e') || (a == 'v' && b == 'e') || (a == 'l' && b == 'l')) return 3;
    if (a == 'm' || a == 's' || a == 'd') return 2;
    return 0;
}
/* SREDAUX = n APOSETC t */
static int m_sredaux(const scan *s, int i) {
    return (lower_ascii(at(s, i)) == 'n' && is_apos_etc(at(s, i + 1)) && lower_ascii(at(s, i + 2)) == 't') ? 3 : 0;
}
/* SWORD/SREDAUX: [A-Za-z]*[A-MO-Za-mo-z] followed by n't; returns the SWORD length */
static int m_sword_nt(const scan *s, int i) {
    int j = i;
    while (is_alpha_ascii(at(s, j)) || at(s, j) == 0xAD) j++;
    /* the longest prefix ending in a non-n letter and followed by n't */
    for (int e = j; e > i; e--) {
        uint32_t last = at(s, e - 1);
        if (is_alpha_ascii(last) && lower_ascii(last) != 'n' && m_sredaux(s, e)) return e - i;
    }
    return 0;
}

/* ---- token list ---- */

static int punct_removed(const char *t) {
    if (!strchr("'`-.?!,:;", t[0])) return 0;
    static const char *const P[] = {"''", "'", "``", "`", "-LRB-", "-RRB-", "-LCB-", "-RCB-", ".", "?",
                                    "!", ",", ":", "-", "--", "...", ";", NULL};
    for (int k = 0; P[k]; k++)
        if (!strcmp(t, P[k])) return 1;
    return 0;
}

static int push_token(ac_tokens *out, int *cap, const sbuf *t) {
    /* -lowerCase: the whole token, as Java's toLowerCase(Locale.ENGLISH) */
    uint32_t buf[64];
    uint32_t *cps = t->n < 64 ? buf : ac_malloc((t->n + 1) * sizeof *cps);
    if (!cps) return -1;
    size_t bad;
    int n = utf8_decode((const unsigned char *)t->p, t->n, cps, &bad);
    sbuf low = {0};
    low.cap = t->n + 8; /* lowercasing keeps the length in UTF-8 bytes or close to it */
    low.p = ac_malloc(low.cap);
    if (!low.p) { if (cps != buf) free(cps); return -1; }
    for (int k = 0; k < n; k++) sb_put(&low, to_lower(cps[k]));
    if (cps != buf) free(cps);
    if (low.failed) { free(low.p); return -1; }
    if (punct_removed(low.p)) { free(low.p); return 0; }
    if (out->n == *cap) {
        *cap = *cap ? *cap * 2 : 16;
        char **nt = ac_realloc(out->tok, (size_t)*cap * sizeof *nt);
        if (!nt) { free(low.p); return -1; }
        out->tok = nt;
    }
    out->tok[out->n++] = low.p;
    return 0;
}

enum { R_NONE, R_CANNOT, R_DASH, R_WORD_REDAUX, R_SWORD_NT, R_WORD, R_APOWORD, R_REDAUX, R_SREDAUX, R_DATE,
       R_NUMBER, R_FRAC, R_TBSPEC, R_DOLSIGN, R_CURRENCY, R_ABBREV1, R_ABBREV2, R_WORD_DOT, R_DBLQUOT,
       R_BRACKET, R_HYPHENS, R_LDOTS, R_FNMARKS, R_ASTS, R_INSENTP, R_QBANG, R_PERIOD, R_SLASH,
       R_HTHING, R_THING, R_THINGA, R_QUOTES, R_OTHER };

/* Emits the token of rule r over [i, i+len) into t; returns how many code points to consume. */
static int emit(const scan *s, int i, int len, int r, sbuf *t) {
    t->n = 0;
    if (t->p) t->p[0] = 0;
    switch (r) {
    case R_CANNOT: sb_puts(t, "can"); return 3;
    case R_DASH: sb_puts(t, "--"); return len;
    case R_DBLQUOT: /* `` before a letter/digit/$, else '' */
        sb_puts(t, (is_alnum(at(s, i + 1)) || at(s, i + 1) == '$') ? "``" : "''");
        return len;
    case R_QUOTES: { /* latexQuotes: opening ` / ``, closing ' / '' (all removed later) */
        int dbl = len == 2 || (at(s, i) >= 0x201C && at(s, i) <= 0x201F) || at(s, i) == 0x93 ||
                  at(s, i) == 0x94 || at(s, i) == 0xAB || at(s, i) == 0xBB || at(s, i) == 0x84;
        uint32_t c = at(s, i);
        int open = c == '`' || c == 0x2018 || c == 0x201C || c == 0x91 || c == 0x93 || c == 0x201A || c == 0x201E;
        sb_puts(t, open ? (dbl ? "``" : "`") : (dbl ? "''" : "'"));
        return len;
    }
    case R_BRACKET: {
        uint32_t c = at(s, i);
        sb_puts(t, c == '(' || c == '[' || c == '<' ? "-LRB-" : c == ')' || c == ']' || c == '>' ? "-RRB-"
                   : c == '{' ? "-LCB-" : "-RCB-");
        return len;
    }
    case R_HYPHENS:
        if (len >= 2 && len <= 4) sb_puts(t, "--");
        else for (int k = 0; k < len; k++) sb_put(t, '-');
        return len;
    case R_LDOTS: sb_puts(t, "..."); return len;
    case R_ASTS:
    case R_SLASH:
        for (int k = 0; k < len; k++) {
            uint32_t c = at(s, i + k);
            if (c == '\\') continue;
            sb_put(t, '\\');
            sb_put(t, c);
        }
        return len;
    case R_CURRENCY: {
        uint32_t c = at(s, i);
        sb_puts(t, c == 0xA2 ? "cents" : c == 0xA3 ? "#" : "$");
        return len;
    }
    case R_REDAUX:
    case R_SREDAUX:
        for (int k = 0; k < len; k++) {
            uint32_t c = at(s, i + k);
            sb_put(t, (is_apos_etc(c)) ? '\'' : c);
        }
        return len;
    default: break;
    }
    for (int k = 0; k < len; k++) {
        uint32_t c = at(s, i + k);
        if (c == 0xAD) continue; /* soft hyphens removed */
        if ((r == R_DATE || r == R_FRAC) && c == '/') { sb_put(t, '\\'); sb_put(t, '/'); continue; }
        if (r == R_FRAC && c == ' ') c = 0xA0;
        if ((r == R_THING || r == R_APOWORD) && is_apos_etc(c)) c = '\'';
        if (r == R_THING && c == '/') { sb_put(t, '\\'); sb_put(t, '/'); continue; }
        sb_put(t, c);
    }
    return len;
}

/* Finds the rule and length of the longest match at i (ties: lower rule number). */
static int scan_one(const scan *s, int i, int *rule) {
    /* JFlex counts trailing context (r/ctx) in the match length, then gives the context back. */
    int best = 0, take = 0, r = R_NONE;
#define TRY2(total_expr, take_expr, rr)                             \
    do {                                                            \
        int l_ = (total_expr);                                      \
        if (l_ > best) best = l_, take = (take_expr), r = (rr);     \
    } while (0)
#define TRY(len_expr, rr)                                           \
    do {                                                            \
        int l2_ = (len_expr);                                       \
        TRY2(l2_, l2_, rr);                                         \
    } while (0)
    uint32_t c = at(s, i);
    TRY2(match_ci(s, i, "cannot"), 3, R_CANNOT);
    TRY((c == 0x96 || c == 0x97 || (c >= 0x2013 && c <= 0x2015)) ? 1 : 0, R_DASH);
    {
        int w = m_word(s, i);
        if (w && (m_redaux(s, i + w))) TRY2(w + m_redaux(s, i + w), w, R_WORD_REDAUX);
    }
    {
        int w = m_sword_nt(s, i);
        if (w) TRY2(w + 3, w, R_SWORD_NT);
    }
    TRY(m_word(s, i), R_WORD);
    TRY(m_apoword(s, i), R_APOWORD);
    /* APOWORD2 y'/letter: "y'" of y'all, with the letter as trailing context */
    TRY2((lower_ascii(c) == 'y' && is_apos(at(s, i + 1)) && is_letter(at(s, i + 2))) ? 3 : 0, 2, R_APOWORD);
    {
        int l = m_redaux(s, i);
        if (l && i + l < s->n && !is_alpha_ascii(at(s, i + l))) TRY2(l + 1, l, R_REDAUX);
    }
    TRY(m_sredaux(s, i), R_SREDAUX);
    TRY(m_date(s, i), R_DATE);
    TRY(m_number(s, i), R_NUMBER);
    TRY(m_frac(s, i), R_FRAC);
    {
        static const char *const tb[] = {"-rrb-", "-lrb-", "-rcb-", "-lcb-", "-rsb-", "-lsb-", "pro-", "anti-", NULL};
        if (c == '-' || c == 'p' || c == 'P' || c == 'a' || c == 'A')
            for (int k = 0; tb[k]; k++) TRY(match_ci(s, i, tb[k]), R_TBSPEC);
    }
    {
        int j = i;
        while (is_upper_ascii(at(s, j))) j++;
        TRY(at(s, j) == '$' ? j + 1 - i : 0, R_DOLSIGN);
        TRY(c == '#' ? 1 : 0, R_DOLSIGN);
    }
    TRY((c == 0xA2 || c == 0xA3 || c == 0xA4 || c == 0xA5 || c == 0x80 || c == 0x20A0 || c == 0x20AC ||
         c == 0x60B || c == 0xE3F || c == 0x20A4 || c == 0xFFE0 || c == 0xFFE1 || c == 0xFFE5 || c == 0xFFE6)
            ? 1 : 0, R_CURRENCY);
    TRY(m_abbrev_list(s, i, ABBREV1), R_ABBREV1);
    TRY(m_abbrev2(s, i), R_ABBREV2);
    {
        int w = m_word(s, i);
        uint32_t d = at(s, i + w + 1);
        if (w && at(s, i + w) == '.' && (d == ',' || d == ';' || d == ':' || d == 0x3001)) TRY2(w + 2, w + 1, R_WORD_DOT);
    }
    TRY(c == '"' ? 1 : 0, R_DBLQUOT);
    TRY((c == '(' || c == ')' || c == '[' || c == ']' || c == '{' || c == '}' || c == '<' || c == '>') ? 1 : 0,
        R_BRACKET);
    {
        int j = i;
        while (at(s, j) == '-') j++;
        TRY(j - i, R_HYPHENS);
        j = i;
        while (at(s, j) == '.') j++;
        if (j - i >= 3) TRY(j - i > 5 ? 5 : j - i, R_LDOTS);
        if (c == '.' && at(s, i + 1) == ' ' && at(s, i + 2) == '.' && at(s, i + 3) == ' ' && at(s, i + 4) == '.')
            TRY(5, R_LDOTS);
        TRY((c == 0x2026 || c == 0x85) ? 1 : 0, R_LDOTS);
        j = i;
        if (c == '@' || c == '#' || c == '_')
            while (at(s, j) == c) j++;
        TRY(j - i, R_FNMARKS);
        j = i;
        while (at(s, j) == '*') j++;
        TRY(j - i, R_ASTS);
        TRY((c == ',' || c == ';' || c == ':' || c == 0x3001) ? 1 : 0, R_INSENTP);
        j = i;
        while (at(s, j) == '?' || at(s, j) == '!') j++;
        TRY(j - i, R_QBANG);
        TRY((c == '.' || c == 0xBF || c == 0xA1 || c == 0x3002) ? 1 : 0, R_PERIOD);
        TRY(c == '/' ? 1 : 0, R_SLASH);
    }
    {
        int h = m_hthing(s, i), t = m_thing(s, i);
        uint32_t dh = at(s, i + h + 1), dt = at(s, i + t + 1);
        if (h && at(s, i + h) == '.' && (dh == ',' || dh == ';' || dh == ':')) TRY2(h + 2, h + 1, R_HTHING);
        TRY(h, R_HTHING);
        if (t && at(s, i + t) == '.' && (dt == ',' || dt == ';' || dt == ':')) TRY2(t + 2, t + 1, R_THING);
        TRY(t, R_THING);
    }
    TRY(m_thinga(s, i), R_THINGA);
    if (is_quote_char(c)) TRY(is_quote_char(at(s, i + 1)) ? 2 : 1, R_QUOTES);
    TRY(m_redaux(s, i), R_REDAUX);
    TRY(1, R_OTHER);
#undef TRY
#undef TRY2
    *rule = r;
    return take;
}

int ac_tokenize(const char *text, ac_tokens *out, ac_err *err) {
    out->n = 0;
    out->tok = NULL;
    if (!text) return ac_errf(err, "caption: NULL text");
    size_t nb = strlen(text);
    ac_limits lim = ac_limits_get();
    if (nb > lim.max_caption_bytes)
        return ac_errf(err, "caption of %zu bytes is over the limit of %llu (raise ATTNCAP_MAX_CAPTION_BYTES)",
                       nb, (unsigned long long)lim.max_caption_bytes);
    uint32_t *cps = ac_malloc((nb + 1) * sizeof *cps);
    if (!cps) return ac_errf(err, "caption: out of memory") - 1; /* -2: not the caption's fault */
    size_t bad = 0;
    int n = utf8_decode((const unsigned char *)text, nb, cps, &bad);
    if (n < 0) {
        free(cps);
        return ac_errf(err, "caption is not valid UTF-8 (byte %zu: 0x%02x)", bad, (unsigned char)text[bad]);
    }
    scan s = {cps, n};
    sbuf t = {0};
    int cap = 0;
    int i = 0;
    while (i < n) {
        if (is_space(cps[i])) { i++; continue; }
        int rule;
        int len = scan_one(&s, i, &rule);
        int used = emit(&s, i, len, rule, &t);
        if (t.failed || (t.n && push_token(out, &cap, &t) < 0)) {
            free(t.p);
            free(cps);
            ac_tokens_free(out);
            return ac_errf(err, "caption: out of memory") - 1;
        }
        /* ABBREV1 at a sentence end also yields a '.' token in the lexer: it is removed anyway. */
        i += used;
    }
    free(t.p);
    free(cps);
    return 0;
}

void ac_tokens_free(ac_tokens *t) {
    if (!t) return;
    for (int i = 0; i < t->n; i++) free(t->tok[i]);
    free(t->tok);
    t->tok = NULL;
    t->n = 0;
}

char *ac_tokens_join(const ac_tokens *t) {
    size_t n = 1;
    for (int i = 0; i < t->n; i++) n += strlen(t->tok[i]) + 1;
    char *s = ac_malloc(n), *p = s;
    if (!s) return NULL;
    for (int i = 0; i < t->n; i++) {
        size_t l = strlen(t->tok[i]);
        if (i) *p++ = ' ';
        memcpy(p, t->tok[i], l);
        p += l;
    }
    *p = 0;
    return s;
}
