/* captioner_debug.c: experiments on a captioner's attention (captioner_debug.h), over the decoder's
 * switches of decoder.h. */
#include "attncap/captioner_debug.h"

#include "attncap/captioner.h"

int ac_captioner_debug_attention(ac_captioner *c, int head, const char *hard_context, const char *fix_attention,
                                 ac_err *err) {
    if (head > 0 && ac_decoder_show_head(&c->model.dec, head, err)) return -1;
    if (hard_context && ac_decoder_hard_context(&c->model.dec, hard_context, err)) return -1;
    if (fix_attention && ac_decoder_fix_attention(&c->model.dec, fix_attention, err)) return -1;
    return 0;
}
