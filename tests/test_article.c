/* Indefinite articles (issue #32, 5): ac_article_for over a word list whose articles are English's
 * (by sound, not by letter), and ac_caption_text / ac_caption_word making a caption's "a"/"an" agree
 * with the next word, whichever the model said. */
#include "attncap/beam.h"
#include "attncap/tokenize.h"
#include "attncap/vocab.h"
#include "test.h"

static void test_word_list(void) {
    static const struct { const char *article, *word; } want[] = {
        {"a", "one"}, {"an", "hour"}, {"a", "user"}, {"an", "honest"}, {"a", "unicorn"}, {"an", "orange"},
        {"an", "old"}, {"an", "aircraft"}, {"an", "elephant"}, {"an", "umbrella"}, {"an", "igloo"},
        {"a", "man"}, {"a", "house"}, {"a", "horse"}, {"a", "european"}, {"a", "uniform"}, {"a", "unique"},
        {"a", "university"}, {"a", "utensil"}, {"a", "urinal"}, {"an", "unidentified"}, {"an", "urn"},
        {"an", "honorable"}, {"an", "hourglass"}, {"a", "once-popular"}, {"an", "8"}, {"an", "11"},
        {"an", "18"}, {"an", "80"}, {"a", "10"}, {"a", "1"}, {"a", "yellow"}, {"a", "white"}, {"an", "empty"},
        {"a", "ukulele"}, {"an", "ugly"}, {"an", "ice"}, {"a", "<unk>"}, {"a", ""}};
    for (size_t i = 0; i < sizeof want / sizeof *want; i++)
        CHECKF(!strcmp(ac_article_for(want[i].word), want[i].article), "'%s %s': got '%s'", want[i].article,
               want[i].word, ac_article_for(want[i].word));
}

/* A caption of the vocabulary's words: the text and every shown word agree, "an" corrected too. */
static void test_caption_text(void) {
    const char *caps[] = {"a an man old orange hour one on table"};
    ac_tokens t;
    ac_err e;
    ac_vocab *v = NULL;
    CHECK(ac_tokenize(caps[0], &t, &e) == 0);
    CHECK(ac_vocab_build(&t, 1, 1, &v, &e) == 0);
    ac_tokens_free(&t);
    static const struct { const char *said, *shown; } cases[] = {
        {"a old man on a orange table", "an old man on an orange table"},
        {"an man on an table", "a man on a table"},
        {"a one on an hour", "a one on an hour"},
        {"an old a", "an old a"}, /* the last word has no next word: as said */
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        CHECK(ac_tokenize(cases[i].said, &t, &e) == 0);
        int words[16];
        ac_vocab_encode(v, &t, words);
        ac_caption c = {.n = t.n, .words = words};
        char *s = ac_caption_text(&c, v);
        CHECKF(s && !strcmp(s, cases[i].shown), "'%s' -> '%s', want '%s'", cases[i].said, s ? s : "(null)",
               cases[i].shown);
        /* the same words one by one (JSON tokens, overlay panels) */
        char *p = s;
        for (int k = 0; k < c.n; k++, p += strcspn(p, " "), p += *p == ' ')
            CHECKF(!strncmp(p, ac_caption_word(&c, v, k), strlen(ac_caption_word(&c, v, k))), "word %d of '%s'", k, s);
        free(s);
        ac_tokens_free(&t);
    }
    ac_vocab_free(v);
}

int main(void) {
    RUN(test_word_list);
    RUN(test_caption_text);
    return TEST_EXIT();
}
