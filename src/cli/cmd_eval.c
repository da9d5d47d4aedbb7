/* attncap eval: coco-caption's metrics over generated captions, optionally captioning a split
 * with a model first, and an HTML report. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "attncap/captioner.h"
#include "attncap/dataset.h"
#include "attncap/features.h"
#include "attncap/metrics.h"
#include "attncap/overlay.h"
#include "attncap/report.h"
#include "attncap/shard.h"
#include "cleanup.h"
#include "eval_report.h"
#include "commands.h"
#include "messages.h"
#include "options.h"
#include "tag_flags.h"
#include "progress.h"

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
            "  --tag-threshold X, --tag-max-drop X, --tag-absent X, --tag-trust X  as for attncap caption (default: the model's)\n"
            "  --len-alpha A      length normalisation: score = logprob / (words + 1)^A (default: the model's, 1)\n"
            "  --max-len N        longest caption in words (default: the model's, 20)\n"
            "  --encoder F        the encoder .tflite (default: found as attncap caption does)\n"
            "  --features CACHE   use this feature cache (attncap features) instead of running the encoder\n"
            "  --limit N          only the first N photos of the split\n"
            "  --shard I/N        only this task's share of those photos (by file name hash, as attncap caption\n"
            "                     --shard); slurm: from the Slurm job array. Write each share's --results-out\n"
            "                     and score them together: attncap eval --refs SPEC --results share-*.json\n"
            "  --results-out F    also write the generated captions as COCO results JSON\n"
            "  --threads N        threads for the CNN and the report's overlays (default: all cores)\n"
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

typedef struct {
    const char *refs, *results, *pairs, *per_image, *wordnet, *model, *data, *images, *split, *encoder;
    const char *report, *results_out, *features, *shard_spec, *compare;
    const char *novel_from, *novel_split;
    cli_tag_flags tf;
    ac_shard shard;
    int json, meteor, beam, limit, threads, sheets, quiet, max_len, novel_max, per_category;
    float len_alpha; /* -1: the model's */
} opts;

