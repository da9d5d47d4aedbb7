/* attncap calibrate: fit a model's caption confidence on dev photos (confidence.h), or its tags'
 * precision on its training photos (tag_precision.h). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "attncap/confidence.h"
#include "attncap/model.h"
#include "attncap/tag_precision.h"
#include "attncap/tags.h"
#include "calibrate_samples.h"
#include "commands.h"
#include "options.h"

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

static int write_meta(const char *model, const char *key, char *json) {
    ac_err err;
    const int rc = !json ? ac_errf(&err, "out of memory") : ac_model_set_meta(model, key, json, &err);
    free(json);
    if (rc) fprintf(stderr, "attncap calibrate: %s\n", err.msg);
    else printf("written to %s\n", model);
    return rc;
}

static int calibrate_confidence(const sample_set *s, const char *write) {
    ac_confidence half, all;
    ac_err err;
    /* Halves by position (even / odd): fit on one, measure on the other. */
    sample_set a = {0}, b = {0};
    int rc = 1;
    for (int i = 0; i < s->n; i++)
        if (calibrate_push(i % 2 ? &b : &a, s->x[i], s->y[i])) goto out;
    int right = 0;
    for (int i = 0; i < s->n; i++) right += s->y[i];
    if (ac_confidence_fit(a.x, a.y, a.n, &half, &err) || ac_confidence_fit(s->x, s->y, s->n, &all, &err)) {
        fprintf(stderr, "attncap calibrate: %s\n", err.msg);
        goto out;
    }
    const double base = (double)right / s->n;
    printf("captions %d, right %d (%.3f)\n", s->n, right, base);
    printf("fit on half, measured on the other half: calibration error %.3f, log-loss %.4f (a constant %.3f: %.4f)\n",
           ac_confidence_ece(&half, b.x, b.y, b.n, 10), ac_confidence_nll(&half, b.x, b.y, b.n),
           base, -(base * log(base) + (1 - base) * log(1 - base)));
    printf("fit on all: a %.4f, b %.4f; calibration error %.3f, log-loss %.4f\n", all.a, all.b,
           ac_confidence_ece(&all, s->x, s->y, s->n, 10), ac_confidence_nll(&all, s->x, s->y, s->n));
    rc = write && write_meta(write, "confidence", ac_confidence_to_json(&all));
out:
    free(a.x), free(a.y), free(b.x), free(b.y);
    return rc;
}

/* Mean log-loss of obs (those of odd photos if odd = 1) under tp, with or without the words' offsets. */
static double tags_nll(const ac_tag_precision *tp, const ac_tag_table *table, const tag_set *t, int odd, int offsets) {
    double s = 0;
    int n = 0;
    for (int i = 0; i < t->n; i++) {
        if (t->photo[i] % 2 != odd) continue;
        const char *w = offsets ? ac_tag_word(table, t->obs[i].word) : NULL; /* NULL: the shared curve */
        const double p = ac_tag_precision_of(tp, w, t->obs[i].prob);
        s -= log(t->obs[i].named ? p : 1 - p), n++;
    }
    return n ? s / n : NAN;
}

static int by_fired(const void *x, const void *y) {
    const ac_tag_precision_word *a = x, *b = y;
    return a->fired != b->fired ? b->fired - a->fired : strcmp(a->word, b->word);
}

static int calibrate_tags(const ac_tag_table *table, const tag_set *t, double lambda, const char *write) {
    const int nw = ac_tag_table_words(table);
    const char **words = malloc(sizeof *words * (size_t)(nw > 0 ? nw : 1));
    tag_set even = {0};
    ac_tag_precision half = {0}, all = {0};
    ac_err err;
    int rc = 1;
    if (!words) goto out;
    for (int w = 0; w < nw; w++) words[w] = ac_tag_word(table, w);
    for (int i = 0; i < t->n; i++)
        if (t->photo[i] % 2 == 0 && calibrate_push_tag(&even, t->photo[i], t->obs[i])) goto out;
    if (ac_tag_precision_fit(words, nw, even.obs, even.n, lambda, &half, &err) ||
        ac_tag_precision_fit(words, nw, t->obs, t->n, lambda, &all, &err)) {
        fprintf(stderr, "attncap calibrate: %s\n", err.msg);
        goto out;
    }
    int named = 0;
    for (int i = 0; i < t->n; i++) named += t->obs[i].named;
    const double base = (double)named / t->n;
    printf("photos %d, tags %d, named by a reference %d (%.3f), words %d\n", t->photos, t->n, named, base, all.n_words);
    printf("fit on half the photos, measured on the other half: log-loss %.4f (the shared curve alone %.4f, a constant %.4f)\n",
           tags_nll(&half, table, t, 1, 1), tags_nll(&half, table, t, 1, 0), -(base * log(base) + (1 - base) * log(1 - base)));
    printf("fit on all (lambda %g): shared curve sigmoid(%.4f + %.4f logit p): p 0.2 -> %.3f, 0.5 -> %.3f, 0.9 -> %.3f\n",
           lambda, all.a, all.b, ac_tag_precision_of(&all, NULL, 0.2), ac_tag_precision_of(&all, NULL, 0.5),
           ac_tag_precision_of(&all, NULL, 0.9));
    ac_tag_precision_word *sorted = malloc(sizeof *sorted * (size_t)(all.n_words > 0 ? all.n_words : 1));
    if (!sorted) {
        fprintf(stderr, "attncap calibrate: out of memory\n");
        goto out;
    }
    memcpy(sorted, all.words, sizeof *sorted * (size_t)all.n_words);
    qsort(sorted, (size_t)all.n_words, sizeof *sorted, by_fired);
    printf("%-20s %6s %6s %8s %8s %8s\n", "word", "tags", "named", "at 0.3", "at 0.6", "at 0.9");
    for (int i = 0; i < all.n_words; i++)
        printf("%-20s %6d %6d %8.3f %8.3f %8.3f\n", sorted[i].word, sorted[i].fired, sorted[i].named,
               ac_tag_precision_of(&all, sorted[i].word, 0.3), ac_tag_precision_of(&all, sorted[i].word, 0.6),
               ac_tag_precision_of(&all, sorted[i].word, 0.9));
    free(sorted);
    rc = write && write_meta(write, "tag_precision", ac_tag_precision_to_json(&all));
out:
    if (!words) fprintf(stderr, "attncap calibrate: out of memory\n");
    free(words), free(even.obs), free(even.photo);
    ac_tag_precision_free(&half), ac_tag_precision_free(&all);
    return rc;
}

