/* fuzz/fuzz_tokenize.c: libFuzzer target for the tokenizer (PTB rules over arbitrary bytes: UTF-8
 * checks, contractions, punctuation removal), ac_tokens_join, and the vocabulary: a vocabulary built
 * from the tokens, its JSON round trip and encoding; the input also goes to ac_vocab_from_json as a
 * hostile vocabulary; the object matcher on the raw input and on the tokens (objects_in_text must agree
 * with objects_in_tokens of the joined tokens). Seeds: fuzz/corpus/tokenize (captions). Replayed by tests/test_fuzz_regress.c. */
#include "fuzz_main.h"
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "attncap/objects.h"
#include "attncap/tokenize.h"
#include "attncap/vocab.h"

static int fuzz_tokenize(const uint8_t *data, size_t size) {
    char *s = malloc(size + 1);
    if (!s) return 0;
    memcpy(s, data, size);
    s[size] = 0;
    ac_tokens t;
    ac_err err;
    if (ac_tokenize(s, &t, &err) == 0) {
        for (int i = 0; i < t.n; i++)
            if (!t.tok[i][0] || strchr(t.tok[i], ' ')) abort(); /* tokens are non-empty, without spaces */
        char *j = ac_tokens_join(&t);
        if (!j) abort();
        uint8_t by_tokens[AC_N_OBJECTS], by_text[AC_N_OBJECTS];
        int n_obj = ac_objects_in_tokens(j, by_tokens), sum = 0;
        for (int k = 0; k < AC_N_OBJECTS; k++) sum += by_tokens[k] > 1 ? 99 : by_tokens[k];
        if (n_obj != sum || ac_objects_in_text(s, by_text, &err) != n_obj || memcmp(by_text, by_tokens, sizeof by_text))
            abort();
        ac_vocab *v;
        if (ac_vocab_build(&t, 1, 1, &v, &err) == 0) {
            int *ids = malloc(sizeof(int) * (t.n + 1));
            ac_vocab_encode(v, &t, ids);
            for (int i = 0; i < t.n; i++)
                if (ids[i] < 4 || ids[i] >= ac_vocab_size(v) || strcmp(ac_vocab_word(v, ids[i]), t.tok[i])) abort();
            char *js = ac_vocab_to_json(v);
            ac_vocab *v2;
            if (!js || ac_vocab_from_json(js, &v2, &err) != 0 || ac_vocab_size(v2) != ac_vocab_size(v)) abort();
            ac_vocab_free(v2);
            free(js);
            free(ids);
            ac_vocab_free(v);
        } else if (strchr(err.msg, '\n')) {
            abort();
        }
        free(j);
        ac_tokens_free(&t);
    } else if (strchr(err.msg, '\n')) {
        abort();
    }
    uint8_t raw[AC_N_OBJECTS];
    if (ac_objects_in_tokens(s, raw) < 0) abort(); /* any bytes are safe to match */
    ac_vocab *v;
    if (ac_vocab_from_json(s, &v, &err) == 0) {
        for (int i = 0; i < ac_vocab_size(v); i++)
            if (ac_vocab_id(v, ac_vocab_word(v, i)) != i && i >= 4) abort(); /* words are unique */
        ac_vocab_free(v);
    } else if (strchr(err.msg, '\n')) {
        abort();
    }
    free(s);
    return 0;
}

AC_FUZZ_MAIN(fuzz_tokenize, "", "")
