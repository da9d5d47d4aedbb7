/* attncap ground: does the attention for "dog" sit on the dog? Scores a model against hand-drawn boxes
 * or the detector's. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "attncap/captioner.h"
#include "attncap/dataset.h"
#include "attncap/grounding.h"
#include "attncap/tokenize.h"
#include "commands.h"
#include "inputs.h"
#include "messages.h"
#include "options.h"
#include "progress.h"

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

typedef struct {
    long n, hits, n_other, undetected;
    double mass, area, chance, other; /* other: attention in the object of the caption's other words */
} tally;

typedef struct { const char *name; int photos, named; tally gen, ref; } klass; /* an object class's rows */

static void tally_add(tally *t, double mass, double area, int hit, double chance) {
    t->n++, t->hits += hit, t->mass += mass, t->area += area, t->chance += chance;
}

static void tally_merge(tally *dst, const tally *src) {
    dst->n += src->n, dst->hits += src->hits, dst->n_other += src->n_other, dst->undetected += src->undetected;
    dst->mass += src->mass, dst->area += src->area, dst->chance += src->chance, dst->other += src->other;
}

static void print_row(const klass *k, int json, int detected) {
    if (json) {
        printf("{\"object\": \"%s\", \"photos\": %d, \"named\": %d", k->name, k->photos, k->named);
        for (int s = 0; s < 2; s++) {
            const tally *t = s ? &k->ref : &k->gen;
            double n = t->n ? (double)t->n : 1;
            printf(", \"%s\": {\"n\": %ld, \"hit\": %.4f, \"chance\": %.4f, \"mass\": %.4f, \"others\": %.4f, "
                   "\"area\": %.4f",
                   s ? "references" : "generated", t->n, t->hits / n, t->chance / n, t->mass / n,
                   t->other / (t->n_other ? (double)t->n_other : 1), t->area / n);
            if (detected) printf(", \"undetected\": %ld", t->undetected);
            printf("}");
        }
        printf("}\n");
        return;
    }
    printf("%-13s %6d %5d", k->name, k->photos, k->named);
    for (int s = 0; s < 2; s++) {
        const tally *t = s ? &k->ref : &k->gen;
        if (t->n)
            printf(" | %5ld %5.2f %6.2f %5.2f %6.2f %5.2f", t->n, t->hits / (double)t->n, t->chance / t->n,
                   t->mass / t->n, t->other / (t->n_other ? t->n_other : 1), t->area / t->n);
        else printf(" | %5d %5s %6s %5s %6s %5s", 0, "-", "-", "-", "-", "-");
        if (detected) printf(" %5ld", t->undetected);
    }
    printf("\n");
}

/* Scores every word of `toks` that names one of the objects of the photo whose first object is
 * `first`; att: the words' attention (n + 1 rows). A detected object without boxes (the detector
 * did not find it) is counted and reported for each word naming it, not scored. */
static void score_words(const ac_ground_set *set, int first, const char *const *toks, int n,
                        const ac_ground_attention *att, klass *cls, const int *cls_of, int reference, int verbose,
                        int *named) {
    const char *src = reference ? "ref" : "gen";
    for (int o = first; o < set->n; o++) {
        const ac_ground_object *obj = &set->obj[o];
        if (strcmp(obj->photo, set->obj[first].photo)) continue;
        tally *t = reference ? &cls[cls_of[o]].ref : &cls[cls_of[o]].gen;
        int names_it = 0;
        for (int k = 0; k < n && !names_it; k++) names_it = ac_ground_names(obj, toks[k]);
        if (!names_it) continue;
        const double area = ac_ground_area(obj->boxes, obj->n_boxes);
        const double chance = ac_ground_hit_chance(att->grid_h, att->grid_w, obj->boxes, obj->n_boxes);
        for (int k = 0; k < n; k++) {
            const int names = ac_ground_names(obj, toks[k]);
            if (!obj->n_boxes) { /* detected mode: the detector did not find it */
                if (names && ++t->undetected && verbose)
                    printf("%s\t%s\t%s\t%s\tnot detected\n", obj->photo, obj->words[0], src, toks[k]);
                continue;
            }
            double mass = ac_ground_row_mass(att, k, obj->boxes, obj->n_boxes);
            if (!names) {
                t->n_other++, t->other += mass;
                continue;
            }
            int hit = ac_ground_row_hit(att, k, obj->boxes, obj->n_boxes);
            tally_add(t, mass, area, hit, chance);
            if (named) named[o - first] = 1;
            if (verbose)
                printf("%s\t%s\t%s\t%s\t%.4f\t%.4f\t%d\n", obj->photo, obj->words[0], src, toks[k], mass, area, hit);
        }
    }
}

