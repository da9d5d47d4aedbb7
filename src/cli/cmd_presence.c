/* attncap presence: fit the presence head (presence.h) on captioned photos' features. */
#include <cjson/cJSON.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "attncap/features.h"
#include "attncap/presence_data.h"
#include "commands.h"
#include "options.h"
#include "progress.h"

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

/* --init: head = the file's (same encoder and vector size as the photos'), cats its groups' categories,
 * y_out the set's labels of them; its groups made anew (the forms objects.h gives the category now,
 * the prior the share of the set's photos that show it). */
static int start_from(const char *path, const ac_presence_set *set, const char *encoder_json, ac_presence *head,
                      int cats[AC_N_OBJECTS], uint8_t **y_out, ac_err *err) {
    if (ac_presence_load(path, head, err)) return -1;
    if (head->dim != set->dim || strcmp(head->encoder_json, encoder_json))
        return ac_errf(err, "%s: fitted on another encoder's features than the cache's", path);
    if (head->k > AC_N_OBJECTS) return ac_errf(err, "%s: %d groups, more than COCO's %d categories", path, head->k, AC_N_OBJECTS);
    for (int j = 0; j < head->k; j++)
        if ((cats[j] = ac_object_index(head->groups[j].name)) < 0)
            return ac_errf(err, "%s: group '%s' is not one of COCO's categories", path, head->groups[j].name);
    ac_presence_group *groups;
    if (ac_presence_set_groups_of(set, cats, head->k, &groups, y_out, err)) return -1;
    ac_presence_groups_free(head->groups, head->k);
    head->groups = groups;
    return 0;
}

static int on_step(void *ctx, int step, int steps, double loss) {
    cli_progress *p = ctx;
    snprintf(p->extra, sizeof p->extra, "loss %.4f", loss);
    cli_progress_update(p, (uint64_t)step);
    (void)steps;
    return 0;
}

