/* attncap tune: pick a model's beam width and length normalisation on held-out photos (or its absent
 * priors; or record its naming and repeat settings): the core's tool "tune" (ac_tool, attncap.h), its
 * options the flags without dashes. */
#include <stdio.h>

#include "attncap/attncap.h"
#include "commands.h"
#include "options.h"
#include "tool_view.h"

static void usage(FILE *f) {
    fprintf(f,
            "usage: attncap tune --model MODEL --data SPEC --features CACHE [options]\n\n"
            "Captions the photos of a split (default: val) from a feature cache with every combination of\n"
            "beam width and length normalisation, scores each with the coco-caption metrics, prints the\n"
            "table and the best setting; --write records it in the model file (metadata \"decode\"), which\n"
            "attncap caption and eval then use by default.\n\n"
            "  --model MODEL      the decoder (.safetensors)\n"
            "  --data SPEC        a data set: Flickr8k dir, COCO/Karpathy JSON, TSV/CSV (attncap help data)\n"
            "  --features CACHE   features of the split's photos (attncap features, same encoder as the model)\n"
            "  --detections F     a regions model: its photos' `attncap detect --json` lines (comma-separated)\n"
            "  --split S          val (default), test, train or all\n"
            "  --beams LIST       beam widths, comma-separated (default 1,3,5)\n"
            "  --alphas LIST      length-normalisation exponents (default 0,0.5,1,1.5)\n"
            "  --metric M         what to maximise: cider (default), bleu4, meteor or bleu4+meteor\n"
            "  --max-len N        longest caption in words (default 20)\n"
            "  --limit N          only the first N photos of the split\n"
            "  --no-meteor        skip METEOR (faster; not with --metric meteor)\n"
            "  --write            record the best setting in MODEL (atomic rewrite; weights untouched)\n"
            "  --absent           a copy model: instead of the grid, lower each object's words on photos where\n"
            "                     the detector did not see it until the captions name it there no more often\n"
            "                     than the split's references do (docs/naming.md); --write records it\n"
            "  --threads N        threads (default: all cores)\n"
            "  --json             one JSON object per setting, then the choice\n"
            "  --naming JSON      only record in MODEL how tags become constraints, as chosen on dev photos\n"
            "                     (e.g. '{\"threshold\":0.4,\"max_tags\":2,\"max_drop\":0.6}'); caption then uses it\n"
            "  --repeats SPECS    only record in MODEL which words a caption may say twice: those that the\n"
            "                     training captions of SPECS (data sets, comma-separated) say twice in at least\n"
            "                     --repeat-rate of the captions that use them (default 0.05), among the words\n"
            "                     used in --repeat-min captions or more (default 30); every other word is said\n"
            "                     at most once, and no three words twice (\"a bathroom with a bathroom\" is a\n"
            "                     loop of the decoder, \"a tennis player with a tennis racket\" is not)\n"
            "  --repeat-objects 0|1  1 (default): the words of objects other than a person may come twice\n"
            "                     too: forbidding a second \"laptop\" makes the search name another object\n"
            "                     there, most often a wrong one\n");
}

int cmd_tune(int argc, char **argv) {
    ac_tool *t;
    ac_err err;
    if (ac_tool_open("tune", &t, &err)) {
        fprintf(stderr, "attncap tune: %s\n", err.msg);
        return 1;
    }
    const cli_opt own[] = {OPT_END};
    const cli_job_opts job = cli_tool_job(t);
    const int n_args = cli_parse_job("tune", argc, argv, own, 0, usage, &job);
    const int rc = n_args < 0 ? (n_args == CLI_HELP ? 0 : 2) : cli_tool_run("tune", t, "tuning", 1);
    ac_tool_close(t);
    return rc;
}
