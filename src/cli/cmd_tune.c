/* attncap tune: pick a model's beam width and length normalisation on held-out photos. */
#include <cjson/cJSON.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "attncap/dataset.h"
#include "attncap/naming_opts.h"
#include "attncap/objects.h"
#include "attncap/tune.h"
#include "commands.h"
#include "messages.h"
#include "options.h"
#include "tune_absent.h"

#define MAX_GRID 16

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

/* "1,3,5" -> values; returns the count or -1. */
static int parse_list(const char *s, double lo, double hi, double *out) {
    int n = 0;
    const char *p = s;
    while (*p) {
        char *end;
        double v = strtod(p, &end);
        if (end == p || n == MAX_GRID || !(v >= lo && v <= hi)) return -1;
        out[n++] = v;
        if (*end == ',') end++;
        else if (*end) return -1;
        p = end;
    }
    return n;
}

static double objective(const ac_scores *s, const char *metric) {
    if (!strcmp(metric, "bleu4")) return s->bleu[3];
    if (!strcmp(metric, "meteor")) return s->meteor;
    if (!strcmp(metric, "bleu4+meteor")) return s->bleu[3] + s->meteor;
    return s->cider_d;
}

/* --naming JSON: records how tags become constraints (naming.h), as chosen on dev photos: a record the
 * model file would refuse (ac_naming_check_json) is not written. */
static int write_naming(const char *model_path, const char *json) {
    ac_err err;
    if (ac_naming_check_json(json, &err)) {
        fprintf(stderr, "attncap tune: --naming: %s (keys and ranges: docs/naming.md)\n", err.msg);
        return 2;
    }
    if (ac_model_set_meta(model_path, "naming", json, &err)) {
        fprintf(stderr, "attncap tune: %s\n", err.msg);
        return 1;
    }
    printf("naming %s written to %s\n", json, model_path);
    return 0;
}

/* --repeats SPECS: records decode "repeatable", the words people say twice in one caption. */
static int write_repeats(const char *model_path, const char *specs, double rate, int min_captions, int objects) {
    ac_err err;
    ac_model model = {0};
    ac_tokens *toks = NULL;
    int n = 0, cap = 0, rc = 1;
    unsigned char *ok = NULL;
    cJSON *rec = NULL, *words = NULL;
    char *json = NULL;
    if (ac_model_load(model_path, &model, &err) ||
        ac_dataset_read_tokens(specs, AC_SPLIT_TRAIN, 200, &toks, &n, &cap, &err))
        goto done;
    const int V = ac_vocab_size(model.vocab);
    if (!(ok = malloc((size_t)V)) || !(rec = cJSON_CreateObject()) || !(words = cJSON_AddArrayToObject(rec, "repeatable"))) {
        ac_errf(&err, "out of memory");
        goto done;
    }
    if (ac_vocab_repeatable(model.vocab, toks, n, rate, min_captions, ok, &err)) goto done;
    if (objects) ac_objects_repeatable(model.vocab, ok);
    int n_ok = 0;
    for (int w = 0; w < V; w++)
        if (ok[w]) cJSON_AddItemToArray(words, cJSON_CreateString(ac_vocab_word(model.vocab, w))), n_ok++;
    cJSON_AddNumberToObject(rec, "repeat_rate", round(rate * 1e6) / 1e6); /* as given, not float's 0.0500000007 */
    cJSON_AddNumberToObject(rec, "repeat_min", min_captions);
    cJSON_AddNumberToObject(rec, "repeat_captions", n);
    cJSON_AddBoolToObject(rec, "repeat_objects", objects);
    if (!(json = cJSON_PrintUnformatted(rec))) {
        ac_errf(&err, "out of memory");
        goto done;
    }
    if (ac_model_merge_meta(model_path, "decode", json, &err)) goto done;
    printf("%d of %d words may be said twice in a caption (twice in >= %g of the captions that use them, of %d "
           "training captions%s); recorded in %s\n", n_ok, V - AC_UNK - 1, rate, n,
           objects ? ", and the objects' words but a person's" : "", model_path);
    rc = 0;
done:
    if (rc) fprintf(stderr, "attncap tune: %s%s\n", err.msg, cli_hint(&err));
    for (int i = 0; i < n; i++) ac_tokens_free(&toks[i]);
    free(toks), free(ok), cJSON_free(json), cJSON_Delete(rec);
    ac_model_free(&model);
    return rc;
}