int cmd_calibrate(int argc, char **argv) {
    const char *refs[8] = {0}, *results[8] = {0}, *write = NULL, *table_path = NULL;
    int nr = 0, nres = 0, tags = 0, rc = 1;
    double lambda = 1;
    for (int i = 1; i < argc; i++) { /* --refs/--results pairs repeat, which the option table does not do */
        const char *a = argv[i];
        if (!strcmp(a, "--help") || !strcmp(a, "-h")) return usage(stdout), 0;
        if (!strcmp(a, "--tags")) {
            tags = 1;
            continue;
        }
        if (i + 1 >= argc || (strcmp(a, "--refs") && strcmp(a, "--results") && strcmp(a, "--write") &&
                              strcmp(a, "--tag-table") && strcmp(a, "--lambda"))) {
            static const char *const known[] = {"--refs", "--results", "--write", "--tag-table", "--lambda", "--tags", "--help"};
            const int is_opt = a[0] == '-' && a[1];
            const char *near = is_opt ? cli_closest(a, known, (int)(sizeof known / sizeof *known)) : NULL;
            if (near && !strcmp(near, a)) fprintf(stderr, "attncap calibrate: %s needs a value\n", a);
            else
                fprintf(stderr, "attncap calibrate: %s '%s' (%s%s%stry --help)\n", is_opt ? "unknown option" : "unexpected argument",
                        a, near ? "did you mean " : "", near ? near : "", near ? "? " : "");
            return 2;
        }
        if (!strcmp(a, "--write")) write = argv[++i];
        else if (!strcmp(a, "--tag-table")) table_path = argv[++i];
        else if (!strcmp(a, "--lambda")) {
            char *end;
            lambda = strtod(argv[++i], &end);
            if (*end || !(lambda > 0 && lambda <= 1e6)) {
                fprintf(stderr, "attncap calibrate: --lambda must be a number in (0, 1e6], not '%s'\n", argv[i]);
                return 2;
            }
        } else if ((!strcmp(a, "--refs") ? nr : nres) == 8) {
            fprintf(stderr, "attncap calibrate: at most 8 %s\n", a);
            return 2;
        } else if (!strcmp(a, "--refs")) refs[nr++] = argv[++i];
        else results[nres++] = argv[++i];
    }
    if (nr == 0 || nr != nres) {
        fprintf(stderr, "attncap calibrate: give --refs SPEC --results FILE pairs (try --help)\n");
        return 2;
    }
    if (!tags && table_path) {
        fprintf(stderr, "attncap calibrate: --tag-table goes with --tags\n");
        return 2;
    }
    ac_tag_table *table = NULL;
    char beside[4096];
    if (tags && !table_path) {
        if (!write) {
            fprintf(stderr, "attncap calibrate: --tags needs --tag-table FILE or --write MODEL (its table beside it)\n");
            return 2;
        }
        const char *slash = strrchr(write, '/');
        snprintf(beside, sizeof beside, "%.*s%simagenet_words.tsv", slash ? (int)(slash - write) : 0, write, slash ? "/" : "");
        table_path = beside;
    }
    ac_err err;
    if (tags && ac_tag_table_load(table_path, &table, &err)) {
        fprintf(stderr, "attncap calibrate: %s\n", err.msg);
        return 1;
    }
    sample_set s = {0};
    tag_set t = {0};
    for (int i = 0; i < nr; i++)
        if (calibrate_add_pair(refs[i], results[i], table, &s, &t)) goto out;
    rc = tags ? calibrate_tags(table, &t, lambda, write) : calibrate_confidence(&s, write);
out:
    free(s.x), free(s.y), free(t.obs), free(t.photo);
    ac_tag_table_free(table);
    return rc;
}