/* A file-name-safe stem for the sheet directory of image i. */
static void sheet_stem(char *out, size_t n, int i, const char *key) {
    int k = snprintf(out, n, "%05d_", i + 1);
    for (const char *p = key; *p && (size_t)k + 1 < n && *p != '.'; p++)
        out[k++] = ((*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') || (*p >= '0' && *p <= '9') || *p == '-' || *p == '_') ? *p : '_';
    out[k] = 0;
}

/* Captions the split with the model into set (and thumbs/sheets if a report is wanted). */
static int caption_split(const opts *o, ac_eval_set *set, char ***thumbs, char ***sheets, char **subtitle, ac_err *err) {
    ac_dataset ds;
    if (ac_dataset_load(o->data, o->images, &ds, err)) return -1;
    ac_split want = AC_SPLIT_NONE;
    int all = !strcmp(o->split, "all");
    if (!all && (want = ac_split_parse(o->split)) == AC_SPLIT_NONE) {
        ac_dataset_free(&ds);
        return ac_errf(err, "unknown split '%s' (test, val, train or all)", o->split);
    }
    int *sel = malloc((size_t)(ds.n ? ds.n : 1) * sizeof *sel), n = 0;
    for (int i = 0; sel && i < ds.n; i++)
        if ((all || ds.images[i].split == want) && ds.images[i].n_caps > 0 && (o->limit <= 0 || n < o->limit)) sel[n++] = i;
    int n_split = n, n_share = 0; /* --limit first, then this task's share of those */
    for (int i = 0; sel && i < n_split; i++)
        if (ac_shard_owns(&o->shard, ds.images[sel[i]].key)) sel[n_share++] = sel[i];
    n = n_share;
    if (sel && n == 0 && n_split > 0) { /* an empty share of a non-empty split: nothing to do */
        free(sel);
        ac_dataset_free(&ds);
        return 0;
    }
    if (!sel || n == 0) {
        free(sel);
        int cnt[4] = {0};
        for (int i = 0; i < ds.n; i++) cnt[ds.images[i].split]++;
        int rc = ac_errf(err, "%s: no photos with captions in split '%s' (it has train %d, val %d, test %d)", o->data,
                         o->split, cnt[AC_SPLIT_TRAIN], cnt[AC_SPLIT_VAL], cnt[AC_SPLIT_TEST]);
        ac_dataset_free(&ds);
        return rc;
    }
    /* Either the whole captioner (photo -> CNN -> beam) or the model alone over cached features. */
    ac_captioner cap;
    memset(&cap, 0, sizeof cap);
    ac_model model_only;
    memset(&model_only, 0, sizeof model_only);
    ac_feature_cache fc;
    memset(&fc, 0, sizeof fc);
    const ac_model *model = &cap.model;
    ac_beam_opts bo = ac_beam_defaults();
    int grid_h = 0, grid_w = 0, rc = 0;
    float *scratch = NULL; /* a float32 row of a compact (float16) feature cache */
    char enc_name[512] = "";
    if (o->features) {
        char *mpath = NULL;
        if (ac_find_model(o->model, &mpath, err) || ac_model_load(mpath, &model_only, err)) rc = -1;
        else if (ac_decoder_use_f16(&model_only.dec) < 0) rc = ac_errf(err, "out of memory");
        else bo = model_only.decode;
        free(mpath);
        const char **keys = rc ? NULL : malloc((size_t)n * sizeof *keys); /* only the split's rows are read */
        for (int i = 0; keys && i < n; i++) keys[i] = ds.images[sel[i]].key;
        if (!rc && !keys) rc = ac_errf(err, "out of memory");
        if (!rc && ac_features_load_keys(o->features, keys, n, &fc, err)) rc = -1;
        free(keys);
        if (!rc && model_only.encoder_json && fc.encoder_json) {
            ac_encoder_id a, b;
            if (ac_encoder_id_parse(model_only.encoder_json, "model", &a, err) ||
                ac_encoder_id_parse(fc.encoder_json, o->features, &b, err))
                rc = -1;
            else if ((a.sha256[0] && b.sha256[0] ? strcmp(a.sha256, b.sha256) : strcmp(a.file, b.file)) ||
                     strcmp(a.layer, b.layer) || a.size != b.size || a.grid_h != b.grid_h || a.grid_w != b.grid_w ||
                     a.dim != b.dim)
                rc = ac_errf(err, "%s: features of encoder %s (layer '%s', size %d) but the model was trained on %s "
                                  "(layer '%s', size %d)", o->features, b.file, b.layer, b.size, a.file, a.layer, a.size);
        }
        if (!rc && (fc.grid_h * fc.grid_w != model_only.dec.cfg.n_ann || fc.dim != model_only.dec.cfg.dim))
            rc = ac_errf(err, "%s: features of %dx%dx%d do not fit the model (L %d, D %d)", o->features, fc.grid_h,
                         fc.grid_w, fc.dim, model_only.dec.cfg.n_ann, model_only.dec.cfg.dim);
        model = &model_only;
        grid_h = fc.grid_h, grid_w = fc.grid_w;
        snprintf(enc_name, sizeof enc_name, "features %s", o->features);
    } else {
        if (ac_captioner_open(&cap, o->model, o->encoder, o->threads, err) || cli_tag_flags_apply(&cap, &o->tf, 0, err)) rc = -1;
        else bo = cap.beam, grid_h = cap.grid_h, grid_w = cap.grid_w, snprintf(enc_name, sizeof enc_name, "encoder %s", cap.id.file);
    }
    if (o->beam > 0) bo.beam = o->beam;
    if (o->len_alpha >= 0) bo.len_alpha = o->len_alpha;
    if (o->max_len > 0) bo.max_len = o->max_len;
    ac_font *font = NULL;
    ac_overlay_opts oo = ac_overlay_defaults();
    oo.max_side = 768;
    oo.force = 1;
    oo.sheet_only = 1; /* the report links the sheet only */
    oo.threads = o->threads;
    if (!rc && o->report && o->sheets && ac_font_load(NULL, &font, err)) rc = -1;
    if (!rc && o->report) {
        *thumbs = calloc((size_t)n, sizeof **thumbs);
        *sheets = calloc((size_t)n, sizeof **sheets);
        if (!*thumbs || !*sheets) rc = ac_errf(err, "out of memory");
    }
    char *sheet_dir = o->report ? ac_path_join(o->report, "sheets") : NULL;
    cli_progress pr;
    cli_progress_start(&pr, "captioning", (uint64_t)n, o->quiet);
    for (int q = 0; q < n && !rc; q++) {
        const ac_ds_image *im = &ds.images[sel[q]];
        ac_image photo = {0}, square = {0};
        ac_caption c = {0};
        int have_photo = 0;
        if (o->features) {
            int k = ac_features_find(&fc, im->key);
            if (k < 0) rc = ac_errf(err, "%s: no features for '%s'", o->features, im->key);
            else if (!scratch && !(scratch = malloc(sizeof(float) * (size_t)fc.grid_h * fc.grid_w * fc.dim)))
                rc = ac_errf(err, "out of memory");
            else if (ac_beam_search(&model->dec, ac_features_row(&fc, k, scratch), &bo, &c, err))
                rc = -1;
            /* the photo only serves the report; a missing one just leaves its thumbnail out */
            if (!rc && o->report && ac_is_file(im->path)) {
                ac_err e2;
                have_photo = ac_image_load(im->path, &photo, &e2) == 0;
            }
        } else {
            cap.beam = bo;
            if (ac_image_load(im->path, &photo, err) || ac_captioner_prepare(&cap, &photo, &square, err) ||
                ac_captioner_run(&cap, &square, &c, NULL, NULL, err))
                rc = -1;
            have_photo = !rc;
        }
        if (!rc) {
            char *text = ac_caption_text(&c, model->vocab);
            /* an empty caption (immediate <end>) is still a result: score it as "" */
            if (!text || ac_eval_set_add(set, im->id, (const char *const *)im->caps, im->n_caps, text, 1, err)) rc = -1;
            if (!rc && !(set->items[set->n - 1].path = strdup(im->path))) rc = ac_errf(err, "out of memory");
            free(text);
            if (!rc && o->report && have_photo) {
                (*thumbs)[q] = eval_write_thumb(o->report, q, &photo, err);
                if (!(*thumbs)[q]) rc = -1;
                if (!rc && font && c.n > 0) {
                    char stem[96];
                    sheet_stem(stem, sizeof stem, q, im->key);
                    char **paths = NULL;
                    int np = 0;
                    if (ac_overlays_write(sheet_dir, stem, &photo, &c, model->vocab, grid_h, grid_w, &oo, font, &paths,
                                          &np, err))
                        rc = -1;
                    else {
                        char rel[160];
                        snprintf(rel, sizeof rel, "sheets/%s/sheet.png", stem);
                        (*sheets)[q] = strdup(rel);
                    }
                    for (int k = 0; k < np; k++) free(paths[k]);
                    free(paths);
                }
            }
            if (rc) ac_err_prefix(err, "%s", im->path);
        }
        ac_caption_free(&c);
        ac_image_free(&photo);
        ac_image_free(&square);
        cli_progress_update(&pr, (uint64_t)q + 1);
    }
    cli_progress_finish(&pr);
    if (!rc && subtitle) {
        char b[1024];
        snprintf(b, sizeof b, "%s, data %s, split %s, beam %d", enc_name, o->data, o->split, bo.beam);
        *subtitle = strdup(b);
    }
    free(sheet_dir);
    free(scratch);
    ac_font_free(font);
    if (o->features) {
        ac_model_free(&model_only);
        ac_features_free(&fc);
    } else {
        ac_captioner_close(&cap);
    }
    free(sel);
    ac_dataset_free(&ds);
    return rc;
}

/* --novel-from: how many photos of the source name each category (read before any captioning, so a
 * bad source fails fast); those named in fewer than --novel-max photos are novel. */
static int novel_counts(const opts *o, int counts[AC_N_OBJECTS], ac_err *err) {
    ac_split split = AC_SPLIT_NONE;
    if (strcmp(o->novel_split, "all") && (split = ac_split_parse(o->novel_split)) == AC_SPLIT_NONE)
        return ac_errf(err, "unknown --novel-split '%s' (train, val, test or all)", o->novel_split);
    ac_dataset ds;
    if (ac_dataset_load(o->novel_from, NULL, &ds, err)) return -1;
    int photos = 0, rc = ac_objects_photo_counts(&ds, split, counts, &photos, err);
    ac_dataset_free(&ds);
    if (rc) return ac_err_prefix(err, "%s", o->novel_from);
    if (photos == 0) return ac_errf(err, "%s: no photos in split '%s'", o->novel_from, o->novel_split);
    return 0;
}

static void print_ratio(const char *label, double x) {
    if (isnan(x)) printf("%s -", label);
    else printf("%s %.4f", label, x);
}

/* The object lines of the plain output. */
static void print_objects(const opts *o, const ac_object_scores *ob) {
    print_ratio("objects  precision", ob->precision), print_ratio(" recall", ob->recall), print_ratio(" F1", ob->f1);
    printf(" (TP %lld, FP %lld, FN %lld; truth: named by >= %d references)\n", ob->tp, ob->fp, ob->fn,
           AC_OBJECTS_TRUTH_REFS);
    print_ratio("CHAIR-i ", ob->chair_i);
    printf(" (%lld of %lld named objects are named by no reference)\n", ob->hallucinated, ob->mentioned);
    print_ratio("CHAIR-s ", ob->chair_s);
    printf(" (%d of %d captions name one)\n", ob->captions_hallucinating, ob->n);
    if (ob->novel_max > 0) {
        char names[2048];
        ac_objects_join(ob->novel, " ", names, sizeof names);
        print_ratio("novel    recall", ob->novel_recall);
        printf(" (%lld of %lld; named %lld times; %d categories in < %d photos of %s %s: %s)\n", ob->novel_tp,
               ob->novel_truth, ob->novel_mentioned, ob->n_novel, ob->novel_max, o->novel_from, o->novel_split, names);
    }
    if (o->per_category) {
        printf("%-16s %5s %5s %5s %5s%s\n", "category", "TP", "FP", "FN", "hall", ob->novel_max > 0 ? " photos" : "");
        for (int k = 0; k < AC_N_OBJECTS; k++) {
            if (!(ob->tp_k[k] || ob->fp_k[k] || ob->fn_k[k] || (ob->novel_max > 0 && ob->novel[k]))) continue;
            printf("%-16s %5d %5d %5d %5d", ac_object_name(k), ob->tp_k[k], ob->fp_k[k], ob->fn_k[k], ob->hall_k[k]);
            if (ob->novel_max > 0) printf(" %6d%s", ob->source_photos[k], ob->novel[k] ? " novel" : "");
            printf("\n");
        }
    }
}

int cmd_eval(int argc, char **argv) {
    opts o = {0};
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
        OPT_INT("--beam", &o.beam, 1, 100),
        OPT_INT("--max-len", &o.max_len, 1, 200),
        OPT_INT("--limit", &o.limit, 1, 1e9),
        OPT_INT("--threads", &o.threads, 0, 256),
        OPT_FLAG("--json", NULL, &o.json),
        OPT_UNSET("--no-meteor", &o.meteor),
        OPT_UNSET("--no-sheets", &o.sheets),
        OPT_FLAG("--quiet", "-q", &o.quiet),
        OPT_END,
    };
    const int n_args = cli_parse("eval", argc, argv, opts, -1, usage);
    if (n_args < 0) return n_args == CLI_HELP ? 0 : 2;
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
                        "or the default model) (try attncap eval --help)\n");
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
    const int no_model = o.data && ac_find_model(o.model, &model_path, &err);
    if (model_path) o.model = model_path;
    if (no_model) rc = -1;
    else if (o.compare &&
             eval_compare_load(&cmp, o.refs ? o.refs : o.data, o.images, o.compare, o.meteor, o.wordnet, &err))
        rc = ac_err_prefix(&err, "--compare");
    else if (o.novel_from && novel_counts(&o, novel, &err)) rc = -1;
    else if (o.pairs) rc = ac_eval_load_pairs(o.pairs, &set, &err);
    else if (o.refs) {
        argv[0] = (char *)o.results; /* --results RES [MORE...]: argv[0..n_args] */
        rc = ac_eval_load_results_in(o.refs, o.images, (const char *const *)argv, n_args + 1, &set, &n_ref_images, &err);
    } else rc = caption_split(&o, &set, &thumbs, &sheets, &subtitle, &err);
    if (!rc && o.results_out && eval_write_results(o.results_out, &set, o.data ? o.model : NULL, &err)) rc = -1;
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
    } else {
        const ac_bleu_counts *c = &sc.counts;
        printf("images   %d", sc.n);
        if (o.refs && n_ref_images > sc.n) printf(" (of %d in the references)", n_ref_images);
        printf("\ntestlen %lld, reflen %lld, guess [%lld, %lld, %lld, %lld], correct [%lld, %lld, %lld, %lld]\n",
               c->testlen, c->reflen, c->guess[0], c->guess[1], c->guess[2], c->guess[3], c->correct[0],
               c->correct[1], c->correct[2], c->correct[3]);
        for (int k = 0; k < 4; k++) printf("BLEU-%d   %.4f\n", k + 1, sc.bleu[k]);
        if (!isnan(sc.meteor)) printf("METEOR   %.4f\n", sc.meteor);
        printf("ROUGE-L  %.4f\nCIDEr-D  %.4f\n", sc.rouge_l, sc.cider_d);
        print_objects(&o, &sc.objects);
        if (o.report) printf("report   %s/index.html\n", o.report);
    }
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
