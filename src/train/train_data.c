/* train_data.c: what a training run learns from (train_internal.h, ac_train_load_data): the data
 * set's captions and the extra sets', tokenized and encoded against the vocabulary built from them,
 * each with its photo's feature row (and its mirror, "left" and "right" swapped), the val photos (held
 * out of train when the data set has none), the captions without photos and the detections. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "attncap/dataset.h"
#include "attncap/features.h"
#include "attncap/tags.h"
#include "attncap/tokenize.h"
#include "attncap/vocab.h"
#include "train_internal.h"
#include "alloc_internal.h"

static int swap_lr(const ac_vocab *v, int id) {
    const char *w = ac_vocab_word(v, id);
    if (w && !strcmp(w, "left")) return ac_vocab_id(v, "right");
    if (w && !strcmp(w, "right")) return ac_vocab_id(v, "left");
    return id;
}

/* The training photos' captions: data's train split, then every photo of extra_data's sets. */
static int load_extra_data(ac_trainer *tr, ac_err *err) {
    const ac_train_opts *o = tr->o;
    if (!o->extra_data || !*o->extra_data) return 0;
    char *list = ac_strdup(o->extra_data), *save = NULL;
    if (!list) return ac_errf(err, "out of memory");
    int rc = 0;
    for (char *spec = strtok_r(list, ",", &save); spec && !rc; spec = strtok_r(NULL, ",", &save)) {
        if (tr->n_xds == (int)(sizeof tr->xds / sizeof *tr->xds)) rc = ac_errf(err, "train: more than 8 extra datasets");
        else if (ac_dataset_load(spec, NULL, &tr->xds[tr->n_xds], err)) rc = -1;
        else tr->n_xds++;
    }
    free(list);
    return rc;
}

/* A data set with no val photo at all (a few captioned photos split by their names' hashes, none in
 * val): every k-th training photo with features, in the data set's order, becomes a val photo for
 * the run, a tenth of them (at least one, leaving at least one to train on). Returns how many. */
static int hold_out_val(ac_trainer *tr) {
    ac_dataset *ds = &tr->ds;
    int n_train = 0;
    for (int i = 0; i < ds->n; i++) {
        if (ds->images[i].split == AC_SPLIT_VAL) return 0;
        n_train += ds->images[i].split == AC_SPLIT_TRAIN && ac_features_find(&tr->fc, ds->images[i].key) >= 0;
    }
    if (n_train < 2) return 0;
    const int want = n_train / 10 > 1 ? n_train / 10 : 1, step = n_train / want;
    int seen = 0, held = 0;
    for (int i = 0; i < ds->n && held < want; i++) {
        ac_ds_image *im = &ds->images[i];
        if (im->split != AC_SPLIT_TRAIN || ac_features_find(&tr->fc, im->key) < 0) continue;
        if (seen++ % step == step - 1) im->split = AC_SPLIT_VAL, held++;
    }
    return held;
}

/* With --imagenet-words: the words (a resumed run has its checkpoint's), then every photo's regions of
 * them, merged with its detections as the captioner merges them. */
static int imagenet_words(ac_trainer *tr, ac_err *err) {
    const ac_train_opts *o = tr->o;
    if (!tr->R || (!o->imagenet_words && !tr->model.imagenet.n)) return 0;
    if (!tr->model.imagenet.n) {
        ac_tag_table *t;
        if (ac_tag_table_load(o->imagenet_words, &t, err)) return -1;
        const int rc = ac_imagenet_words_from_table(t, tr->model.vocab, AC_IMAGENET_WORDS_MAX, &tr->model.imagenet, err);
        ac_tag_table_free(t);
        if (rc) return -1;
        if (!tr->model.imagenet.n)
            return ac_errf(err, "%s: no word of the table is in the vocabulary without naming a COCO object", o->imagenet_words);
    }
    ac_rows_regions rr = {tr->reg, tr->n_reg, tr->R};
    return ac_imagenet_words_add_to_rows(&tr->model.imagenet, &tr->fc, o->init, tr->region_min, tr->R, o->threads, &rr, err);
}

/* The objects an encoded caption names (a region model's): COCO's, and with ImageNet words
 * (word_inet: each vocabulary word's category, or NULL) those it says, as (pseudo-)regions' categories. */
static void caption_objects(const ac_tokens *t, const short *word_inet, ac_train_example *e) {
    e->n_obj = (unsigned char)ac_train_text_objects(t, e->obj);
    if (word_inet) {
        int n_obj = e->n_obj;
        ac_imagenet_words_in_caption(word_inet, e->w, e->n, e->obj, &n_obj, AC_TEXT_OBJECTS);
        e->n_obj = (unsigned char)n_obj;
    }
}

