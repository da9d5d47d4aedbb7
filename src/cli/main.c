/* attncap: the command-line tool. A thin dispatcher over libattncap. */
#include <stdio.h>
#include <string.h>

#include "commands.h"

static const struct {
    const char *name;
    int (*run)(int, char **);
    const char *summary;
} commands[] = {
    {"caption", cmd_caption, "caption photos; per-word attention overlays and contact sheets"},
    {"eval", cmd_eval, "score captions with BLEU-1..4, METEOR, ROUGE-L, CIDEr-D (coco-caption)"},
    {"train", cmd_train, "train a soft-attention decoder on captioned photos"},
    {"tune", cmd_tune, "choose beam width and length normalisation on held-out photos"},
    {"calibrate", cmd_calibrate, "fit the confidence of a model's captions on photos with references"},
    {"ground", cmd_ground, "score where the attention for a word falls against hand-drawn boxes"},
    {"features", cmd_features, "extract annotation vectors of many photos into a feature cache"},
    {"classify", cmd_classify, "run a TFLite ImageNet classifier on photos"},
    {"info", cmd_info, "list a TFLite model's ops, tensors, shapes and quantization"},
};

static void usage(FILE *f) {
    fprintf(f, "attncap: image captioning with visual attention (Show, Attend and Tell)\n\n"
               "usage: attncap COMMAND [options]   (attncap COMMAND --help for each)\n\ncommands:\n");
    for (size_t i = 0; i < sizeof commands / sizeof *commands; i++)
        fprintf(f, "  %-10s %s\n", commands[i].name, commands[i].summary);
}

int main(int argc, char **argv) {
    if (argc < 2 || !strcmp(argv[1], "--help") || !strcmp(argv[1], "-h") || !strcmp(argv[1], "help")) {
        usage(argc < 2 ? stderr : stdout);
        return argc < 2 ? 2 : 0;
    }
    for (size_t i = 0; i < sizeof commands / sizeof *commands; i++)
        if (!strcmp(argv[1], commands[i].name)) return commands[i].run(argc - 1, argv + 1);
    fprintf(stderr, "attncap: unknown command '%s' (try attncap --help)\n", argv[1]);
    return 2;
}
