/* article.c: the indefinite article a caption's next word takes (beam.h, ac_article_for). */
#include "attncap/beam.h"

#include <ctype.h>
#include <string.h>

static int starts(const char *w, const char *prefix) { return !strncmp(w, prefix, strlen(prefix)); }

/* Words spelt with a vowel letter but said with a consonant sound (y-, w-): "a one", "a user",
 * "a unicorn", "a european". */
static int vowel_letter_consonant_sound(const char *w) {
    static const char *const pre[] = {"one", "once", "eu", "ewe", "use", "usu", "uti", "ute", "uto", "ura", "ure",
                                      "uri", "uro", "uku", "ubiq", "ufo", "uvu"};
    for (size_t i = 0; i < sizeof pre / sizeof *pre; i++)
        if (starts(w, pre[i])) return 1;
    /* uni- said "yoo-ni" (unicorn, uniform, union, unique, unit, universe, unicycle, unisex) but not
     * the negating un- (unidentified, unimpressed, uninterested) */
    return starts(w, "uni") && w[3] && strchr("cfoqstv", w[3]);
}

/* Words spelt with a consonant letter but said with a vowel sound: a silent h ("an hour", "an
 * honest"), and numbers said with a vowel ("an 8", "an 11", "an 18", "an 80"). */
static int consonant_letter_vowel_sound(const char *w) {
    static const char *const pre[] = {"hour", "honest", "honor", "honour", "heir"};
    for (size_t i = 0; i < sizeof pre / sizeof *pre; i++)
        if (starts(w, pre[i])) return 1;
    if (w[0] == '8') return 1;
    size_t digits = strspn(w, "0123456789");
    /* 11 and 18, and 11,000-style thousands: "an eleven ...", "an eighteen ..." */
    return (starts(w, "11") || starts(w, "18")) && (digits == 2 || digits == 5);
}

const char *ac_article_for(const char *next) {
    if (!next || !*next) return "a";
    const char c = (char)tolower((unsigned char)next[0]);
    const int vowel = c && strchr("aeiou", c);
    if (vowel) return vowel_letter_consonant_sound(next) ? "a" : "an";
    return consonant_letter_vowel_sound(next) ? "an" : "a";
}
