/* attncap presence: fit the presence head (presence.h) on captioned photos' features: the core's tool
 * "presence" (ac_tool, attncap.h), its options the flags without dashes (--data repeats). */
#include <stdio.h>

#include "attncap/attncap.h"
#include "commands.h"
#include "options.h"
#include "tool_view.h"

static void usage(FILE *f) {
    fprintf(f,
            "usage: attncap presence --features CACHE --data SPEC [--data SPEC...] --out FILE [options]\n\n"
            "Fits a presence head: one logistic classifier per COCO object category over the photos' mean\n"
            "annotation vector (the lexical classifiers of DCC, Hendricks et al. 2016), labelled by the\n"
            "references (a category is present when at least 2 of a photo's references name it). attncap\n"
            "caption loads presence.safetensors beside the model: a category the head is sure is absent\n"
            "(the model's naming setting presence_absent) is never said, none of its words (man, men, woman...).\n\n"
            "  --features CACHE   the photos' features (attncap features, with the model's encoder)\n"
            "  --data SPEC        captioned photos (Flickr8k dir, COCO/Karpathy JSON, TSV; repeat): the photos\n"
            "                     of --split that CACHE holds\n"
            "  --split S          train (default), val, test or all\n"
            "  --min-photos N     a category needs this many photos with it to get a classifier (default 20)\n"
            "  --init FILE        start from this head (its categories and weights; --min-photos unused)\n"
            "  --steps N          full-batch Adam steps (default 400; 0 with --init: keep the weights and\n"
            "                     only record each category's prior, the share of the photos that show it,\n"
            "                     which the naming's presence_ratio reads, and its words as listed now)\n"
            "  --lr X, --l2 X     learning rate (0.01) and weight decay (0.001)\n"
            "  --out FILE         write the head here (atomic; F16)\n"
            "  --quiet            no progress bar\n");
}

int cmd_presence(int argc, char **argv) {
    ac_tool *t;
    ac_err err;
    if (ac_tool_open("presence", &t, &err)) {
        fprintf(stderr, "attncap presence: %s\n", err.msg);
        return 1;
    }
    int quiet = 0;
    const cli_opt own[] = {OPT_FLAG("--quiet", "-q", &quiet), OPT_END};
    const cli_job_opts job = cli_tool_job(t);
    const int n_args = cli_parse_job("presence", argc, argv, own, 0, usage, &job);
    const int rc = n_args < 0 ? (n_args == CLI_HELP ? 0 : 2) : cli_tool_run("presence", t, "fitting", quiet);
    ac_tool_close(t);
    return rc;
}
