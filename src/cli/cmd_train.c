/* attncap train: train a soft-attention decoder on a captioned-photo set and its feature cache. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "attncap/train.h"
#include "commands.h"

static void usage(FILE *f) {
    ac_train_opts d;
    ac_train_defaults(&d);
    fprintf(f,
            "usage: attncap train --data SPEC --features CACHE --out MODEL.safetensors [options]\n\n"
            "  --data SPEC          Flickr8k dir, COCO/Karpathy .json, or .tsv/.csv of image<TAB>caption\n"
            "  --images DIR         photo folder (if not the dataset's default)\n"
            "  --features CACHE     feature cache dir from `attncap features` (\"#flip\" keys = augmentation)\n"
            "  --out MODEL          best model by the validation score (checkpoint: MODEL.ckpt)\n"
            "  --epochs N           max epochs (%d)\n"
            "  --batch B            captions per step (%d)\n"
            "  --lr X               Adam learning rate (%g)\n"
            "  --embed E --hidden H --att A   sizes (%d, %d, %d)\n"
            "  --dropout P          (%g)\n"
            "  --lambda L           doubly stochastic attention penalty (%g)\n"
            "  --min-count N        vocabulary threshold (%d)\n"
            "  --clip G             gradient norm clip, 0 = off (%g)\n"
            "  --weight-decay W     L2 (%g)\n"
            "  --ema D              validate and save an exponential moving average of the weights,\n"
            "                       decay D per step, e.g. 0.999 (off)\n"
            "  --patience N         evaluations without improvement before stopping (%d)\n"
            "  --lr-decay F         learning-rate factor on plateau (%g)\n"
            "  --lr-patience N      evaluations without improvement before each decay (%d)\n"
            "  --eval-every N       steps between evaluations (default: once per epoch)\n"
            "  --checkpoint-every N steps between checkpoints (%d)\n"
            "  --resume             continue from MODEL.ckpt exactly\n"
            "  --val-metric M       cider, bleu4 or loss (cider when the metrics are built)\n"
            "  --beam K             beam size for validation captions (%d)\n"
            "  --max-val N          validation photos (all)\n"
            "  --max-train N        only the first N training captions (all)\n"
            "  --max-words N        skip longer training captions (%d)\n"
            "  --no-flip            ignore \"#flip\" features\n"
            "  --no-group           batches of random captions instead of whole photos (all their captions)\n"
            "  --fp16               store the model in float16\n"
            "  --seed S             (%llu)\n"
            "  --max-steps N        stop after N steps in total\n"
            "  --log CSV --plot PNG training curves\n"
            "  --shards N           batch shards computed in parallel (%d; changes the arithmetic)\n"
            "  --threads N          threads (default: cores or $ATTNCAP_THREADS)\n"
            "  --quiet\n",
            d.epochs, d.batch, d.lr, d.embed, d.hidden, d.att, d.dropout, d.lambda, d.min_count, d.clip,
            d.weight_decay, d.patience, d.lr_decay, d.lr_patience, d.checkpoint_every, d.beam, d.max_words, d.seed, d.shards);
}

static int num(const char *flag, const char *s, double lo, double hi, double *out) {
    char *end;
    double v = strtod(s, &end);
    if (end == s || *end || !(v >= lo && v <= hi)) {
        fprintf(stderr, "attncap train: %s: '%s' is not a number in [%g, %g]\n", flag, s, lo, hi);
        return -1;
    }
    *out = v;
    return 0;
}

int cmd_train(int argc, char **argv) {
    ac_train_opts o;
    ac_train_defaults(&o);
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
            usage(stdout);
            return 0;
        }
        if (!strcmp(a, "--resume")) { o.resume = 1; continue; }
        if (!strcmp(a, "--quiet")) { o.quiet = 1; continue; }
        if (!strcmp(a, "--no-flip")) { o.flip = 0; continue; }
        if (!strcmp(a, "--flip")) { o.flip = 1; continue; }
        if (!strcmp(a, "--fp16")) { o.fp16 = 1; continue; }
        if (!strcmp(a, "--no-group")) { o.group = 0; continue; }
        if (i + 1 >= argc || strncmp(a, "--", 2)) {
            fprintf(stderr, "attncap train: unknown option or missing value: '%s' (see --help)\n", a);
            return 2;
        }
        const char *v = argv[++i];
        double x;
#define STR(name, field) if (!strcmp(a, name)) { o.field = v; continue; }
#define NUM(name, field, lo, hi, type) if (!strcmp(a, name)) { if (num(a, v, lo, hi, &x)) return 2; o.field = (type)x; continue; }
        STR("--data", data) STR("--images", image_dir) STR("--features", features) STR("--out", out)
        STR("--log", log_csv) STR("--plot", plot_png) STR("--val-metric", val_metric)
        NUM("--epochs", epochs, 0, 100000, int) NUM("--batch", batch, 1, 4096, int) NUM("--lr", lr, 1e-9, 1, float)
        NUM("--embed", embed, 1, 8192, int) NUM("--hidden", hidden, 1, 8192, int) NUM("--att", att, 1, 8192, int)
        NUM("--dropout", dropout, 0, 0.99, float) NUM("--lambda", lambda, 0, 1e5, float)
        NUM("--min-count", min_count, 1, 1e9, int) NUM("--clip", clip, 0, 1e9, float)
        NUM("--weight-decay", weight_decay, 0, 1, float) NUM("--ema", ema, 0, 0.999999, float) NUM("--patience", patience, 1, 1e6, int)
        NUM("--lr-decay", lr_decay, 0.01, 1, float) NUM("--lr-patience", lr_patience, 1, 1e6, int) NUM("--eval-every", eval_every, 0, 1e9, int)
        NUM("--checkpoint-every", checkpoint_every, 0, 1e9, int) NUM("--beam", beam, 1, 100, int)
        NUM("--max-val", max_val, 0, 1e9, int) NUM("--max-train", max_train, 0, 1e9, int)
        NUM("--max-words", max_words, 1, 1000, int) NUM("--seed", seed, 0, 9e15, unsigned long long)
        NUM("--max-steps", max_steps, 0, 1e12, int)
        NUM("--shards", shards, 1, 64, int) NUM("--threads", threads, 1, 256, int)
#undef STR
#undef NUM
        fprintf(stderr, "attncap train: unknown option '%s' (see --help)\n", a);
        return 2;
    }
    if (!o.data || !o.features || !o.out) {
        fprintf(stderr, "attncap train: --data, --features and --out are required (see --help)\n");
        return 2;
    }
    ac_err err;
    if (ac_train(&o, &err)) {
        fprintf(stderr, "attncap train: %s\n", err.msg);
        return 1;
    }
    return 0;
}
