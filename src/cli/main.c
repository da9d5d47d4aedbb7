/* attncap: the command-line tool. A thin dispatcher over libattncap. */
#include <stdio.h>
#include <string.h>

#include "attncap/attncap.h"
#include "cleanup.h"
#include "commands.h"
#include "options.h"

static const struct {
    const char *name;
    int (*run)(int, char **);
    const char *summary;
} commands[] = {
    {"caption", cmd_caption, "caption photos; per-word attention overlays and contact sheets"},
    {"report", cmd_report, "an HTML gallery of a caption run: thumbnails, captions, confidences, sheets"},
    {"eval", cmd_eval, "score captions with BLEU-1..4, METEOR, ROUGE-L, CIDEr-D (coco-caption)"},
    {"train", cmd_train, "train or fine-tune (--init) a decoder, LSTM or transformer, on captioned photos"},
    {"tune", cmd_tune, "choose beam width and length normalisation on held-out photos"},
    {"presence", cmd_presence, "fit which objects a photo shows (person, table...) on captioned photos' features"},
    {"calibrate", cmd_calibrate, "fit the confidence of a model's captions on photos with references"},
    {"ground", cmd_ground, "score where the attention for a word falls against hand-drawn or detected boxes"},
    {"serve", cmd_serve, "an HTTP server and page: caption photos sent to it, show where each word looked"},
    {"features", cmd_features, "extract annotation vectors of many photos into a feature cache"},
    {"detect", cmd_detect, "find COCO objects in photos (boxes, labels, scores; drawn with --draw)"},
    {"classify", cmd_classify, "run a TFLite ImageNet classifier on photos"},
    {"info", cmd_info, "describe a TFLite model (ops, tensors) or a .safetensors file (metadata, vocabulary)"},
};

enum { N_COMMANDS = sizeof commands / sizeof *commands };

/* attncap help data: the data-set formats that train, eval, tune and ground read (src/data/dataset.c). */
static const char help_data[] =
    "usage: attncap help data\n\n"
    "Data sets: the SPEC of --data (attncap train, eval, tune, ground) is one of\n\n"
    "  DIR          a Flickr8k directory: DIR/Flickr8k.token.txt (\"name.jpg#k<TAB>caption\" lines; also\n"
    "               in DIR/Flickr8k_text/) with the split files Flickr_8k.trainImages.txt,\n"
    "               Flickr_8k.devImages.txt and Flickr_8k.testImages.txt beside it (photos they do not\n"
    "               list are in no split); photos in DIR/images, else DIR/Flicker8k_Dataset\n"
    "  FILE.json    COCO captions (\"images\" and \"annotations\") or Karpathy's dataset_*.json\n"
    "               (\"images\" with \"sentences\" and \"split\"); photos in images/ beside FILE\n"
    "  FILE.csv     one caption per line, image,caption or image,caption,split (RFC 4180 quotes)\n"
    "  FILE         any other file name (.tsv, .txt): one caption per line, image<TAB>caption or\n"
    "               image<TAB>caption<TAB>split; photos in images/ beside FILE\n\n"
    "In a TSV or CSV a first line \"image<TAB>caption[<TAB>split]\" is a header, blank lines are\n"
    "skipped, and a photo's lines name the same split or none. A split is train (or restval), val\n"
    "(or dev, valid, validation) or test. In a TSV whose header does not name the split column, a\n"
    "third field that is not a split stays part of the caption.\n\n"
    "Photos without a split (COCO captions JSON; TSV or CSV lines without one; a Flickr8k directory\n"
    "without split files) are split by their file name, the same way every time: h = the 64-bit\n"
    "FNV-1a hash of the name's bytes, h ^= h >> 29, r = h mod 100; r < 90 is train, r < 95 val,\n"
    "else test (90/5/5).\n\n"
    "Photos: a relative image path in the data set is looked up under --images DIR when given, else\n"
    "in the default folder above; an absolute path is used as it is. Feature caches (attncap\n"
    "features) key photos by file name without directory.\n";

static void usage(FILE *f) {
    fprintf(f, "attncap %s: image captioning with visual attention (Show, Attend and Tell)\n\n"
               "usage: attncap COMMAND [options]   (attncap help COMMAND, or attncap COMMAND --help, for each)\n"
               "       attncap --version\n\ncommands:\n", AC_VERSION);
    for (int i = 0; i < N_COMMANDS; i++) fprintf(f, "  %-10s %s\n", commands[i].name, commands[i].summary);
    fprintf(f, "\nattncap help data: data-set formats (--data SPEC), splits, where photos are looked up.\n");
    fprintf(f, "Options take their value as the next argument or after '=' (--beam 3, --beam=3).\n"
               "man attncap has them all; the environment variables are listed there too.\n");
}

static int find_command(const char *name) {
    for (int i = 0; i < N_COMMANDS; i++)
        if (!strcmp(name, commands[i].name)) return i;
    return -1;
}

/* "unknown command 'X' (did you mean Y? try attncap --help)" after the prefix */
static void unknown_command(const char *prefix, const char *name) {
    const char *names[N_COMMANDS + 1];
    for (int i = 0; i < N_COMMANDS; i++) names[i] = commands[i].name;
    names[N_COMMANDS] = "help";
    const char *near = cli_closest(name, names, N_COMMANDS + 1);
    fprintf(stderr, "%s: unknown command '%s' (%s%s%stry attncap --help)\n", prefix, name, near ? "did you mean " : "",
            near ? near : "", near ? "? " : "");
}

/* OpenBLAS's pthreads build starts its worker threads when it loads, and they spin (sched_yield) for
 * about 0.1 s waiting for work: on 2 cores a core's worth of CPU taken from a one-photo caption (its
 * whole process 0.103-0.114 -> 0.095-0.099 s without them, docs/speed.md). Nothing here needs them before a
 * command's own threaded BLAS call (training's), and OpenBLAS starts them again at that call, as it does
 * after a fork (its fork handler calls this function). Weak: another BLAS has no such function. */
extern void blas_thread_shutdown_(void) __attribute__((weak));

int main(int argc, char **argv) {
    if (blas_thread_shutdown_) blas_thread_shutdown_();
    if (argc < 2 || !strcmp(argv[1], "--help") || !strcmp(argv[1], "-h") || (!strcmp(argv[1], "help") && argc == 2)) {
        usage(argc < 2 ? stderr : stdout);
        return argc < 2 ? 2 : 0;
    }
    if (!strcmp(argv[1], "--version") || !strcmp(argv[1], "-V")) {
        printf("attncap %s\n", AC_VERSION);
        return 0;
    }
    if (!strcmp(argv[1], "help") && !strcmp(argv[2], "data") && argc == 3) {
        fputs(help_data, stdout);
        return 0;
    }
    if (!strcmp(argv[1], "help")) { /* attncap help CMD: CMD's --help */
        const int c = find_command(argv[2]);
        if (c < 0 && strcmp(argv[2], "data")) unknown_command("attncap help", argv[2]);
        else if (c < 0 || argc > 3) fprintf(stderr, "attncap help: unexpected argument '%s' (try attncap --help)\n", argv[3]);
        if (c < 0 || argc > 3) return 2;
        char *help_argv[] = {argv[2], "--help", NULL};
        return commands[c].run(2, help_argv);
    }
    const int c = find_command(argv[1]);
    cli_cleanup_install();
    if (c >= 0) return commands[c].run(argc - 1, argv + 1);
    unknown_command("attncap", argv[1]);
    return 2;
}