int cmd_presence(int argc, char **argv) {
    const char *features = NULL, *out = NULL, *split_s = "train", *init = NULL, *data[16] = {0};
    int n_data = 0, min_photos = 20, quiet = 0;
    ac_presence_fit_opts fo = ac_presence_fit_defaults();
    for (int i = 1; i + 1 < argc; i++) /* --data repeats, which the option table does not do */
        if (!strcmp(argv[i], "--data")) {
            if (n_data == 16) return fprintf(stderr, "attncap presence: at most 16 --data\n"), 2;
            data[n_data++] = argv[i + 1];
            memmove(argv + i, argv + i + 2, sizeof *argv * (size_t)(argc - i - 2));
            argc -= 2, i--;
        }
    const cli_opt opts[] = {
        OPT_STR("--features", &features), OPT_STR("--out", &out), OPT_STR("--split", &split_s),
        OPT_STR("--init", &init), OPT_INT("--min-photos", &min_photos, 1, 1000000), OPT_INT("--steps", &fo.steps, 0, 1000000),
        OPT_FLOAT("--lr", &fo.lr, 1e-6, 10), OPT_FLOAT("--l2", &fo.l2, 0, 10), OPT_FLAG("--quiet", "-q", &quiet),
        OPT_END,
    };
    const int np = cli_parse("presence", argc, argv, opts, 0, usage);
    if (np < 0) return np == CLI_HELP ? 0 : 2;
    const ac_split split = !strcmp(split_s, "all") ? AC_SPLIT_NONE : ac_split_parse(split_s);
    if (!features || !out || !n_data || (split == AC_SPLIT_NONE && strcmp(split_s, "all"))) {
        fprintf(stderr, "attncap presence: needs --features, --data and --out, and --split train|val|test|all (try --help)\n");
        return 2;
    }
    if (fo.steps == 0 && !init) {
        fprintf(stderr, "attncap presence: --steps 0 needs --init (a head to keep)\n");
        return 2;
    }
    ac_err err = {0};
    ac_feature_cache fc = {0};
    ac_dataset sets[16] = {0};
    ac_presence_set set = {0};
    ac_presence head = {0};
    ac_presence_group *groups = NULL;
    uint8_t *y = NULL;
    int cats[AC_N_OBJECTS], k = 0, rc = 1, loaded = 0;
    if (ac_features_load_compact(features, &fc, &err)) goto fail;
    for (; loaded < n_data; loaded++)
        if (ac_dataset_load(data[loaded], NULL, &sets[loaded], &err)) goto fail;
    if (ac_presence_set_build(&fc, sets, n_data, split, &set, &err)) goto fail;
    if (init) {
        if (start_from(init, &set, fc.encoder_json, &head, cats, &y, &err)) goto fail;
        fprintf(stderr, "attncap presence: %d photos (%d of the sets not in the cache), the %d categories of %s\n", set.n,
                set.missing, head.k, init);
    } else {
        if ((k = ac_presence_set_groups(&set, min_photos, &groups, cats, &y, &err)) < 0) goto fail;
        if (k == 0) {
            snprintf(err.msg, sizeof err.msg, "no category is named in %d or more of the %d photos", min_photos, set.n);
            goto fail;
        }
        if (ac_presence_init(&head, k, set.dim, groups, fc.encoder_json, &err)) goto fail;
        fprintf(stderr, "attncap presence: %d photos (%d of the sets not in the cache), %d categories with %d or more photos\n",
                set.n, set.missing, k, min_photos);
    }
    cli_progress bar;
    cli_progress_start(&bar, "fitting", (uint64_t)fo.steps, quiet);
    fo.progress = on_step, fo.ctx = &bar;
    double loss = 0;
    const int fit_rc = ac_presence_fit(&head, set.x, y, set.n, &fo, &loss, &err);
    cli_progress_finish(&bar);
    if (fit_rc) goto fail;
    cJSON *nj = cJSON_CreateObject();
    cJSON_AddNumberToObject(nj, "photos", set.n);
    if (init) cJSON_AddStringToObject(nj, "init", init);
    else cJSON_AddNumberToObject(nj, "min_photos", min_photos);
    cJSON_AddNumberToObject(nj, "steps", fo.steps);
    cJSON_AddNumberToObject(nj, "lr", round(fo.lr * 1e9) / 1e9); /* as given, not the float's binary tail */
    cJSON_AddNumberToObject(nj, "l2", round(fo.l2 * 1e9) / 1e9);
    cJSON_AddNumberToObject(nj, "loss", round(loss * 1e6) / 1e6);
    char *notes = nj ? cJSON_PrintUnformatted(nj) : NULL;
    cJSON_Delete(nj);
    if (!notes) {
        snprintf(err.msg, sizeof err.msg, "out of memory");
        goto fail;
    }
    const int save_rc = ac_presence_save(&head, out, 1, notes, &err);
    cJSON_free(notes);
    if (save_rc) goto fail;
    const int kh = head.k; /* the groups fitted: the data's, or --init's */
    float *prob = malloc(sizeof *prob * (size_t)set.n * kh);
    if (prob) ac_presence_forward(&head, set.x, set.n, prob);
    for (int j = 0; prob && j < kh; j++) {
        int right = 0;
        for (int i = 0; i < set.n; i++) right += (prob[(size_t)i * kh + j] >= 0.5f) == y[(size_t)i * kh + j];
        printf("%-16s %6d photos (prior %.4f)  training accuracy %.3f\n", head.groups[j].name, set.positives[cats[j]],
               head.groups[j].prior, (double)right / set.n);
    }
    free(prob);
    printf("loss %.4f; wrote %s\n", loss, out);
    rc = 0;
fail:
    if (rc) fprintf(stderr, "attncap presence: %s\n", err.msg);
    ac_presence_free(&head);
    ac_presence_groups_free(groups, k > 0 ? k : 0);
    free(y);
    ac_presence_set_free(&set);
    for (int i = 0; i < loaded; i++) ac_dataset_free(&sets[i]);
    ac_features_free(&fc);
    return rc;
}
