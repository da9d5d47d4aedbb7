/* attncap calibrate: fit a model's caption confidence on dev photos, or its tags' precision on its
 * training photos: the core's tool "calibrate" (ac_tool, attncap.h), its options the flags without
 * dashes (--refs and --results repeat, in pairs). */
#include <stdio.h>

#include "attncap/attncap.h"
#include "commands.h"
#include "options.h"
#include "tool_view.h"

static void usage(FILE *f) {
    fprintf(f,
            "usage: attncap calibrate --refs SPEC --results CAPTIONS.jsonl [--refs SPEC --results ...] [--write MODEL]\n"
            "       attncap calibrate --tags --refs SPEC --results CAPTIONS.jsonl [...] [--tag-table FILE] [--write MODEL]\n\n"
            "Fits the confidence of a model's captions (Platt scaling of the mean log-probability per token) on\n"
            "photos with references: a caption counts as right when every object it names (COCO's 80\n"
            "categories, as attncap eval counts them) is named by at least one of its references. The\n"
            "captions are `attncap caption --json` output of the same model, with the tags it will be used\n"
            "with; photos are matched to the references by file name. Prints the fit and its calibration\n"
            "error (fitted on half the photos, measured on the other half, and on all); --write records it in\n"
            "MODEL (metadata \"confidence\"), and attncap caption then prints it.\n\n"
            "  --refs SPEC        references: COCO captions JSON, Flickr8k dir, Karpathy JSON or TSV (all splits)\n"
            "  --results FILE     caption --json lines for photos of the previous --refs (repeat the pair)\n"
            "  --write MODEL      record the fit in MODEL (atomic; weights untouched)\n\n"
            "With --tags, fits instead how often each tag word is right (tag_precision.h): the captions are\n"
            "`attncap caption --json` output for the model's TRAINING photos (not the dev photos its naming\n"
            "is chosen on), and a tag counts as right when one of the photo's references says one of its\n"
            "forms. Prints the fit, its log-loss on half the photos when fitted on the other half (against\n"
            "the shared curve alone), and the words; --write records it (metadata \"tag_precision\").\n\n"
            "  --tags             fit the tags' precision\n"
            "  --tag-table FILE   the class -> word table (default: imagenet_words.tsv beside --write's model)\n"
            "  --lambda X         the prior's precision on each word's offset (default 1)\n");
}

int cmd_calibrate(int argc, char **argv) {
    ac_tool *t;
    ac_err err;
    if (ac_tool_open("calibrate", &t, &err)) {
        fprintf(stderr, "attncap calibrate: %s\n", err.msg);
        return 1;
    }
    const cli_opt own[] = {OPT_END};
    const cli_job_opts job = cli_tool_job(t);
    const int n_args = cli_parse_job("calibrate", argc, argv, own, 0, usage, &job);
    const int rc = n_args < 0 ? (n_args == CLI_HELP ? 0 : 2) : cli_tool_run("calibrate", t, "calibrating", 1);
    ac_tool_close(t);
    return rc;
}
