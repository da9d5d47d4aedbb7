/* attncap info: what a TFLite model (its inputs, outputs, operators and tensors: to choose --layer) or a
 * safetensors file (our models, checkpoints and feature shards: metadata and tensors) holds, as the
 * core's ac_describe_file describes it. */
#include <stdio.h>

#include "attncap/attncap.h"
#include "commands.h"
#include "messages.h"
#include "options.h"

static void usage(FILE *f) {
    fprintf(f, "usage: attncap info [--ops|--tensors] MODEL.tflite|FILE.safetensors\n\n"
               "For a TFLite model: its inputs and outputs, its operators (with strides, padding and fused\n"
               "activation) and its tensors (shape, type, quantization). A tensor name can be passed to\n"
               "`attncap features --layer NAME`.\n"
               "For a safetensors file (an attncap model, checkpoint or feature shard): its metadata (the\n"
               "model's configuration, encoder, training record and decoding setting; the vocabulary's\n"
               "size) and its tensors. Only the header is read.\n\n"
               "  --ops       only the operators (TFLite) or the metadata (safetensors)\n"
               "  --tensors   only the tensors\n"
               "  --vocab     a model's vocabulary, one word per line in id order, with its counts in the\n"
               "              captioned photos and in the captions without photos it was trained on\n"
               "              (WORD<TAB>PAIRED<TAB>TEXT; counts empty if the model does not record them)\n");
}

int cmd_info(int argc, char **argv) {
    int ops = 1, tensors = 1, vocab = 0;
    const cli_opt opts[] = {
        OPT_FLAG("--vocab", NULL, &vocab),
        OPT_UNSET("--ops", &tensors), /* only the operators */
        OPT_UNSET("--tensors", &ops), /* only the tensors */
        OPT_END,
    };
    const int n_args = cli_parse("info", argc, argv, opts, 1, usage);
    if (n_args < 0) return n_args == CLI_HELP ? 0 : 2;
    if (n_args != 1) {
        fprintf(stderr, "attncap info: missing MODEL.tflite or FILE.safetensors (try --help)\n");
        return 2;
    }
    const unsigned flags = (ops ? 0 : AC_DESCRIBE_NO_OPS) | (tensors ? 0 : AC_DESCRIBE_NO_TENSORS) |
                           (vocab ? AC_DESCRIBE_VOCAB : 0);
    char *text;
    ac_err err;
    if (ac_describe_file(argv[1], flags, &text, &err)) {
        fprintf(stderr, "attncap info: %s%s\n", err.msg, vocab ? "" : cli_hint(&err));
        return 1;
    }
    fputs(text, stdout);
    ac_free(text);
    return 0;
}
