/* attncap eval: coco-caption's metrics over generated captions, optionally captioning a split
 * with a model first, and an HTML report. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "attncap/captioner.h"
#include "attncap/report.h"
#include "cleanup.h"
#include "eval_report.h"
#include "commands.h"
#include "eval_cli.h"
#include "inputs.h"
#include "messages.h"
#include "options.h"

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



int cmd_eval(int argc, char **argv) {
    cli_eval_opts o = {0};
    o.len_alpha = -1;
    o.tf = (cli_tag_flags)CLI_TAG_FLAGS_INIT;
    o.meteor = 1, o.sheets = 1, o.split = "test";
    o.novel_split = "train", o.novel_max = 10;
    const cli_opt opts[] = {
        OPT_STR("--refs", &o.refs),
        OPT_STR("--results", &o.results),
        OPT_STR("--pairs", &o.pairs),
        OPT_STR("--per-image", &o.per_image),
        OPT_STR("--wordnet", &o.wordnet),
        OPT_STR("--model", &o.model),
        OPT_STR("--data", &o.data),
        OPT_STR("--images", &o.images),
        OPT_STR("--split", &o.split),
        OPT_STR("--encoder", &o.encoder),
        OPT_STR("--report", &o.report),
        OPT_STR("--compare", &o.compare),
        OPT_STR("--results-out", &o.results_out),
        OPT_STR("--features", &o.features),
        OPT_STR("--novel-from", &o.novel_from),
        CLI_TAG_OPTS(o.tf),
        OPT_STR("--novel-split", &o.novel_split),
        OPT_INT("--novel-max", &o.novel_max, 1, 1e9),
        OPT_FLAG("--per-category", NULL, &o.per_category),
        OPT_STR("--shard", &o.shard_spec),
        OPT_FLOAT("--len-alpha", &o.len_alpha, 0, 10),
        OPT_FLAG("--allow-repeats", NULL, &o.allow_repeats),
        OPT_INT("--beam", &o.beam, 1, 100),
        OPT_INT("--max-len", &o.max_len, 1, 200),
        OPT_STR("--hard-context", &o.hard_context), OPT_STR("--fix-attention", &o.fix_attention),
        OPT_INT("--limit", &o.limit, 1, 1e9),
        OPT_INT("--threads", &o.threads, 0, 256), OPT_STR("--precision", &o.precision),
        OPT_FLAG("--json", NULL, &o.json),
        OPT_UNSET("--no-meteor", &o.meteor),
        OPT_UNSET("--no-sheets", &o.sheets),
        OPT_FLAG("--quiet", "-q", &o.quiet),
        OPT_END,
    };
    const int n_args = cli_parse("eval", argc, argv, opts, -1, usage);
    if (n_args < 0) return n_args == CLI_HELP ? 0 : 2;
    if (cli_check_precision("eval", o.precision) < 0) return 2;
    ac_err err;
    if (n_args && !o.results) { /* more results files follow --results; nothing else is positional */
        fprintf(stderr, "attncap eval: unexpected argument '%s' (try --help)\n", argv[1]);
        return 2;
    }
    if (o.shard_spec && ac_shard_parse(o.shard_spec, &o.shard, &err)) {
        fprintf(stderr, "attncap eval: --shard: %s\n", err.msg);
        return 2;
    }
    if (o.shard_spec && !o.data) {
        fprintf(stderr, "attncap eval: --shard takes a share of --data's photos (score shares with --results A B ...)\n");
        return 2;
    }
    int modes = (o.pairs != NULL) + (o.refs || o.results) + (o.model || o.data);
    if (modes != 1 || (o.refs && !o.results) || (o.results && !o.refs) || (o.model && !o.data)) {
        fprintf(stderr, "attncap eval: need exactly one of --refs with --results, --pairs, or --data (with --model, "
                        "or the default model) (try --help)\n");
        return 2;
    }
    /* what an interrupted run was writing goes (see cleanup.h) */
    cli_cleanup_watch(o.results_out, 0), cli_cleanup_watch(o.per_image, 0), cli_cleanup_watch(o.report, 1);
    char *report_sub[2] = {o.report ? ac_path_join(o.report, "thumbs") : NULL, o.report ? ac_path_join(o.report, "sheets") : NULL};
    cli_cleanup_watch(report_sub[0], 1), cli_cleanup_watch(report_sub[1], 1);
    free(report_sub[0]), free(report_sub[1]);
    ac_eval_set set = {0};
    int n_ref_images = 0, rc;
    char **thumbs = NULL, **sheets = NULL, *subtitle = NULL;
    int novel[AC_N_OBJECTS];
    char *model_path = NULL; /* the model --data is captioned with, found once: its name heads the report */
    eval_compare cmp = {0};
    if (o.compare && (!o.report || o.pairs)) {
        fprintf(stderr, "attncap eval: --compare needs --report, and --refs or --data (the references to score it)\n");
        return 2;
    }
    if (o.report && cli_check_writable_dir(o.report, &err)) { /* before any captioning */
        fprintf(stderr, "attncap eval: --report: %s\n", err.msg);
        return 1;
    }
    const int no_model = o.data && ac_find_model(o.model, &model_path, &err);
    if (model_path) o.model = model_path;
    if (no_model) rc = -1;
    else if (o.compare &&
             eval_compare_load(&cmp, o.refs ? o.refs : o.data, o.images, o.compare, o.meteor, o.wordnet, &err))
        rc = ac_err_prefix(&err, "--compare");
    else if (o.novel_from && cli_eval_novel_counts(&o, novel, &err)) rc = -1;
    else if (o.pairs) rc = ac_eval_load_pairs(o.pairs, &set, &err);
    else if (o.refs) {
        argv[0] = (char *)o.results; /* --results RES [MORE...]: argv[0..n_args] */
        rc = ac_eval_load_results_in(o.refs, o.images, (const char *const *)argv, n_args + 1, &set, &n_ref_images, &err);
    } else rc = cli_eval_caption_split(&o, &set, &thumbs, &sheets, &subtitle, &err);
    if (!rc && o.results_out && ac_eval_write_results(o.results_out, &set, o.data ? o.model : NULL, &err)) rc = -1;
    if (!rc && set.n == 0) { /* an empty --shard share: an empty --results-out, nothing to score */
        fprintf(stderr, "attncap eval: share %d/%d of the split is empty\n", o.shard.index, o.shard.count);
        free(subtitle), free(model_path), eval_compare_free(&cmp);
        return 0;
    }
    ac_scores sc = {0};
    int have_scores = 0;
    if (!rc) {
        rc = ac_metrics_compute(&set, o.meteor ? AC_METRICS_METEOR : 0, o.wordnet, &sc, &err);
        have_scores = !rc;
    }
    if (!rc) cli_eval_warn_trained(&set, o.data ? o.model : NULL);
    if (!rc && o.novel_from) ac_object_scores_set_novel(&sc.objects, novel, o.novel_max);
    if (!rc && o.per_image && ac_scores_write_per_image(o.per_image, &set, &sc, &err)) rc = -1;
    if (!rc && o.report) {
        eval_report_in in = {o.report, o.data ? o.data : o.pairs ? o.pairs : o.results, o.data ? o.split : NULL,
                             o.data ? o.model : NULL, subtitle, &set, &sc, thumbs, sheets, o.compare ? &cmp : NULL};
        if (eval_report_write(&in, &err)) rc = -1;
    }
    if (rc) fprintf(stderr, "attncap eval: %s%s\n", err.msg, cli_hint(&err));
    else if (o.json) {
        char *j = ac_scores_to_json_flags(&sc, o.per_category ? AC_SCORES_JSON_PER_CATEGORY : 0);
        if (j) printf("%s\n", j);
        free(j);
    } else cli_eval_print_scores(&o, &sc, n_ref_images);
    for (int i = 0; i < set.n; i++) {
        if (thumbs) free(thumbs[i]);
        if (sheets) free(sheets[i]);
    }
    free(thumbs);
    free(sheets);
    free(subtitle);
    free(model_path);
    eval_compare_free(&cmp);
    if (have_scores) ac_scores_free(&sc);
    ac_eval_set_free(&set);
    return rc ? 1 : 0;
}
