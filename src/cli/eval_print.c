/* eval_print.c: the scores of `attncap eval` as text, and the novel categories' source (eval_cli.h). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "attncap/dataset.h"
#include "attncap/model.h"
#include "attncap/objects.h"
#include "eval_cli.h"

/* --novel-from: how many photos of the source name each category (read before any captioning, so a
 * bad source fails fast); those named in fewer than --novel-max photos are novel. */
int cli_eval_novel_counts(const cli_eval_opts *o, int counts[AC_N_OBJECTS], ac_err *err) {
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
static void print_objects(const cli_eval_opts *o, const ac_object_scores *ob) {
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

void cli_eval_print_scores(const cli_eval_opts *o, const ac_scores *sc, int n_ref_images) {
    const ac_bleu_counts *c = &sc->counts;
    printf("images   %d", sc->n);
    if (o->refs && n_ref_images > sc->n) printf(" (of %d in the references)", n_ref_images);
    printf("\ntestlen %lld, reflen %lld, guess [%lld, %lld, %lld, %lld], correct [%lld, %lld, %lld, %lld]\n",
           c->testlen, c->reflen, c->guess[0], c->guess[1], c->guess[2], c->guess[3], c->correct[0],
           c->correct[1], c->correct[2], c->correct[3]);
    for (int k = 0; k < 4; k++) printf("BLEU-%d   %.4f\n", k + 1, sc->bleu[k]);
    if (!isnan(sc->meteor)) printf("METEOR   %.4f\n", sc->meteor);
    printf("ROUGE-L  %.4f\nCIDEr-D  %.4f\n", sc->rouge_l, sc->cider_d);
    print_objects(o, &sc->objects);
    if (o->report) printf("report   %s/index.html\n", o->report);
}

void cli_eval_warn_trained(const ac_eval_set *set, const char *model) {
    const char **names = malloc(sizeof *names * ((size_t)set->n + 1));
    if (!names) return;
    for (int first = 0; first < set->n; first++) { /* each model once, at its first item */
        const char *m = model ? model : set->items[first].model;
        int seen = !m;
        for (int k = 0; !seen && k < first; k++) seen = !model && set->items[k].model && !strcmp(set->items[k].model, m);
        if (seen || (model && first > 0)) continue;
        int n = 0, hits, n_trained;
        for (int i = 0; i < set->n; i++) {
            const ac_eval_item *it = &set->items[i];
            const char *name = it->path ? it->path : it->id;
            if (name && (model || (it->model && !strcmp(it->model, m)))) names[n++] = name;
        }
        ac_err err;
        if (ac_model_training_photos_hits(m, names, n, &hits, &n_trained, &err)) continue; /* scoring goes on */
        if (hits > 0)
            fprintf(stderr, "attncap eval: warning: %d of the %d photos scored are among the %d %s was trained on (by "
                            "file name): these scores overstate how it captions new photos\n", hits, n, n_trained, m);
    }
    free(names);
}