static const ac_ds_image *find_refs(const ac_dataset *ds, const char *photo) {
    const char *slash = strrchr(photo, '/');
    const char *key = slash ? slash + 1 : photo;
    for (int i = 0; ds && i < ds->n; i++)
        if (!strcmp(ds->images[i].key, key)) return &ds->images[i];
    return NULL;
}

/* --boxes detected: each photo's detected objects into set (ac_ground_detect); a photo that cannot be
 * read is reported and counted in *failed. -1 when the detector cannot be opened. */
static int detect_photos(const char *det_flag, const char *root, char **photos, int n, ac_ground_set *set,
                         int *failed, ac_err *err) {
    ac_detector *det = NULL;
    if (ac_detector_open(det_flag, NULL, &det, err)) return -1;
    for (int i = 0; i < n; i++) {
        char *path = photos[i][0] == '/' ? strdup(photos[i]) : ac_path_join(root, photos[i]);
        if (!path || ac_ground_detect(det, path, photos[i], set, err))
            fprintf(stderr, "attncap ground: %s\n", path ? err->msg : "out of memory"), (*failed)++;
        free(path);
    }
    ac_detector_close(det);
    return 0;
}

int cmd_ground(int argc, char **argv) {
    const char *boxes = NULL, *root = ".", *data = NULL, *model = NULL, *encoder = NULL;
    const char *precision = NULL, *det_flag = NULL;
    int beam = 0, verbose = 0, json = 0, threads = 0, quiet = 0, head = 0;
    const cli_opt opts[] = {
        OPT_STR("--boxes", &boxes), OPT_STR("--root", &root), OPT_STR("--data", &data),
        OPT_STR("--model", &model), OPT_STR("--encoder", &encoder), OPT_STR("--detector", &det_flag),
        OPT_INT("--beam", &beam, 1, 100),
        OPT_INT("--threads", &threads, 1, 256), OPT_INT("--head", &head, 1, 64), OPT_STR("--precision", &precision),
        OPT_FLAG("--verbose", "-v", &verbose), OPT_FLAG("--json", NULL, &json), OPT_FLAG("--quiet", "-q", &quiet),
        OPT_END,
    };
    const int n_args = cli_parse("ground", argc, argv, opts, -1, usage);
    if (n_args < 0) return n_args == CLI_HELP ? 0 : 2;
    if (cli_check_precision("ground", precision) < 0) return 2;
    const int detected = boxes && !strcmp(boxes, "detected");
    if (!boxes || detected != (n_args > 0) || (det_flag && !detected)) {
        fprintf(stderr, "attncap ground: %s (try --help)\n",
                !boxes ? "--boxes FILE or --boxes detected is required" : detected ? "--boxes detected needs photos"
                : det_flag ? "--detector is for --boxes detected" : "photos are given with --boxes detected only");
        return 2;
    }
    ac_err err = {0};
    ac_ground_set set = {0};
    ac_dataset ds = {0};
    ac_captioner cap = {0};
    klass *cls = NULL;
    int *cls_of = NULL, *named = NULL, n_cls = 0, failed = 0, rc = 1;
    if ((detected ? detect_photos(det_flag, root, argv + 1, n_args, &set, &failed, &err)
                  : ac_ground_load(boxes, &set, &err)) ||
        (data && ac_dataset_load(data, NULL, &ds, &err)) ||
        ac_captioner_init(&cap, model, encoder, threads, &err) || cli_set_precision(precision, &cap.enc, &err) ||
        (head && ac_decoder_show_head(&cap.model.dec, head, &err))) {
        fprintf(stderr, "attncap ground: %s%s\n", err.msg, cli_hint(&err));
        goto done;
    }
    if (!set.n) goto done; /* --boxes detected: no photo could be read (each reported) */
    if (beam) cap.beam.beam = beam;
    cls = calloc((size_t)set.n, sizeof *cls);
    cls_of = malloc((size_t)set.n * sizeof *cls_of);
    named = calloc((size_t)set.n, sizeof *named);
    if (!cls || !cls_of || !named) {
        fprintf(stderr, "attncap ground: out of memory\n");
        goto done;
    }
    for (int o = 0; o < set.n; o++) {
        int k = 0;
        while (k < n_cls && strcmp(cls[k].name, set.obj[o].words[0])) k++;
        if (k == n_cls) cls[n_cls++].name = set.obj[o].words[0];
        cls_of[o] = k;
    }
    int n_photos = 0;
    for (int o = 0; o < set.n; o++) n_photos += ac_ground_first_of_photo(&set, o);
    cli_progress prog;
    cli_progress_start(&prog, "ground", (uint64_t)n_photos, quiet || verbose);
    int done_photos = 0;
    for (int o = 0; o < set.n; o++) {
        const char *photo = set.obj[o].photo;
        if (!ac_ground_first_of_photo(&set, o)) continue;
        char *path = photo[0] == '/' ? strdup(photo) : ac_path_join(root, photo);
        ac_image img = {0};
        ac_caption c = {0};
        int mw, mh; /* read as attncap caption reads it (ac_encoder_min_photo) */
        ac_encoder_min_photo(&cap.enc, &mw, &mh);
        int loaded = path && ac_image_load_min(path, mw, mh, &img, &err) == 0; /* its errors name the file */
        if (!loaded || ac_captioner_run(&cap, &img, &c, NULL, NULL, &err)) {
            cli_progress_clear(&prog);
            if (!path) fprintf(stderr, "attncap ground: out of memory\n");
            else if (!loaded) fprintf(stderr, "attncap ground: %s%s\n", err.msg, cli_hint(&err));
            else fprintf(stderr, "attncap ground: %s: %s\n", path, err.msg);
            failed++;
            free(path), ac_image_free(&img);
            continue;
        }
        free(path);
        ac_image_free(&img);
        /* the caption's words as strings, to match the object's words */
        const char **toks = malloc(((size_t)c.n + 1) * sizeof *toks);
        for (int k = 0; toks && k < c.n; k++) toks[k] = ac_caption_word(&c, cap.model.vocab, k);
        memset(named, 0, (size_t)set.n * sizeof *named);
        /* the photo's own grid (the model's unless its encoder keeps the aspect ratio) */
        const int gh = c.grid_h ? c.grid_h : cap.grid_h, gw = c.grid_w ? c.grid_w : cap.grid_w;
        /* a model with regions: its rows are the cells, then the regions (ac_ground_row_mass) */
        const ac_ground_attention att = {c.alpha, gh, gw, c.regions ? c.n_regions : 0, c.regions};
        if (toks && (c.regions || !c.n_regions)) score_words(&set, o, toks, c.n, &att, cls, cls_of, 0, verbose, named);
        for (int p = o; p < set.n; p++)
            if (!strcmp(set.obj[p].photo, photo) && set.obj[p].n_boxes)
                cls[cls_of[p]].photos++, cls[cls_of[p]].named += named[p - o];
        if (verbose && toks) {
            printf("%s\tcaption\t", photo);
            for (int k = 0; k < c.n; k++) printf("%s%s", k ? " " : "", toks[k]);
            printf("\n");
        }
        free(toks);
        ac_caption_free(&c);
        const ac_ds_image *refs = find_refs(data ? &ds : NULL, photo);
        for (int r = 0; refs && r < refs->n_caps; r++) {
            ac_tokens t = {0};
            if (ac_tokenize(refs->caps[r], &t, &err)) continue; /* a malformed reference scores nothing */
            int *ids = malloc(((size_t)t.n + 1) * sizeof *ids);
            ac_caption forced = {0};
            if (ids) {
                ac_vocab_encode(cap.model.vocab, &t, ids);
                if (!ac_caption_forced_grid(&cap.model.dec, cap.ann, gh, gw, ids, t.n, &forced, &err)) {
                    const ac_ground_attention fatt = {forced.alpha, gh, gw, 0, NULL}; /* the grid alone */
                    score_words(&set, o, (const char *const *)t.tok, t.n, &fatt, cls, cls_of, 1, verbose, NULL);
                }
            }
            free(ids);
            ac_caption_free(&forced);
            ac_tokens_free(&t);
        }
        cli_progress_update(&prog, (uint64_t)++done_photos);
    }
    cli_progress_finish(&prog);
    klass all = {.name = "all"};
    for (int k = 0; k < n_cls; k++) {
        all.photos += cls[k].photos, all.named += cls[k].named;
        tally_merge(&all.gen, &cls[k].gen);
        tally_merge(&all.ref, &cls[k].ref);
    }
    const char *undet = detected ? " undet" : ""; /* its column in the table */
    if (!json)
        printf("%-13s %6s %5s | %5s %5s %6s %5s %6s %5s%s | %5s %5s %6s %5s %6s %5s%s\n%-13s %12s | %*s | %*s\n",
               "object", "photos", "named", "n", "hit", "chance", "mass", "others", "area", undet, "n", "hit", "chance",
               "mass", "others", "area", undet, "", "", detected ? 43 : 37, "generated captions", detected ? 43 : 37,
               data ? "reference captions" : "(no --data)");
    for (int k = 0; k < n_cls; k++) /* detected: the categories found or named */
        if (!detected || cls[k].photos || cls[k].gen.undetected || cls[k].ref.undetected)
            print_row(&cls[k], json, detected);
    print_row(&all, json, detected);
    rc = failed ? 1 : 0;
done:
    free(cls), free(cls_of), free(named);
    ac_captioner_free(&cap);
    ac_dataset_free(&ds);
    ac_ground_free(&set);
    return rc;
}
