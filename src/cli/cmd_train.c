/* attncap train: train a decoder (soft-attention LSTM or transformer) on a captioned-photo set and its
 * feature cache. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "attncap/attncap.h"
#include "cleanup.h"
#include "commands.h"
#include "messages.h"
#include "options.h"
#include "progress.h"
#include "train_view.h"

static void usage(FILE *f) {
    ac_trainer *t;
    ac_err err;
    if (ac_trainer_open(&t, &err)) {
        fprintf(f, "usage: attncap train --data SPEC --features CACHE --out MODEL.safetensors [options]\n");
        return;
    }
#define D(key) atof(ac_trainer_get(t, key)) /* the defaults, as numbers for the text below */
#define I(key) (int)D(key)
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
            "  --imagenet-words T   with --copy: the words of tag table T (models/imagenet_words.tsv) that COCO\n"
            "                       lacks are named as objects are, from the encoder's own classifier\n"
            "  --text-weight W      weight of the text loss against the photos' (default 1)\n"
            "  --scst K             self-critical fine-tuning (with --init): K captions sampled per photo, each\n"
            "                       pushed up or down by how far its CIDEr-D beats the photo's other samples'\n"
            "                       (5 is usual; 0, the default: cross-entropy on the captions)\n"
            "  --scst-penalty X     with --scst: each object a sample names that none of its photo's captions\n"
            "                       name costs X of its reward (%g; 0: CIDEr-D alone)\n"
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
            D("scst_penalty"), I("epochs"), I("batch"), D("lr"), D("lr_min"), I("embed"), I("hidden"), I("att"), D("reinforce"), D("entropy"),
            D("expected_context"), D("dropout"), D("lambda"), I("min_count"), D("clip"), D("weight_decay"), D("ema"),
            I("patience"), D("lr_decay"), I("lr_patience"), I("checkpoint_every"), I("beam"), I("max_words"),
            strtoull(ac_trainer_get(t, "seed"), NULL, 10), I("shards"));
#undef I
#undef D
    ac_trainer_close(t);
}

static const char *list_option(const void *job, int i, int *is_switch) { return (void)job, ac_trainer_option(i, is_switch); }
static int set_option(void *t, const char *key, const char *value, ac_err *err) { return ac_trainer_set(t, key, value, err); }

int cmd_train(int argc, char **argv) {
    ac_trainer *t;
    ac_err err;
    if (ac_trainer_open(&t, &err)) {
        fprintf(stderr, "attncap train: %s\n", err.msg);
        return 1;
    }
    train_view view = {0};
    static const char *const aliases[][3] = {{"--load-features", "map_features", "0"}};
    const cli_job_opts job = {list_option, set_option, t, aliases, 1};
    const cli_opt own[] = {OPT_FLAG("--quiet", "-q", &view.quiet), OPT_END};
    const int parsed = cli_parse_job("train", argc, argv, own, 0, usage, &job);
    if (parsed < 0) {
        ac_trainer_close(t);
        return parsed == CLI_HELP ? 0 : 2;
    }
    view.features = ac_trainer_get(t, "features"), view.out = ac_trainer_get(t, "out");
    /* what an interrupted run was writing goes (see cleanup.h) */
    const char *written[3] = {view.out, ac_trainer_get(t, "log"), ac_trainer_get(t, "plot")};
    for (int k = 0; k < 3; k++)
        if (*written[k]) cli_cleanup_watch(written[k], 0);
    const int rc = ac_trainer_run(t, train_view_event, &view, &err);
    cli_progress_finish(&view.bar);
    if (rc) fprintf(stderr, "attncap train: %s%s\n", err.msg, cli_hint(&err));
    ac_trainer_close(t); /* (the paths watched above are its: this is the program's end) */
    return !rc ? 0 : err.code == AC_ERR_OPTIONS ? 2 : 1;
}
