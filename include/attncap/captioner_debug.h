/* attncap/captioner_debug.h: not part of the stable API; may change in any release (the stable core:
 * attncap.h). Experiments on a captioner's attention, for people studying the model (`attncap caption
 * --head --hard-context --fix-attention`), kept out of the core on purpose: they change what the
 * model computes, name its internals (heads, hard attention's context) and exist for research, not for
 * captioning photos. One call, so that a program that only captions needs nothing of the decoder. */
#ifndef ATTNCAP_CAPTIONER_DEBUG_H
#define ATTNCAP_CAPTIONER_DEBUG_H
#include "attncap/attncap.h"

#ifdef __cplusplus
extern "C" {
#endif

/* From the next caption on (c not captioning meanwhile), each that is asked for:
 *  - head > 0: a model with attention heads shows head `head` (1 .. heads) instead of their mean (0:
 *    left as it is); the words do not change;
 *  - hard_context (NULL: left as it is): a hard-attention model decodes with "argmax" (its default)
 *    or "expected" (the expected context, the soft step);
 *  - fix_attention (NULL: left as it is): "uniform", "peak" or "model" replaces the weights the step
 *    uses (decoder.h: ac_decoder_fix_attention).
 * Applied in that order; the first refused (a head the model lacks, a soft model asked for a hard
 * context, an unknown name) fails the call with the decoder's message, the ones before it applied. */
int ac_captioner_debug_attention(ac_captioner *c, int head, const char *hard_context, const char *fix_attention,
                                 ac_err *err);
#ifdef __cplusplus
}
#endif
#endif
