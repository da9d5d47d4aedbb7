/* Tokenizer tests: expected outputs are what coco-caption's PTBTokenizer 3.4.1 -lowerCase plus its
 * punctuation filter produce for these inputs (PTB conventions: contractions split, n't kept,
 * hyphenated words and numbers whole, "/" escaped, brackets -> -lrb- ...). */
#include "attncap/tokenize.h"
#include "test.h"

#include <stdlib.h>

static int tok_eq(const char *in, const char *want) {
    ac_tokens t;
    ac_err e;
    if (ac_tokenize(in, &t, &e)) { printf("  error on '%s': %s\n", in, e.msg); return 0; }
    char *j = ac_tokens_join(&t);
    int ok = !strcmp(j, want);
    if (!ok) printf("  '%s'\n    got  '%s'\n    want '%s'\n", in, j, want);
    free(j);
    ac_tokens_free(&t);
    return ok;
}

static void test_basic(void) {
    CHECK(tok_eq("A man with a red helmet on a small moped on a dirt road.",
                 "a man with a red helmet on a small moped on a dirt road"));
    CHECK(tok_eq("A clean, spacious bathroom; with a shower!", "a clean spacious bathroom with a shower"));
    CHECK(tok_eq("", ""));
    CHECK(tok_eq("   \t ", ""));
    CHECK(tok_eq("Is it?  Yes...", "is it yes"));
}

static void test_contractions(void) {
    CHECK(tok_eq("A cat eating a banana from someone's hand", "a cat eating a banana from someone 's hand"));
    CHECK(tok_eq("don't can't won't cannot", "do n't ca n't wo n't can not"));
    CHECK(tok_eq("you're they'll I'm I'd we've", "you 're they 'll i 'm i 'd we 've"));
    CHECK(tok_eq("It\xe2\x80\x99s the dogs' toy", "it 's the dogs toy"));
    CHECK(tok_eq("at five o'clock", "at five o'clock"));
    CHECK(tok_eq("rock'n'roll with 'em in the '90s, ma'am", "rock 'n' roll with 'em in the '90s ma'am"));
    CHECK(tok_eq("Y'all eat s'mores", "y' all eat s'mores"));
}

static void test_numbers_hyphens(void) {
    CHECK(tok_eq("a clock saying it is 12:45", "a clock saying it is 12:45"));
    CHECK(tok_eq("1,000 people and 3.5 dogs", "1,000 people and 3.5 dogs"));
    CHECK(tok_eq("a well-dressed man in a t-shirt", "a well-dressed man in a t-shirt"));
    CHECK(tok_eq("a 3.5-inch screen from the 1950s", "a 3.5-inch screen from the 1950s"));
    CHECK(tok_eq("a man -- running - fast", "a man running fast"));
    CHECK(tok_eq("one\xe2\x80\x94two", "one two"));
}

static void test_quotes_brackets_slashes(void) {
    CHECK(tok_eq("the \"Tunnel\" sign", "the tunnel sign"));
    CHECK(tok_eq("a sign that says\" i love new york\"", "a sign that says i love new york"));
    CHECK(tok_eq("\xe2\x80\x9cHi\xe2\x80\x9d `yo'", "hi yo"));
    /* -lowerCase turns -LRB- into -lrb-, which coco-caption's upper-case filter keeps */
    CHECK(tok_eq("a two-door (top and bottom) fridge", "a two-door -lrb- top and bottom -rrb- fridge"));
    CHECK(tok_eq("Red/yellow train, and / or", "red\\/yellow train and \\/ or"));
    CHECK(tok_eq("on 9/11 and 12/25/2010", "on 9\\/11 and 12\\/25\\/2010"));
    CHECK(tok_eq("black & white M&Ms", "black & white m&m s"));
}

static void test_abbreviations(void) {
    CHECK(tok_eq("Mr. Smith and Dr. Who on St. Mark", "mr. smith and dr. who on st. mark"));
    CHECK(tok_eq("cats, dogs, etc. are here", "cats dogs etc. are here"));
    CHECK(tok_eq("in the U.S. at 5 a.m. today", "in the u.s. at 5 a.m. today"));
    CHECK(tok_eq("The road ends.", "the road ends"));
    CHECK(tok_eq("grey colour theatre", "grey colour theatre"));
}

static void test_utf8(void) {
    CHECK(tok_eq("M\xe1\xbb\x99t ng\xc6\xb0\xe1\xbb\x9di \xc4\x90\xc3\x80N \xc3\xb4ng .",
                 "m\xe1\xbb\x99t ng\xc6\xb0\xe1\xbb\x9di \xc4\x91\xc3\xa0n \xc3\xb4ng"));
    CHECK(tok_eq("Caf\xc3\xa9 na\xc3\xafve \xc3\x89" "COLE", "caf\xc3\xa9 na\xc3\xafve \xc3\xa9" "cole"));
    ac_tokens t;
    ac_err e;
    CHECK(ac_tokenize("bad \xc3 byte", &t, &e) == -1);
    CHECK(strstr(e.msg, "UTF-8") != NULL);
    CHECK(ac_tokenize("overlong \xc0\xaf", &t, &e) == -1);
    CHECK(ac_tokenize("surrogate \xed\xa0\x80", &t, &e) == -1);
    char *big = malloc(5000);
    memset(big, 'a', 4999);
    big[4999] = 0;
    CHECK(ac_tokenize(big, &t, &e) == -1);
    free(big);
    CHECK(strstr(e.msg, "ATTNCAP_MAX_CAPTION_BYTES") != NULL);
}

/* Every line of the Vietnamese set tokenizes, and tokens never split a multibyte sequence. */
static void test_vi_file(void) {
    const char *p = test_shared("data/vi/captions.tsv");
    if (!p) SKIP("needs ../shared/data/vi/captions.tsv");
    FILE *f = fopen(p, "rb");
    CHECK(f);
    char line[8192];
    int n = 0, bad = 0;
    while (fgets(line, sizeof line, f)) {
        char *tab = strchr(line, '\t');
        if (!tab) continue;
        line[strcspn(line, "\r\n")] = 0;
        ac_tokens t;
        ac_err e;
        if (ac_tokenize(tab + 1, &t, &e)) { bad++; continue; }
        for (int i = 0; i < t.n; i++) {
            if (strchr(t.tok[i], 0x5c)) continue; /* escaped slashes are not idempotent */
            ac_tokens t2;
            if (ac_tokenize(t.tok[i], &t2, &e) || t2.n != 1 || strcmp(t2.tok[0], t.tok[i])) bad++;
            ac_tokens_free(&t2);
        }
        ac_tokens_free(&t);
        n++;
    }
    fclose(f);
    CHECKF(bad == 0, "%d bad of %d", bad, n);
    CHECK(n > 10000);
}

int main(void) {
    RUN(test_basic);
    RUN(test_contractions);
    RUN(test_numbers_hyphens);
    RUN(test_quotes_brackets_slashes);
    RUN(test_abbreviations);
    RUN(test_utf8);
    RUN(test_vi_file);
    return TEST_EXIT();
}