int cmd_tune(int argc, char **argv) {
    const char *model_path = NULL, *data = NULL, *features = NULL, *detections = NULL, *split = "val", *metric = "cider";
    const char *beams_s = "1,3,5", *alphas_s = "0,0.5,1,1.5";
    int limit = 0, meteor = 1, write = 0, threads = 0, json = 0, max_len = 20, absent = 0;
    const char *naming = NULL, *repeats = NULL;
    float repeat_rate = 0.05f;
    int repeat_min = 30, repeat_objects = 1;
    const cli_opt opts[] = {
        OPT_STR("--naming", &naming), OPT_STR("--repeats", &repeats),
        OPT_FLOAT("--repeat-rate", &repeat_rate, 0, 1),
        OPT_INT("--repeat-min", &repeat_min, 1, 1e9),
        OPT_INT("--repeat-objects", &repeat_objects, 0, 1),
        OPT_STR("--model", &model_path), OPT_STR("--data", &data),
        OPT_STR("--features", &features), OPT_STR("--detections", &detections),
        OPT_STR("--split", &split),
        OPT_STR("--metric", &metric),
        OPT_STR("--beams", &beams_s),
        OPT_STR("--alphas", &alphas_s),
        OPT_INT("--limit", &limit, 1, 1e6),
        OPT_INT("--max-len", &max_len, 1, 200),
        OPT_INT("--threads", &threads, 1, 256),
        OPT_UNSET("--no-meteor", &meteor),
        OPT_FLAG("--write", NULL, &write), OPT_FLAG("--absent", NULL, &absent),
        OPT_FLAG("--json", NULL, &json),
        OPT_END,
    };
    const int n_args = cli_parse("tune", argc, argv, opts, 0, usage);
    if (n_args < 0) return n_args == CLI_HELP ? 0 : 2;
    if (model_path && naming) return write_naming(model_path, naming);
    if (model_path && repeats) return write_repeats(model_path, repeats, repeat_rate, repeat_min, repeat_objects);
    if (!model_path || !data || !features) {
        fprintf(stderr, "attncap tune: --model, --data and --features are required (try --help)\n");
        return 2;
    }
    if (strcmp(metric, "cider") && strcmp(metric, "bleu4") && strcmp(metric, "meteor") && strcmp(metric, "bleu4+meteor")) {
        fprintf(stderr, "attncap tune: --metric must be cider, bleu4, meteor or bleu4+meteor, not '%s'\n", metric);
        return 2;
    }
    if (!meteor && strstr(metric, "meteor")) {
        fprintf(stderr, "attncap tune: --metric %s needs METEOR (drop --no-meteor)\n", metric);
        return 2;
    }
    double bv[MAX_GRID], av[MAX_GRID];
    const int nb = parse_list(beams_s, 1, 100, bv), na = parse_list(alphas_s, 0, 10, av);
    if (nb < 1 || na < 1) {
        fprintf(stderr, "attncap tune: %s: want a comma-separated list of up to %d numbers (beams 1..100, alphas 0..10)\n",
                nb < 1 ? beams_s : alphas_s, MAX_GRID);
        return 2;
    }
    int beams[MAX_GRID];
    float alphas[MAX_GRID];
    for (int i = 0; i < nb; i++) beams[i] = (int)bv[i];
    for (int i = 0; i < na; i++) alphas[i] = (float)av[i];

    ac_err err;
    ac_model model = {0};
    ac_dataset ds = {0};
    ac_feature_cache fc = {0};
    ac_rows_regions regions = {0};
    ac_tune_photo *photos = NULL;
    ac_tune_point *pts = NULL;
    int rc = 1, n = 0;
    ac_split want = AC_SPLIT_NONE;
    if (strcmp(split, "all") && (want = ac_split_parse(split)) == AC_SPLIT_NONE) {
        fprintf(stderr, "attncap tune: unknown split '%s' (val, test, train or all)\n", split);
        return 2;
    }
    if (ac_model_load(model_path, &model, &err) || ac_dataset_load(data, NULL, &ds, &err)) goto fail;
    if (ac_decoder_use_f16(&model.dec) < 0) {
        ac_errf(&err, "out of memory");
        goto fail;
    }
    const char **keys = malloc(((size_t)ds.n + 1) * sizeof *keys); /* only the split's rows are read */
    int n_keys = 0;
    for (int i = 0; keys && i < ds.n; i++)
        if ((want == AC_SPLIT_NONE || ds.images[i].split == want) && ds.images[i].n_caps > 0)
            keys[n_keys++] = ds.images[i].key;
    if (!keys) ac_errf(&err, "out of memory");
    if (!keys || ac_features_load_keys(features, keys, n_keys, &fc, &err)) {
        free(keys);
        goto fail;
    }
    free(keys);
    const ac_decoder_config *cfg = &model.dec.cfg;
    if (cfg->regions > 0 && !detections) {
        ac_errf(&err, "%s attends to detected objects: give its photos' detections (--detections)", model_path);
        goto fail;
    }
    if (detections && cfg->regions > 0 &&
        ac_rows_regions_load(detections, &fc, cfg->region_min_score, cfg->regions, &regions, NULL, &err))
        goto fail;
    if (fc.grid_h * fc.grid_w + cfg->regions != cfg->n_ann || fc.dim != cfg->dim) {
        ac_errf(&err, "%s: features of %dx%dx%d do not fit the model (L %d, D %d)", features, fc.grid_h, fc.grid_w,
                fc.dim, model.dec.cfg.n_ann, model.dec.cfg.dim);
        goto fail;
    }
    photos = calloc((size_t)ds.n + 1, sizeof *photos);
    pts = calloc((size_t)(nb * na), sizeof *pts);
    if (!photos || !pts) {
        ac_errf(&err, "out of memory");
        goto fail;
    }
    for (int i = 0; i < ds.n && (!limit || n < limit); i++) {
        const ac_ds_image *im = &ds.images[i];
        if ((want != AC_SPLIT_NONE && im->split != want) || im->n_caps == 0) continue;
        int row = ac_features_find(&fc, im->key);
        if (row < 0) {
            ac_errf(&err, "%s: no features for '%s' (run attncap features on the split's photos)", features, im->key);
            goto fail;
        }
        photos[n++] = (ac_tune_photo){row, im->id, im->n_caps, (const char *const *)im->caps};
    }
    if (n == 0) {
        ac_errf(&err, "%s: no photos with captions in split '%s'", data, split);
        goto fail;
    }
    if (absent) {
        rc = tune_absent(&model, &fc, regions.n ? &regions : NULL, photos, n, model_path, write, threads, &err) ? 1 : 0;
        goto fail;
    }
    ac_beam_opts base = model.decode; /* the grid sets beam and len_alpha */
    base.max_len = max_len;
    if (ac_tune_grid(&model, &fc, regions.n ? &regions : NULL, photos, n, &base, beams, nb, alphas, na, meteor, NULL,
                     threads, pts, &err))
        goto fail;
    int best = 0;
    for (int k = 1; k < nb * na; k++)
        if (objective(&pts[k].scores, metric) > objective(&pts[best].scores, metric)) best = k;
    if (!json)
        printf("%d photos of %s (%s), maximising %s\n beam alpha  BLEU-1 BLEU-2 BLEU-3 BLEU-4 METEOR ROUGE-L CIDEr-D\n", n,
               data, split, metric);
    for (int k = 0; k < nb * na; k++) {
        const ac_scores *s = &pts[k].scores;
        if (json)
            printf("{\"beam\": %d, \"len_alpha\": %g, \"BLEU-1\": %.6f, \"BLEU-2\": %.6f, \"BLEU-3\": %.6f, \"BLEU-4\": %.6f, "
                   "\"METEOR\": %.6f, \"ROUGE-L\": %.6f, \"CIDEr-D\": %.6f}\n",
                   pts[k].opts.beam, pts[k].opts.len_alpha, s->bleu[0], s->bleu[1], s->bleu[2], s->bleu[3],
                   isfinite(s->meteor) ? s->meteor : -1, s->rouge_l, s->cider_d);
        else {
            char met[16] = "     -";
            if (isfinite(s->meteor)) snprintf(met, sizeof met, "%6.1f", 100 * s->meteor);
            printf("%5d %5.2f  %6.1f %6.1f %6.1f %6.1f %s %7.1f %7.1f%s\n", pts[k].opts.beam, pts[k].opts.len_alpha,
                   100 * s->bleu[0], 100 * s->bleu[1], 100 * s->bleu[2], 100 * s->bleu[3], met, 100 * s->rouge_l,
                   100 * s->cider_d, k == best ? "  <- best" : "");
        }
    }
    char decode[512];
    snprintf(decode, sizeof decode, "{\"beam\":%d,\"len_alpha\":%g,\"max_len\":%d,\"chosen_by\":\"%s\",\"photos\":%d,\"split\":\"%s\"}",
             pts[best].opts.beam, pts[best].opts.len_alpha, max_len, metric, n, split);
    if (json) printf("{\"best\": %s}\n", decode); /* then --write records it */
    if (write) {
        if (ac_model_merge_meta(model_path, "decode", decode, &err)) goto fail; /* keeps "repeatable" */
        if (!json) printf("recorded in %s: %s\n", model_path, decode);
    }
    rc = 0;
fail:
    if (rc) fprintf(stderr, "attncap tune: %s%s\n", err.msg, cli_hint(&err));
    free(photos), free(pts);
    ac_features_free(&fc), ac_rows_regions_free(&regions);
    ac_dataset_free(&ds), ac_model_free(&model);
    return rc;
}
