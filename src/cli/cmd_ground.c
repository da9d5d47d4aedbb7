/* attncap ground: does the attention for "dog" sit on the dog? The core's tool "ground" (ac_tool,
 * attncap.h), its options the flags without dashes; the program's own: the photos, --precision's
 * $ATTNCAP_PRECISION, -v, the progress bar. */
#include <stdio.h>

#include "attncap/attncap.h"
#include "commands.h"
#include "messages.h"
#include "options.h"
#include "tool_view.h"

static void usage(FILE *f) {
    fprintf(f,
            "usage: attncap ground --boxes FILE [--root DIR] [--data SPEC] [options]\n"
            "       attncap ground --boxes detected [--detector M.tflite] [options] PHOTO...\n\n"
            "Measures whether the attention for a word sits on the object the word names. The objects are\n"
            "drawn by hand (FILE: PHOTO<TAB>word,word<TAB>x0,y0,x1,y1 ... as fractions of the photo; see\n"
            "include/attncap/grounding.h), or with --boxes detected the detector's on each PHOTO (the boxes\n"
            "attncap detect prints): a word naming a COCO category (\"horses\": horse, \"man\": person) is\n"
            "scored against all the boxes of that category, one naming a category not found counts in undet.\n"
            "Each photo is captioned; every word of the caption that names one of its objects is scored. With\n"
            "--data, the photo's reference captions are also fed to the decoder word by word (teacher\n"
            "forcing) and their naming words scored the same way. A model with regions attends to detected\n"
            "objects too: a region's attention counts as spread evenly over its box.\n\n"
            "Per object class (the first word of its list):\n"
            "  named  photos whose caption names the object (of those where it was drawn)\n"
            "  n      words scored\n"
            "  hit    the pointing game: the most-attended cell (or region) overlaps the object\n"
            "  chance the same for a cell drawn at random\n"
            "  mass   the attention inside the object (1 = all of it)\n"
            "  others the same for the other words of the captions that name it: attention that follows\n"
            "         the word has mass well above others\n"
            "  area   the object's share of the photo: the mass of attention spread evenly\n"
            "  undet  (detected) words naming the object in photos where the detector did not find it\n\n"
            "  --boxes FILE     the objects (e.g. tests/fixtures/grounding/samples.tsv), or `detected`\n"
            "  --detector M     the detector for --boxes detected (default: as attncap detect)\n"
            "  --root DIR       directory the photo names are relative to (default: .)\n"
            "  --data SPEC      reference captions (attncap help data), matched by file name\n"
            "  --model FILE     model (default: as attncap caption)\n"
            "  --encoder FILE   the model's TFLite encoder (default: as attncap caption)\n"
            "  --beam K --head J  the captions' beam (default: the model's); heads: score head J (default: mean)\n"
            "  --verbose        one line per scored word: photo, object, source, word, mass, area, hit (or\n"
            "                   \"not detected\")\n"
            "  --json           one JSON object per class, then \"all\"\n"
            "  --threads N      threads (default: all cores)\n"
            CLI_PRECISION_HELP
            "  --quiet          no progress bar\n");
}

int cmd_ground(int argc, char **argv) {
    ac_tool *t;
    ac_err err;
    if (ac_tool_open("ground", &t, &err)) {
        fprintf(stderr, "attncap ground: %s\n", err.msg);
        return 1;
    }
    const char *precision = NULL;
    int verbose = 0, quiet = 0;
    const cli_opt own[] = {OPT_STR("--precision", &precision), OPT_FLAG("--verbose", "-v", &verbose),
                           OPT_FLAG("--quiet", "-q", &quiet), OPT_END};
    const cli_job_opts job = cli_tool_job(t);
    const int n_args = cli_parse_job("ground", argc, argv, own, -1, usage, &job);
    int rc = n_args < 0 ? (n_args == CLI_HELP ? 0 : 2) : cli_check_precision("ground", precision) < 0 ? 2 : 0;
    for (int i = 1; !rc && i <= n_args; i++)
        if (ac_tool_set(t, "photos", argv[i], &err)) fprintf(stderr, "attncap ground: %s\n", err.msg), rc = 2;
    if (!rc && ((precision && ac_tool_set(t, "precision", precision, &err)) ||
                (verbose && ac_tool_set(t, "verbose", "1", &err))))
        fprintf(stderr, "attncap ground: %s\n", err.msg), rc = 2;
    if (n_args < 0 || rc) {
        ac_tool_close(t);
        return rc;
    }
    rc = cli_tool_run("ground", t, "ground", quiet || verbose); /* a bar would break verbose's lines */
    ac_tool_close(t);
    return rc;
}
