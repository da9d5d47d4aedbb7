/* attncap/tokenize.h: not part of the stable API; may change in any release (the stable core: attncap.h). */
/* attncap/tokenize.h: the one tokenizer of training and evaluation. It reproduces coco-caption's
 * Stanford PTBTokenizer 3.4.1 with -lowerCase, followed by removal of the punctuation tokens
 * '' ' `` ` -LRB- -RRB- -LCB- -RCB- . ? ! , : - -- ... ; . UTF-8 safe: non-ASCII letters are
 * kept intact (lowercased where ASCII only... see tokenize.c for the exact rules). */
#ifndef ATTNCAP_TOKENIZE_H
#define ATTNCAP_TOKENIZE_H
#include "attncap/common.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct ac_tokens {
    int n;
    char **tok; /* n malloc'd strings */
} ac_tokens;

/* Tokenizes one caption. Returns 0; -1 on invalid UTF-8 / over-long input (message in err: a caller
 * reading many captions may skip this one); -2 when out of memory (message in err: the caller's
 * failure, never a caption to skip). */
int ac_tokenize(const char *text, ac_tokens *out, ac_err *err);
void ac_tokens_free(ac_tokens *t);
/* The tokens joined by single spaces (malloc'd): the normalised caption coco-caption scores. */
char *ac_tokens_join(const ac_tokens *t);
#ifdef __cplusplus
}
#endif
#endif
