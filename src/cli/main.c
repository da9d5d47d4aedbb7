/* attncap: the command-line tool. A thin dispatcher over libattncap. */
#include <stdio.h>
#include <string.h>

#include "attncap/version.h"
#include "cleanup.h"
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
    {"ground", cmd_ground, "score where the attention for a word falls against hand-drawn boxes"},
    {"features", cmd_features, "extract annotation vectors of many photos into a feature cache"},
    {"classify", cmd_classify, "run a TFLite ImageNet classifier on photos"},
    {"info", cmd_info, "list a TFLite model's ops, tensors, shapes and quantization"},
};

enum { N_COMMANDS = sizeof commands / sizeof *commands };

static void usage(FILE *f) {
    fprintf(f, "attncap %s: image captioning with visual attention (Show, Attend and Tell)\n\n"
               "usage: attncap COMMAND [options]   (attncap help COMMAND, or attncap COMMAND --help, for each)\n"
               "       attncap --version\n\ncommands:\n", AC_VERSION);
    for (int i = 0; i < N_COMMANDS; i++) fprintf(f, "  %-10s %s\n", commands[i].name, commands[i].summary);
    fprintf(f, "\nOptions take their value as the next argument or after '=' (--beam 3, --beam=3).\n"
               "man attncap has them all; the environment variables are listed there too.\n");
}

static int find_command(const char *name) {
    for (int i = 0; i < N_COMMANDS; i++)
        if (!strcmp(name, commands[i].name)) return i;
    return -1;
}

int main(int argc, char **argv) {
    if (argc < 2 || !strcmp(argv[1], "--help") || !strcmp(argv[1], "-h") || (!strcmp(argv[1], "help") && argc == 2)) {
        usage(argc < 2 ? stderr : stdout);
        return argc < 2 ? 2 : 0;
    }
    if (!strcmp(argv[1], "--version") || !strcmp(argv[1], "-V")) {
        printf("attncap %s\n", AC_VERSION);
        return 0;
    }
    if (!strcmp(argv[1], "help")) { /* attncap help CMD: CMD's --help */
        const int c = find_command(argv[2]);
        if (c < 0 || argc > 3) {
            fprintf(stderr, "attncap help: %s '%s' (try attncap --help)\n", c < 0 ? "unknown command" : "unexpected argument",
                    c < 0 ? argv[2] : argv[3]);
            return 2;
        }
        char *help_argv[] = {argv[2], "--help", NULL};
        return commands[c].run(2, help_argv);
    }
    const int c = find_command(argv[1]);
    cli_cleanup_install();
    if (c >= 0) return commands[c].run(argc - 1, argv + 1);
    fprintf(stderr, "attncap: unknown command '%s' (try attncap --help)\n", argv[1]);
    return 2;
}
