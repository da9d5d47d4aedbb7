/* attncap train: train a decoder (soft-attention LSTM or transformer) on a captioned-photo set and its
 * feature cache. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "attncap/train.h"
#include "cleanup.h"
#include "commands.h"
#include "messages.h"
#include "options.h"
#include "progress.h"
#include "train_view.h"

static void usage(FILE *f) {
    ac_train_opts d;
    ac_train_defaults(&d);
    fprintf(f,
            "usage: attncap train --data SPEC --features CACHE --out MODEL.safetensors [options]\n\n"
            "First cache the photos' features (the encoder runs once per photo, not once per epoch):\n"
            "  attncap features --encoder ENC.tflite --size 448 --fp16 --flip --out CACHE PHOTOS...\n"
            "Photos without features are left out (counted in a warning). The defaults are the shipped\n"
            "model's recipe (models/README.md).\n\n"
            "  --data SPEC          Flickr8k dir, COCO/Karpathy .json, or .tsv/.csv of image<TAB>caption\n"
            "  --images DIR         photo folder (if not the dataset's default)\n"
            "  --features CACHE     feature cache dir from `attncap features` (\"#flip\" keys = augmentation)\n"
            "  --extra-data SPECS   more captioned photos, comma-separated; all of their photos train\n"
            "  --text SPECS         captions without photos (datasets, comma-separated): each step adds a batch\n"
            "                       of them with a learned no-photo context, so their words are learned too\n"
            "  --text-ratio R       text captions per step, times --batch (default 1)\n"
            "  --detections F[,F..] `attncap detect --min-score 0.1` lines of the photos: the decoder also attends\n"
            "                       over each photo's detected objects, and names them (regions; see README)\n"
            "  --regions N          detected objects per photo the decoder sees (default 10 with --detections)\n"
            "  --copy               with --detections: name an attended object from its category (learned gate)\n"
            "  --pointer            with --detections: name an object from its category, the object chosen by a\n"
            "                       pointer over the photo's objects against a sentinel (implies --copy)\n"
            "  --absent             with --copy: learn how likely each object's words are when the detector\n"
            "                       did not see it (a prior per object, not a rule)\n"
            "  --object-init        with --copy: the detected objects set the LSTM's initial state, so the\n"
            "                       words before an object's name can depend on it (\"flying\" before \"a kite\")\n"
            "  --text-weight W      weight of the text loss against the photos' (default 1)\n"
            "  --init MODEL         start from MODEL's weights (same sizes; its words keep their rows)\n"
            "  --out MODEL          best model by the validation score (checkpoint: MODEL.ckpt)\n"
            "  --epochs N           max epochs (%d)\n"
            "  --batch B            captions per step (%d)\n"
            "  --lr X               Adam learning rate (%g)\n"
            "  --lr-min X           the decay on plateaus stops at this learning rate (%g: no floor)\n"
            "  --embed E --hidden H --att A   sizes (%d, %d, %d)\n"
            "  --attention S --heads N   score (additive, dot, scaled-dot, general, cosine) and heads (1)\n"
            "  --decoder K          lstm (the default) or transformer (Vaswani et al., soft attention only:\n"
            "                       --embed is its width, --hidden its feed-forward width, --heads 4, --layers 2)\n"
            "  --layers N           transformer layers (2)\n"
            "  --attention-mode M   soft, or hard: one sampled location per word (Xu et al. 4.1, REINFORCE)\n"
            "  --reinforce R --entropy E --expected-context P   hard: weights of the REINFORCE term (%g) and\n"
            "                       the entropy bonus (%g), chance a caption trains on the expected context (%g)\n"
            "  --dropout P --lambda L   dropout (%g), doubly stochastic attention penalty (%g)\n"
            "  --min-count N        vocabulary threshold (%d)\n"
            "  --clip G             gradient norm clip, 0 = off (%g)\n"
            "  --weight-decay W     L2 (%g)\n"
            "  --ema D              validate and save an exponential moving average of the weights,\n"
            "                       decay D per step (%g; 0 = off)\n"
            "  --patience N         evaluations without improvement before stopping (%d)\n"
            "  --lr-decay F         learning-rate factor on plateau (%g)\n"
            "  --lr-patience N      evaluations without improvement before each decay (%d)\n"
            "  --eval-every N       steps between evaluations (default: once per epoch)\n"
            "  --checkpoint-every N steps between checkpoints (%d)\n"
            "  --resume             continue from MODEL.ckpt exactly (with its options: a flag given with\n"
            "                       another value than the checkpoint's is refused); more --epochs extend\n"
            "                       a finished run\n"
            "  --force              with --resume: go on with the checkpoint's options anyway\n"
            "  --val-metric M       cider, bleu4 or loss (cider when the metrics are built)\n"
            "  --beam K             beam size for validation captions (%d)\n"
            "  --max-val N          validation photos (all)\n"
            "  --max-train N        only the first N training captions (all)\n"
            "  --max-words N        skip longer training captions (%d)\n"
            "  --no-flip            ignore \"#flip\" features\n"
            "  --no-group           batches of random captions instead of whole photos (all their captions)\n"
            "  --fp16               store the model in float16\n"
            "  --map-features       read the feature rows from their mapped shard files instead of loading\n"
            "                       them (the default when they would take over half the memory: a cache\n"
            "                       larger than memory trains, the OS caching what fits); same results\n"
            "  --load-features      always load them into memory\n"
            "  --seed S             (%llu)\n"
            "  --max-steps N        stop after N steps in total\n"
            "  --log CSV --plot PNG training curves\n"
            "  --shards N           batch shards computed in parallel (%d; changes the arithmetic)\n"
            "  --threads N          threads (default: cores or $ATTNCAP_THREADS)\n"
            "  --quiet\n",
            d.epochs, d.batch, d.lr, d.lr_min, d.embed, d.hidden, d.att, d.reinforce, d.entropy, d.expected_context, d.dropout, d.lambda, d.min_count, d.clip,
            d.weight_decay, d.ema, d.patience, d.lr_decay, d.lr_patience, d.checkpoint_every, d.beam, d.max_words, d.seed, d.shards);
}

int cmd_train(int argc, char **argv) {
    ac_train_opts o;
    ac_train_defaults(&o);
    train_view view = {0};
    int pointer = 0;
    o.on_event = train_view_event, o.user = &view;
    const char *given[64];
    char given_buf[2048];
    o.resume_given = given, o.n_resume_given = train_given_options(argc, argv, given, 64, given_buf, sizeof given_buf);
    const cli_opt opts[] = {
        OPT_STR("--data", &o.data),
        OPT_STR("--images", &o.image_dir),
        OPT_STR("--features", &o.features),
        OPT_STR("--extra-data", &o.extra_data),
        OPT_STR("--text", &o.text),
        OPT_FLOAT("--text-ratio", &o.text_ratio, 0.01, 100),
        OPT_STR("--detections", &o.detections), OPT_INT("--regions", &o.regions, 1, 32), OPT_FLAG("--copy", NULL, &o.copy),
        OPT_FLAG("--pointer", NULL, &pointer), OPT_FLAG("--absent", NULL, &o.absent),
        OPT_FLAG("--object-init", NULL, &o.object_init),
        OPT_FLOAT("--text-weight", &o.text_weight, 0, 100),
        OPT_STR("--init", &o.init),
        OPT_STR("--out", &o.out),
        OPT_STR("--log", &o.log_csv),
        OPT_STR("--plot", &o.plot_png),
        OPT_STR("--val-metric", &o.val_metric),
        OPT_INT("--epochs", &o.epochs, 0, 100000),
        OPT_INT("--batch", &o.batch, 1, 4096),
        OPT_FLOAT("--lr", &o.lr, 1e-9, 1),
        OPT_FLOAT("--lr-min", &o.lr_min, 0, 1),
        OPT_INT("--embed", &o.embed, 1, 8192),
        OPT_INT("--hidden", &o.hidden, 1, 8192),
        OPT_INT("--att", &o.att, 1, 8192),
        OPT_STR("--attention", &o.attention), OPT_INT("--heads", &o.heads, 1, 64),
        OPT_STR("--decoder", &o.decoder), OPT_INT("--layers", &o.layers, 1, 64),
        OPT_STR("--attention-mode", &o.attention_mode), OPT_FLOAT("--reinforce", &o.reinforce, 0, 1e5),
        OPT_FLOAT("--entropy", &o.entropy, 0, 1e5), OPT_FLOAT("--expected-context", &o.expected_context, 0, 1),
        OPT_FLOAT("--dropout", &o.dropout, 0, 0.99),
        OPT_FLOAT("--lambda", &o.lambda, 0, 1e5),
        OPT_INT("--min-count", &o.min_count, 1, 1e9),
        OPT_FLOAT("--clip", &o.clip, 0, 1e9),
        OPT_FLOAT("--weight-decay", &o.weight_decay, 0, 1),
        OPT_FLOAT("--ema", &o.ema, 0, 0.999999),
        OPT_INT("--patience", &o.patience, 1, 1e6),
        OPT_FLOAT("--lr-decay", &o.lr_decay, 0.01, 1),
        OPT_INT("--lr-patience", &o.lr_patience, 1, 1e6),
        OPT_INT("--eval-every", &o.eval_every, 0, 1e9),
        OPT_INT("--checkpoint-every", &o.checkpoint_every, 0, 1e9),
        OPT_INT("--beam", &o.beam, 1, 100),
        OPT_INT("--max-val", &o.max_val, 0, 1e9),
        OPT_INT("--max-train", &o.max_train, 0, 1e9),
        OPT_INT("--max-words", &o.max_words, 1, 1000),
        OPT_U64("--seed", &o.seed, 0, 9e15),
        OPT_INT("--max-steps", &o.max_steps, 0, 2e9),
        OPT_INT("--shards", &o.shards, 1, 64),
        OPT_INT("--threads", &o.threads, 1, 256),
        OPT_FLAG("--resume", NULL, &o.resume),
        OPT_FLAG("--force", NULL, &o.resume_force),
        OPT_FLAG("--quiet", "-q", &view.quiet),
        OPT_FLAG("--flip", NULL, &o.flip), OPT_UNSET("--no-flip", &o.flip),
        OPT_FLAG("--fp16", NULL, &o.fp16),
        OPT_UNSET("--no-group", &o.group),
        OPT_FLAG("--map-features", NULL, &o.map_features), OPT_UNSET("--load-features", &o.map_features),
        OPT_END,
    };
    const int n_args = cli_parse("train", argc, argv, opts, 0, usage);
    if (n_args < 0) return n_args == CLI_HELP ? 0 : 2;
    if (!o.data || !o.features || !o.out) {
        fprintf(stderr, "attncap train: --data, --features and --out are required (try --help)\n");
        return 2;
    }
    if (pointer) o.copy = 2;
    if ((o.absent || o.object_init) && !o.copy) {
        fprintf(stderr, "attncap train: --absent and --object-init go with --copy or --pointer\n");
        return 2;
    }
    if (o.copy && !o.detections && !o.resume) {
        fprintf(stderr, "attncap train: --copy needs --detections: it copies from the photos' detected objects\n");
        return 2;
    }
    if (o.resume_force && !o.resume) {
        fprintf(stderr, "attncap train: --force goes with --resume (it keeps the checkpoint's options)\n");
        return 2;
    }
    view.features = o.features, view.out = o.out;
    /* what an interrupted run was writing goes (see cleanup.h) */
    cli_cleanup_watch(o.out, 0), cli_cleanup_watch(o.log_csv, 0), cli_cleanup_watch(o.plot_png, 0);
    ac_err err;
    const int rc = ac_train(&o, &err);
    cli_progress_finish(&view.bar);
    if (rc) {
        fprintf(stderr, "attncap train: %s%s\n", err.msg, cli_hint(&err));
        return 1;
    }
    return 0;
}
