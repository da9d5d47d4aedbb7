/* attncap eval: coco-caption's metrics over generated captions, optionally captioning a split with a
 * model first, and an HTML report: the core's evaluator (ac_evaluator, attncap.h), its options the flags
 * without dashes. The program's own: the output (--json, --per-category, --quiet), --results's files
 * after it, --precision's $ATTNCAP_PRECISION, $ATTNCAP_NAMING, and what an interrupted run leaves. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "attncap/attncap.h"
#include "cleanup.h"
#include "commands.h"
#include "inputs.h"
#include "messages.h"
#include "options.h"
#include "progress.h"
#include "tag_flags.h"

static void usage(FILE *f) {
    fprintf(f,
            "usage: attncap eval --refs REFS --results RES.json [MORE.json...] [options]\n"
            "       attncap eval --pairs PAIRS.json [options]\n"
            "       attncap eval [--model MODEL] --data SPEC [--split test] [--beam K] [options]\n\n"
            "Scores captions exactly as coco-caption does: PTB tokenization (lowercased, punctuation removed),\n"
            "then BLEU-1..4, METEOR, ROUGE-L and CIDEr-D over the images of the results.\n\n"
            "  --refs REFS        reference captions: COCO captions JSON, Karpathy dataset_*.json, a Flickr8k\n"
            "                     directory or Flickr8k.token.txt, or a TSV/CSV of image<TAB>caption lines\n"
            "  --results RES      COCO results format: [{\"image_id\": ..., \"caption\": \"...\"}]; ids are\n"
            "                     matched as text (COCO image_id, else the photo's file name). Also JSON lines\n"
            "                     ({\"image\": PATH, \"caption\": ...} as attncap caption --json prints). Files\n"
            "                     after RES (e.g. the shares of a sharded run) are scored together with it\n"
            "  --pairs PAIRS      instead of --refs/--results: [{\"captions\": [refs...], \"prediction\": \"...\"}]\n"
            "  --model MODEL      caption the photos of --data's --split with this model, then score them\n"
            "                     (default: found as attncap caption finds it: $ATTNCAP_MODEL, else\n"
            "                     models/%s)\n"
            "  --data SPEC        a data set: Flickr8k dir, COCO/Karpathy JSON, TSV/CSV (attncap help data)\n"
            "  --images DIR       where the photos of --data or --refs are (default: see attncap help data)\n"
            "  --split S          test (default), val, train or all\n"
            "  --beam K           beam width (default: the model's default, 3); 1 = greedy\n"
            "  --tags auto|off    name what the encoder sees, as attncap caption does (default: the model's\n"
            "                     setting); with --features the search is plain\n"
            "  --len-alpha A      length normalisation: score = logprob / (words + 1)^A (default: the model's, 1)\n"
            "  --max-len N        longest caption in words (default: the model's, 20)\n"
            "  --allow-repeats    let any word come twice (as attncap caption)\n"
            "  --hard-context C   a hard-attention model: argmax (the default) or expected (as attncap caption)\n"
            "  --fix-attention F  uniform or peak: the model's attention replaced (as attncap caption)\n"
            "  --encoder F        the encoder .tflite (default: found as attncap caption does)\n"
            "  --features CACHE   use this feature cache (attncap features) instead of running the encoder\n"
            "  --limit N          only the first N photos of the split\n"
            "  --shard I/N        only this task's share of those photos (by file name hash, as attncap caption\n"
            "                     --shard); slurm: from the Slurm job array. Write each share's --results-out\n"
            "                     and score them together: attncap eval --refs SPEC --results share-*.json\n"
            "  --results-out F    also write the generated captions as COCO results JSON\n"
            "  --threads N        threads for the CNN and the report's overlays (default: all cores)\n"
            CLI_PRECISION_HELP
            "  --json             print the scores as one JSON object\n"
            "  --per-image FILE   per-image BLEU-4, METEOR, ROUGE-L, CIDEr-D and the objects named, true, hallucinated\n"
            "                     and missed (CSV if FILE ends in .csv, else JSON)\n"
            "  --report DIR       write DIR/index.html: scores, a histogram and a searchable, sortable per-image\n"
            "                     table, worst first, with thumbnails (photos found) and attention sheets (--data)\n"
            "  --compare RES      with --report: another run's results (same references) side by side, with\n"
            "                     per-image CIDEr-D deltas\n"
            "  --no-sheets        no attention sheets in the report (faster)\n"
            "  --no-meteor        skip METEOR (the slowest metric)\n"
            "  --wordnet DIR      WordNet 3.0 dictionary for METEOR synonyms (default /usr/share/wordnet)\n"
            "  --quiet            no progress bar\n\n"
            "Object mentions: which of COCO's 80 object categories each caption names (our synonym lists); truth\n"
            "for a photo = the categories at least 2 of its references name. Printed: precision, recall, F1, and\n"
            "the share of named objects that no reference names (CHAIR-i) and of captions naming one (CHAIR-s).\n"
            "  --novel-from SPEC  novel categories: those the captions of SPEC's --novel-split name in fewer than\n"
            "                     --novel-max photos (a photo names one when any of its captions does); prints\n"
            "                     their recall\n"
            "  --novel-split S    train (default), val, test or all\n"
            "  --novel-max N      (default 10)\n"
            "  --per-category     also the counts of every category (plain and --json)\n",
            AC_DEFAULT_MODEL_NAME);
}

typedef struct eval_view {
    cli_progress bar;
    int quiet, started;
} eval_view;

static void on_event(const ac_eval_event *ev, void *user) {
    eval_view *v = user;
    if (ev->warning) fprintf(stderr, "attncap eval: warning: %s\n", ev->warning);
    else if (!v->started) v->started = 1, cli_progress_start(&v->bar, "captioning", (uint64_t)ev->total, v->quiet);
    else cli_progress_update(&v->bar, (uint64_t)ev->done);
}

static const char *list_option(const void *job, int i, int *is_switch) { return (void)job, ac_evaluator_option(i, is_switch); }
static int set_option(void *e, const char *key, const char *value, ac_err *err) { return ac_evaluator_set(e, key, value, err); }

/* What an interrupted run was writing goes (see cleanup.h). */
static void watch_outputs(ac_evaluator *e) {
    const char *report = ac_evaluator_get(e, "report");
    cli_cleanup_watch(*ac_evaluator_get(e, "results_out") ? ac_evaluator_get(e, "results_out") : NULL, 0);
    cli_cleanup_watch(*ac_evaluator_get(e, "per_image") ? ac_evaluator_get(e, "per_image") : NULL, 0);
    if (!*report) return;
    cli_cleanup_watch(report, 1);
    char sub[4096];
    snprintf(sub, sizeof sub, "%s/thumbs", report), cli_cleanup_watch(sub, 1); /* copied */
    snprintf(sub, sizeof sub, "%s/sheets", report), cli_cleanup_watch(sub, 1);
}

