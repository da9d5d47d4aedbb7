/* attncap eval: coco-caption's metrics over generated captions. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "attncap/metrics.h"
#include "commands.h"

static void usage(FILE *f) {
    fprintf(f,
            "usage: attncap eval --refs REFS --results RES.json [options]\n"
            "       attncap eval --pairs PAIRS.json [options]\n\n"
            "Scores captions exactly as coco-caption does: PTB tokenization (lowercased, punctuation removed),\n"
            "then BLEU-1..4, METEOR, ROUGE-L and CIDEr-D over the images of the results.\n\n"
            "  --refs REFS        reference captions: COCO captions JSON, Karpathy dataset_*.json, a Flickr8k\n"
            "                     directory or Flickr8k.token.txt, or a TSV/CSV of image<TAB>caption lines\n"
            "  --results RES      COCO results format: [{\"image_id\": ..., \"caption\": \"...\"}]; ids are\n"
            "                     matched as text (COCO image_id, else the photo's file name)\n"
            "  --pairs PAIRS      instead of --refs/--results: [{\"captions\": [refs...], \"prediction\": \"...\"}]\n"
            "  --json             print the scores as one JSON object\n"
            "  --per-image FILE   per-image BLEU-4, METEOR, ROUGE-L, CIDEr-D (CSV if FILE ends in .csv, else JSON)\n"
            "  --no-meteor        skip METEOR (the slowest metric)\n"
            "  --wordnet DIR      WordNet 3.0 dictionary for METEOR synonyms (default /usr/share/wordnet)\n");
}

int cmd_eval(int argc, char **argv) {
    const char *refs = NULL, *results = NULL, *pairs = NULL, *per_image = NULL, *wordnet = NULL;
    int json = 0, meteor = 1;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        int has = i + 1 < argc;
        if (!strcmp(a, "--help") || !strcmp(a, "-h")) {
            usage(stdout);
            return 0;
        } else if (!strcmp(a, "--json")) json = 1;
        else if (!strcmp(a, "--no-meteor")) meteor = 0;
        else if (has && !strcmp(a, "--refs")) refs = argv[++i];
        else if (has && !strcmp(a, "--results")) results = argv[++i];
        else if (has && !strcmp(a, "--pairs")) pairs = argv[++i];
        else if (has && !strcmp(a, "--per-image")) per_image = argv[++i];
        else if (has && !strcmp(a, "--wordnet")) wordnet = argv[++i];
        else {
            fprintf(stderr, "attncap eval: unknown or incomplete option '%s' (try attncap eval --help)\n", a);
            return 2;
        }
    }
    if (!pairs && !(refs && results)) {
        fprintf(stderr, "attncap eval: need --refs and --results, or --pairs (try attncap eval --help)\n");
        return 2;
    }
    if (pairs && (refs || results)) {
        fprintf(stderr, "attncap eval: --pairs cannot be combined with --refs/--results\n");
        return 2;
    }
    ac_err err;
    ac_eval_set set;
    int n_ref_images = 0;
    int rc = pairs ? ac_eval_load_pairs(pairs, &set, &err) : ac_eval_load_results(refs, results, &set, &n_ref_images, &err);
    if (rc) {
        fprintf(stderr, "attncap eval: %s\n", err.msg);
        return 1;
    }
    ac_scores sc;
    if (ac_metrics_compute(&set, meteor ? AC_METRICS_METEOR : 0, wordnet, &sc, &err)) {
        fprintf(stderr, "attncap eval: %s\n", err.msg);
        ac_eval_set_free(&set);
        return 1;
    }
    if (per_image && ac_scores_write_per_image(per_image, &set, &sc, &err)) {
        fprintf(stderr, "attncap eval: %s\n", err.msg);
        ac_scores_free(&sc);
        ac_eval_set_free(&set);
        return 1;
    }
    if (json) {
        char *j = ac_scores_to_json(&sc);
        if (j) printf("%s\n", j);
        free(j);
    } else {
        const ac_bleu_counts *c = &sc.counts;
        printf("images   %d", sc.n);
        if (!pairs && n_ref_images > sc.n) printf(" (of %d in the references)", n_ref_images);
        printf("\ntestlen %lld, reflen %lld, guess [%lld, %lld, %lld, %lld], correct [%lld, %lld, %lld, %lld]\n",
               c->testlen, c->reflen, c->guess[0], c->guess[1], c->guess[2], c->guess[3], c->correct[0],
               c->correct[1], c->correct[2], c->correct[3]);
        for (int k = 0; k < 4; k++) printf("BLEU-%d   %.4f\n", k + 1, sc.bleu[k]);
        if (!isnan(sc.meteor)) printf("METEOR   %.4f\n", sc.meteor);
        printf("ROUGE-L  %.4f\nCIDEr-D  %.4f\n", sc.rouge_l, sc.cider_d);
    }
    ac_scores_free(&sc);
    ac_eval_set_free(&set);
    return 0;
}