int ac_train_load_data(ac_trainer *tr, ac_err *err) {
    const ac_train_opts *o = tr->o;
    if (ac_dataset_load(o->data, o->image_dir, &tr->ds, err) || load_extra_data(tr, err)) return -1;
    size_t budget = SIZE_MAX; /* bytes of feature rows loaded into memory; more are mapped */
    if (o->map_features > 0) budget = 0;
    else if (o->map_features < 0) {
        long pages = sysconf(_SC_PHYS_PAGES), page = sysconf(_SC_PAGESIZE);
        if (pages > 0 && page > 0) budget = (size_t)pages / 2 * (size_t)page;
    }
    if (ac_features_open(o->features, budget, &tr->fc, err)) return -1;
    tr->Lg = tr->fc.grid_h * tr->fc.grid_w, tr->D = tr->fc.dim;
    tr->R = o->detections && *o->detections ? (o->regions > 0 ? o->regions : AC_REGIONS_DEFAULT) : 0;
    tr->L = tr->Lg + tr->R;
    tr->region_scale = AC_REGION_SCALE, tr->region_min = AC_REGION_MIN_SCORE;
    if (tr->R > AC_REGIONS_MAX) return ac_errf(err, "train: %d regions per photo is over the %d a model holds", tr->R, AC_REGIONS_MAX);
    if (tr->R && tr->D > AC_REGION_MAX_DIM) return ac_errf(err, "train: regions need annotation vectors of at most %d", AC_REGION_MAX_DIM);
    if (tr->R && ac_train_regions_load(tr, err)) return -1;
    tr->n_held_out = hold_out_val(tr);
    /* Tokenize the training captions of photos that have features. */
    int cap = 0, n = 0, missing = 0, has_flip = 0;
    for (int d = 0; d <= tr->n_xds; d++) {
        const ac_dataset *ds = d ? &tr->xds[d - 1] : &tr->ds;
        for (int i = 0; i < ds->n; i++) cap += ds->images[i].n_caps;
    }
    ac_tokens *toks = ac_calloc((size_t)cap + 1, sizeof *toks);
    int *feat = ac_calloc((size_t)cap + 1, sizeof *feat), *featf = ac_calloc((size_t)cap + 1, sizeof *featf);
    if (!toks || !feat || !featf) return free(toks), free(feat), free(featf), ac_errf(err, "out of memory");
    int rc = -1, n_text = 0, n_all = 0, cap_text = cap + 1;
    short *word_inet = NULL; /* with ImageNet words: [vocab] each word's category (imagenet_words.h) */
    for (int d = 0; d <= tr->n_xds; d++) {
        const ac_dataset *ds = d ? &tr->xds[d - 1] : &tr->ds;
        for (int i = 0; i < ds->n; i++) {
            const ac_ds_image *im = &ds->images[i];
            if (d == 0 && im->split != AC_SPLIT_TRAIN) continue;
            int f = ac_features_find(&tr->fc, im->key);
            tr->n_photos++;
            if (f < 0) {
                missing++;
                continue;
            }
            char fk[1200];
            snprintf(fk, sizeof fk, "%s#flip", im->key);
            int ff = ac_features_find(&tr->fc, fk);
            has_flip |= ff >= 0;
            for (int k = 0; k < im->n_caps; k++) {
                if (o->max_train > 0 && n >= o->max_train) break;
                ac_err e2;
                const int bad = ac_tokenize(im->caps[k], &toks[n], &e2);
                if (bad == -2) goto oom; /* the run's failure: skipping would train on other captions */
                if (bad) continue;       /* invalid UTF-8: skip the caption */
                if (toks[n].n == 0 || toks[n].n > o->max_words) {
                    ac_tokens_free(&toks[n]);
                    continue;
                }
                feat[n] = f, featf[n] = ff, n++;
            }
        }
    }
    tr->n_missing = missing;
    if (n == 0) {
        ac_errf(err, "%s: no training caption has a photo in the feature cache %s (%d photos missing)", o->data,
                o->features, missing);
        n_all = n;
        goto done;
    }
    /* Captions without photos go after the paired ones: the vocabulary counts both. */
    n_all = n;
    if (ac_train_read_text(tr, &toks, &n_all, &cap_text, err)) goto done;
    n_text = n_all - n;
    tr->use_flip = o->flip < 0 ? has_flip : o->flip && has_flip;
    if (!tr->model.vocab && ac_vocab_build(toks, n + n_text, o->min_count, &tr->model.vocab, err)) goto done;
    if (imagenet_words(tr, err)) goto done;
    if (n_text > 0 && tr->R && tr->model.imagenet.n) { /* each word's ImageNet word, looked up per token */
        const int V = ac_vocab_size(tr->model.vocab);
        if (!(word_inet = ac_malloc(sizeof *word_inet * (size_t)V))) goto oom;
        for (int w = 0; w < V; w++) word_inet[w] = -1;
        ac_imagenet_words_categories(&tr->model.imagenet, word_inet);
    }
    if (n_text > 0) {
        if (!(tr->tex = ac_calloc((size_t)n_text, sizeof *tr->tex))) goto oom;
        for (int i = 0; i < n_text; i++) {
            ac_train_example *e = &tr->tex[i];
            e->feat = e->feat_flip = -1, e->n = toks[n + i].n;
            if (!(e->w = ac_malloc(sizeof(int) * (size_t)e->n))) goto oom;
            ac_vocab_encode(tr->model.vocab, &toks[n + i], e->w);
            if (tr->R) caption_objects(&toks[n + i], word_inet, e);
            tr->n_tex++;
        }
    }
    tr->ex = ac_calloc((size_t)n, sizeof *tr->ex);
    if (!tr->ex) goto oom;
    tr->n_ex = n; /* now: a failure below leaves rows of NULL words, which trainer_free frees */
    for (int i = 0; i < n; i++) {
        ac_train_example *e = &tr->ex[i];
        e->feat = feat[i], e->feat_flip = tr->use_flip ? featf[i] : -1, e->n = toks[i].n;
        e->w = ac_malloc(sizeof(int) * (size_t)e->n);
        if (!e->w) goto oom;
        ac_vocab_encode(tr->model.vocab, &toks[i], e->w);
        if (tr->R) caption_objects(&toks[i], word_inet, e); /* what the pseudo-regions imitate */
        if (e->feat_flip >= 0) {
            e->wf = ac_malloc(sizeof(int) * (size_t)e->n);
            if (!e->wf) goto oom;
            for (int k = 0; k < e->n; k++) e->wf[k] = swap_lr(tr->model.vocab, e->w[k]);
        }
    }
    tr->n_ex = n;
    tr->img_start = ac_malloc(sizeof(int) * (size_t)n), tr->img_n = ac_malloc(sizeof(int) * (size_t)n);
    if (!tr->img_start || !tr->img_n) goto oom;
    for (int i = 0; i < n; i++) {
        if (i == 0 || tr->ex[i].feat != tr->ex[i - 1].feat) tr->img_start[tr->n_img] = i, tr->img_n[tr->n_img++] = 0;
        int c = ++tr->img_n[tr->n_img - 1];
        if (c > tr->max_caps) tr->max_caps = c;
    }
    /* Validation photos and captions. */
    for (int i = 0; i < tr->ds.n; i++) {
        const ac_ds_image *im = &tr->ds.images[i];
        if (im->split != AC_SPLIT_VAL) continue;
        int f = ac_features_find(&tr->fc, im->key);
        if (f < 0) continue;
        if (o->max_val > 0 && tr->n_vi >= o->max_val) break;
        ac_val_image *vi = ac_realloc(tr->vi, sizeof *vi * (size_t)(tr->n_vi + 1));
        if (!vi) goto oom;
        tr->vi = vi;
        vi = &tr->vi[tr->n_vi++];
        memset(vi, 0, sizeof *vi);
        vi->feat = f;
        vi->id = im->key;
        vi->refs = ac_calloc((size_t)im->n_caps + 1, sizeof(char *));
        ac_train_example *ve = ac_realloc(tr->vex, sizeof *ve * (size_t)(tr->n_vex + im->n_caps + 1));
        if (ve) tr->vex = ve; /* before the check: realloc freed the old block */
        if (!vi->refs || !ve) goto oom;
        for (int k = 0; k < im->n_caps; k++) {
            ac_tokens t;
            ac_err e2;
            const int bad = ac_tokenize(im->caps[k], &t, &e2);
            if (bad == -2) goto oom;
            if (bad) continue;
            if (!(vi->refs[vi->n_refs] = ac_tokens_join(&t))) {
                ac_tokens_free(&t);
                goto oom;
            }
            vi->n_refs++;
            if (t.n > 0 && t.n <= o->max_words) {
                ac_train_example *e = &tr->vex[tr->n_vex];
                memset(e, 0, sizeof *e);
                e->feat = f, e->feat_flip = -1, e->n = t.n;
                e->w = ac_malloc(sizeof(int) * (size_t)t.n);
                if (!e->w) {
                    ac_tokens_free(&t);
                    goto oom;
                }
                ac_vocab_encode(tr->model.vocab, &t, e->w);
                tr->n_vex++;
            }
            ac_tokens_free(&t);
        }
    }
    if (tr->n_vi == 0) {
        ac_errf(err, "%s: no validation photo has features in %s (a val/dev split is needed for early stopping: "
                     "the val photos need features too, or mark others val, e.g. a third column "
                     "image<TAB>caption<TAB>val in a TSV)", o->data, o->features);
        goto done;
    }
    rc = 0;
    goto done;
oom:
    ac_errf(err, "out of memory loading training data");
done:
    for (int i = 0; i < (n_all > n ? n_all : n); i++) ac_tokens_free(&toks[i]);
    free(toks), free(feat), free(featf), free(word_inet);
    return rc;
}