/* --results RES [MORE...] (argv[1..n_args]), --precision and $ATTNCAP_NAMING onto the evaluator. */
static int set_program_options(ac_evaluator *e, const char *results, char **argv, int n_args, const char *precision,
                               int quiet, ac_err *err) {
    if (n_args && !results) { /* more results files follow --results; nothing else is positional */
        fprintf(stderr, "attncap eval: unexpected argument '%s' (try --help)\n", argv[1]);
        return 2;
    }
    for (int i = 0; results && i <= n_args; i++)
        if (ac_evaluator_set(e, "results", i ? argv[i] : results, err)) return 1;
    if (cli_check_precision("eval", precision) < 0) return 2;
    if (precision && ac_evaluator_set(e, "precision", precision, err)) return 1;
    const char *naming = getenv("ATTNCAP_NAMING");
    if (naming && *naming) {
        if (ac_evaluator_set(e, "naming", naming, err)) {
            fprintf(stderr, "attncap eval: ATTNCAP_NAMING: %s\n", err->msg);
            return -1; /* said */
        }
        if (!quiet && *ac_evaluator_get(e, "data"))
            fprintf(stderr, "attncap eval: note: naming settings from ATTNCAP_NAMING over the model's: %.200s\n", naming);
    }
    return 0;
}

int cmd_eval(int argc, char **argv) {
    ac_evaluator *e;
    ac_err err = {0}; /* AC_ERR_FAILED unless a call says otherwise */
    if (ac_evaluator_open(&e, &err)) {
        fprintf(stderr, "attncap eval: %s\n", err.msg);
        return 1;
    }
    eval_view view = {0};
    const char *results = NULL, *precision = NULL;
    int json = 0, per_category = 0;
    const cli_opt own[] = {
        OPT_STR("--results", &results), OPT_STR("--precision", &precision), OPT_FLAG("--json", NULL, &json),
        OPT_FLAG("--per-category", NULL, &per_category), OPT_FLAG("--quiet", "-q", &view.quiet),
        CLI_NAMING_REMOVED_OPTS, OPT_END,
    };
    const cli_job_opts job = {list_option, set_option, e, NULL, 0};
    const int n_args = cli_parse_job("eval", argc, argv, own, -1, usage, &job);
    int rc = n_args < 0 ? (n_args == CLI_HELP ? 0 : 2) : set_program_options(e, results, argv, n_args, precision, view.quiet, &err);
    if (n_args < 0 || rc) {
        if (rc == 1) fprintf(stderr, "attncap eval: %s\n", err.msg);
        if (rc < 0) rc = 1;
        ac_evaluator_close(e);
        return rc;
    }
    watch_outputs(e);
    const char *report = ac_evaluator_get(e, "report");
    if (*report && cli_check_writable_dir(report, &err)) { /* before any captioning */
        fprintf(stderr, "attncap eval: --report: %s\n", err.msg);
        ac_evaluator_close(e);
        return 1;
    }
    rc = ac_evaluator_run(e, on_event, &view, &err);
    if (view.started) cli_progress_finish(&view.bar);
    const unsigned flags = per_category ? AC_EVAL_PER_CATEGORY : 0;
    char *out = NULL;
    if (rc) fprintf(stderr, "attncap eval: %s%s\n", err.msg, cli_hint(&err));
    else if (ac_evaluator_images(e) == 0) /* an empty --shard share: an empty --results-out, nothing to score */
        fprintf(stderr, "attncap eval: share %s of the split is empty\n", ac_evaluator_get(e, "shard"));
    else if (!(out = json ? ac_evaluator_json(e, flags) : ac_evaluator_text(e, flags)))
        fprintf(stderr, "attncap eval: out of memory\n"), rc = -1;
    else printf(json ? "%s\n" : "%s", out);
    ac_free(out);
    ac_evaluator_close(e);
    return !rc ? 0 : err.code == AC_ERR_OPTIONS ? 2 : 1;
}
