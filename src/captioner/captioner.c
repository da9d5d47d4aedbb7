/* captioner.c: encoder identity check, photo -> caption (the model and encoder are found by locate.c). */
#include "attncap/captioner.h"

#include "captioner_internal.h"

#include "attncap/font.h"
#include "attncap/objects.h"
#include "attncap/safetensors.h"
#include "attncap/tokenize.h"
#include "locate_internal.h"
#include "alloc_internal.h"
#include "decoder_internal.h"

#include <pthread.h>

#include <dirent.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* A model with ImageNet words (imagenet_words.h): the encoder's classifier on the grid the CNN pass
 * made, over the whole photo and the naming's windows. */
static int open_imagenet_classes(ac_captioner *c, ac_err *err) {
    const ac_imagenet_words *iw = &c->model.imagenet;
    if (iw->n == 0) return 0;
    ac_grid_window win[AC_NAMING_WINDOWS];
    if (ac_captioner_want_classes(c, win, ac_grid_naming_windows(c->grid_h, c->grid_w, win), err))
        return ac_err_prefix(err, "the model names ImageNet words and needs its encoder's classifier");
    if (c->n_classes != iw->n_classes)
        return ac_errf(err, "%s: the model's ImageNet words mean %d classes, the encoder's classifier has %d",
                       c->model.path ? c->model.path : "model", iw->n_classes, c->n_classes);
    return 0;
}

/* The decoder model, loaded on a thread of its own while ac_captioner_init opens the CNNs. */
typedef struct model_load {
    const char *path;
    ac_model *model;
    ac_err err;
    int rc;
} model_load;

static void *load_model(void *arg) {
    model_load *j = arg;
    j->rc = ac_model_init_at(j->path, j->model, &j->err);
    return NULL;
}

/* The encoder and the detector that the model at mpath names, from its header alone, so that this can
 * run while the model's weights load (nothing of c->model is touched). What is wrong with the model
 * file itself, its loading says (its error comes first). */
static int open_cnns(ac_captioner *c, const char *mpath, const char *encoder_flag, int threads, ac_err *err) {
    ac_st_file h;
    if (ac_st_read_header(mpath, &h, err)) return -1;
    const char *enc_json = ac_st_meta(&h, "encoder"), *cfg_json = ac_st_meta(&h, "config");
    ac_decoder_config cfg;
    char *epath = NULL;
    int rc = -1;
    if (!enc_json || !cfg_json) {
        ac_errf(err, "%s: metadata '%s' missing", mpath, !enc_json ? "encoder" : "config");
        goto done;
    }
    if (ac_decoder_config_from_json(cfg_json, &cfg, err)) goto done;
    if (ac_encoder_id_parse(enc_json, mpath, &c->id, err)) goto done;
    if (ac_locate_encoder(encoder_flag, mpath, c->id.file, c->id.sha256, 0, &epath, err)) goto done;
    /* The detector beside the encoder: it runs on one of the encoder's threads (with threads / 2 of its
     * own), which rejoins the encoder when it is done. The detector's layers split less well over
     * threads than the encoder's (MobileNetV2 at 448: 1.9x on 2 threads, YOLOX-nano 1.55x). */
    c->cnns_beside = cfg.regions > 0 && threads >= 2;
    const int det_threads = c->cnns_beside ? threads / 2 : threads;
    const int enc_threads = c->cnns_beside ? threads - det_threads + 1 : threads;
    if (ac_encoder_open(epath, c->id.layer[0] ? c->id.layer : NULL, c->id.size ? c->id.size : 224, enc_threads, &c->enc,
                        err)) {
        ac_encoder_sha_check(epath, c->id.file, c->id.sha256, err); /* a different file: say so rather than how it failed to parse */
        goto done;
    }
    if (c->id.sha256[0] && strcmp(c->enc.sha256, c->id.sha256)) { /* refused before any use */
        ac_errf(err, "%s: SHA-256 %.12s... differs from the model's encoder %s (%.12s...): refusing a different "
                     "encoder (get the right one with `make models`)", epath, c->enc.sha256,
                c->id.file[0] ? c->id.file : "(unnamed)", c->id.sha256);
        goto done;
    }
    if (ac_captioner_open_detector(c, mpath, cfg.regions, det_threads, err)) goto done;
    rc = 0;
done:
    free(epath);
    ac_st_free(&h);
    return rc;
}

int ac_captioner_init(ac_captioner *c, const char *model_flag, const char *encoder_flag, int threads, ac_err *err) {
    memset(c, 0, sizeof *c);
    c->threads = threads;
    if (threads <= 0) threads = ac_default_threads();
    char *mpath = NULL;
    if (ac_find_model(model_flag, &mpath, err)) return -1;
    /* With threads to spare, the decoder's weights load while this thread opens the encoder and the
     * detector (a one-photo caption's whole process: 0.21 -> 0.19 s). The model's error comes first,
     * as when it is loaded first. */
    model_load job = {.path = mpath, .model = &c->model};
    pthread_t loader;
    const int beside = threads > 1 && pthread_create(&loader, NULL, load_model, &job) == 0;
    if (!beside) load_model(&job);
    ac_err cnn_err = {0};
    const int cnn_rc = beside || job.rc == 0 ? open_cnns(c, mpath, encoder_flag, threads, &cnn_err) : 0;
    if (beside) pthread_join(loader, NULL);
    free(mpath);
    if (job.rc || cnn_rc) {
        if (err) *err = job.rc ? job.err : cnn_err;
        ac_captioner_free(c);
        return -1;
    }
    /* one photo's search on all the threads (lanes search on their own: ac_captioner_search) */
    ac_decoder_set_threads(&c->model.dec, threads);
    if (c->id.has_norm) c->enc.norm.mean = c->id.norm_mean, c->enc.norm.scale = c->id.norm_scale;
    /* photos are prepared as the training photos were, from here on */
    if (ac_encoder_set_resize(&c->enc, c->id.policy, err)) goto fail;
    const ac_decoder_config *cfg = &c->model.dec.cfg;
    c->grid_h = c->enc.grid_h, c->grid_w = c->enc.grid_w, c->D = c->enc.dim, c->L = c->grid_h * c->grid_w;
    if (c->L != cfg->n_ann - cfg->regions || c->D != cfg->dim) {
        ac_errf(err, "%s: the encoder gives %dx%d x %d annotations but the model expects %d x %d", c->enc.path, c->grid_h,
                c->grid_w, c->D, cfg->n_ann, cfg->dim);
        goto fail;
    }
    if (cfg->grid_h * cfg->grid_w == c->L) c->grid_h = cfg->grid_h, c->grid_w = cfg->grid_w;
    if (open_imagenet_classes(c, err)) goto fail;
    c->ann = ac_malloc((size_t)cfg->n_ann * c->D * sizeof *c->ann);
    if (!c->ann) {
        ac_errf(err, "out of memory");
        goto fail;
    }
    c->beam = c->model.decode; /* the decoding settings chosen on dev, if recorded */
    c->naming = ac_naming_opts_for_model(&c->model);
    c->naming.mode = AC_TAGS_OFF; /* until ac_captioner_set_naming asks */
    return 0;
fail:
    ac_captioner_free(c);
    return -1;
}

static void clear_given(ac_captioner *c) {
    for (int k = 0; c->given_words && k < c->n_given; k++) free(c->given_words[k]);
    free(c->given_words), free(c->given);
    c->given_words = NULL, c->given = NULL, c->n_given = 0;
}

void ac_captioner_free(ac_captioner *c) {
    if (!c) return;
    if (c->enc.cnn || c->enc.model) ac_encoder_close(&c->enc);
    ac_model_free(&c->model);
    free(c->ann);
    clear_given(c);
    ac_class_head_free(c->head);
    free(c->windows), free(c->probs);
    ac_tag_table_free(c->tags);
    ac_presence_free(c->presence);
    free(c->presence);
    free(c->word_object);
    free(c->naming_words);
    ac_font_free(c->font);
    ac_captioner_close_detector(c);
    memset(c, 0, sizeof *c);
}

int ac_captioner_prepare(const ac_captioner *c, const ac_image *photo, ac_image *prepared, ac_err *err) {
    return ac_encoder_prepare(&c->enc, photo, prepared, err);
}

static int given_caption(const ac_captioner *c, const ac_decoder *dec, const ac_name_task *t, ac_caption *out,
                         ac_err *err) {
    const int n = c->n_given;
    int gh, gw;
    ac_name_task_grid(&dec->cfg, t, &gh, &gw);
    /* a model with regions attends to them here too (and a copy model copies) */
    if (ac_caption_forced_regions(dec, t->ann, gh, gw, t->n_regions, t->regions, c->given, n, out, err))
        return -1;
    int ok = (out->labels = ac_calloc((size_t)n + 1, sizeof *out->labels)) != NULL;
    for (int k = 0; ok && k < n; k++) ok = (out->labels[k] = ac_strdup(c->given_words[k])) != NULL;
    if (!ok) {
        ac_caption_free(out);
        return ac_errf(err, "out of memory");
    }
    return 0;
}

int ac_captioner_set_given(ac_captioner *c, const char *caption, ac_err *err) {
    clear_given(c);
    if (!caption) return 0;
    ac_tokens t = {0};
    if (ac_tokenize(caption, &t, err)) return -1;
    if (t.n == 0) {
        ac_tokens_free(&t);
        return ac_errf(err, "the given caption has no words");
    }
    int *ids = ac_malloc((size_t)t.n * sizeof *ids);
    if (!ids) {
        ac_tokens_free(&t);
        return ac_errf(err, "out of memory");
    }
    ac_vocab_encode(c->model.vocab, &t, ids); /* unknown words become <unk> */
    c->given = ids, c->given_words = t.tok, c->n_given = t.n; /* the tokens move into c */
    return 0;
}

int ac_captioner_want_classes(ac_captioner *c, const ac_grid_window *win, int n_win, ac_err *err) {
    ac_class_head_free(c->head);
    free(c->windows), free(c->probs);
    c->head = NULL, c->windows = NULL, c->probs = NULL, c->n_windows = c->n_classes = 0;
    if (n_win < 0 || n_win > 4096 || (n_win && !win)) return ac_errf(err, "classes: bad window list (%d windows)", n_win);
    if (ac_class_head_open(&c->enc, &c->head, err)) return -1;
    c->n_classes = ac_class_head_classes(c->head);
    c->windows = ac_malloc(((size_t)n_win + 1) * sizeof *c->windows);
    c->probs = ac_malloc(((size_t)n_win + 1) * c->n_classes * sizeof *c->probs);
    if (!c->windows || !c->probs) {
        ac_class_head_free(c->head);
        free(c->windows), free(c->probs);
        c->head = NULL, c->windows = NULL, c->probs = NULL, c->n_classes = 0;
        return ac_errf(err, "out of memory");
    }
    if (n_win) memcpy(c->windows, win, (size_t)n_win * sizeof *win);
    c->n_windows = n_win;
    return 0;
}

int ac_captioner_encode(const ac_captioner *c, ac_encoder *enc, float *ann, float *probs, int *grid, const ac_image *img,
                        ac_err *err) {
    int gh, gw;
    int rc = ac_encoder_encode_grid(enc, img, ann, &gh, &gw, err);
    if (grid) grid[0] = gh, grid[1] = gw;
    if (!rc && c->head && probs) { /* classes from the same grid, before decoding: the photo's own */
        ac_grid_window *fit = NULL;
        if (c->n_windows && (gh != c->enc.grid_h || gw != c->enc.grid_w)) {
            if (!(fit = ac_malloc(sizeof *fit * (size_t)c->n_windows))) return ac_errf(err, "out of memory");
            memcpy(fit, c->windows, sizeof *fit * (size_t)c->n_windows);
            ac_grid_windows_fit(fit, c->n_windows, gh, gw);
        }
        rc = ac_class_head_forward(c->head, ann, gh, gw, c->D, fit ? fit : c->windows, c->n_windows, probs, err);
        free(fit);
    }
    return rc;
}

/* The plain search of every photo, together. */
static void plain_search(const ac_model *model, const ac_captioner *c, int n, ac_name_task *tasks) {
    ac_beam_task *bt = ac_calloc((size_t)n, sizeof *bt);
    int *idx = ac_malloc(sizeof *idx * (size_t)n), nb = 0;
    for (int i = 0; i < n; i++) {
        memset(&tasks[i].out, 0, sizeof tasks[i].out);
        ac_dec_image *img = NULL;
        if (!bt || !idx) tasks[i].failed = ac_errf(&tasks[i].err, "out of memory");
        else tasks[i].failed = !(img = ac_name_task_prepare(&model->dec, &tasks[i], &tasks[i].err));
        if (img) bt[nb] = (ac_beam_task){.img = img, .opts = c->beam}, idx[nb++] = i;
    }
    if (nb) ac_beam_search_photos(&model->dec, nb, bt);
    const ac_dec_image **account = ac_calloc((size_t)(n > 0 ? n : 1), sizeof *account);
    for (int b = 0; b < nb; b++) {
        ac_name_task *t = &tasks[idx[b]];
        t->failed = bt[b].failed, t->err = bt[b].err, t->out = bt[b].out;
        if (!account) t->failed = t->failed || ac_errf(&t->err, "out of memory");
        else account[idx[b]] = bt[b].img;
    }
    if (account) ac_name_tasks_copy_account(&model->dec, n, tasks, account); /* a copy model's, all together */
    for (int b = 0; b < nb; b++) ac_dec_image_free((ac_dec_image *)bt[b].img);
    free(account), free(bt), free(idx);
}

void ac_captioner_search(const ac_captioner *c, int n, ac_name_task *tasks, int concurrent) {
    ac_model model = c->model; /* a shallow copy: with other lanes searching, without the step's helper threads */
    if (concurrent) model.dec.step_pool = NULL;
    if (c->given) {
        for (int i = 0; i < n; i++) tasks[i].failed = given_caption(c, &model.dec, &tasks[i], &tasks[i].out, &tasks[i].err);
    } else if (c->naming.mode == AC_TAGS_OFF && c->model.confidence.n == 0) { /* nothing to add to the search */
        plain_search(&model, c, n, tasks);
    } else {
        ac_name_captions(&model, c->tags, &c->naming, &c->beam, c->n_windows + 1, c->n_classes, n, tasks);
    }
}

typedef struct detect_job {
    ac_detector *det;
    const ac_image *photo;
    ac_detect_options opts;
    ac_detections d;
    ac_err err;
    int rc;
} detect_job;

static void detect_beside(void *arg) {
    detect_job *j = arg;
    j->rc = ac_detector_detect(j->det, j->photo, &j->opts, &j->d, &j->err);
}

int ac_captioner_cnns(const ac_captioner *c, ac_encoder *enc, ac_detector *det, int beside, const ac_image *img,
                      const ac_image *photo, float *ann, float *probs, int *grid, ac_region *regions, int *n_regions,
                      ac_err *err) {
    *n_regions = 0;
    if (!det || !beside) {
        if (ac_captioner_encode(c, enc, ann, probs, grid, img, err)) return -1;
        return ac_captioner_detect(c, det, photo, ann, probs, grid, regions, n_regions, err);
    }
    detect_job j = {.det = det, .photo = photo, .opts = ac_captioner_detect_options(c)};
    /* on a thread of the encoder's square plan (a photo encoded at another shape, AC_RESIZE_ASPECT, runs on
     * that shape's plan and threads: the same results, the cores less evenly shared) */
    ac_cnn_beside(enc->cnn, detect_beside, &j);
    const int rc = ac_captioner_encode(c, enc, ann, probs, grid, img, err);
    ac_cnn_beside_wait(enc->cnn);
    if (j.rc == 0 && rc) ac_detections_free(&j.d);
    if (rc) return -1;
    if (j.rc) {
        if (err) *err = j.err;
        return -1;
    }
    *n_regions = ac_captioner_attach(c, det, &j.d, ann, probs, grid, regions);
    return 0;
}

/* photo: the photo as read, for the detector (a model with regions); img may be it, or its square. */
static int run(const ac_captioner *c, ac_encoder *enc, ac_detector *det, float *ann, float *probs, const ac_image *img,
               const ac_image *photo, ac_caption *out, double *t_cnn, double *t_dec, ac_err *err) {
    memset(out, 0, sizeof *out);
    double t0 = ac_now();
    int grid[2], nr = 0;
    ac_region regions[AC_REGIONS_MAX];
    int rc = ac_captioner_cnns(c, enc, det, enc == &c->enc && c->cnns_beside, img, photo, ann, probs, grid, regions, &nr,
                               err);
    double t1 = ac_now();
    if (t_cnn) *t_cnn += t1 - t0;
    if (rc) return -1;
    ac_name_task task = {.ann = ann, .probs = probs, .grid_h = grid[0], .grid_w = grid[1], .n_regions = nr,
                         .regions = regions};
    ac_captioner_search(c, 1, &task, enc != &c->enc); /* a batch of one: the same captions as the lanes' */
    *out = task.out;
    if (!task.failed && ac_caption_set_regions(out, regions, nr)) task.failed = ac_errf(&task.err, "out of memory");
    if (task.failed && err) *err = task.err;
    if (t_dec) *t_dec += ac_now() - t1;
    return task.failed ? -1 : 0;
}

int ac_captioner_run(ac_captioner *c, const ac_image *img, ac_caption *out, double *t_cnn, double *t_dec, ac_err *err) {
    return run(c, &c->enc, c->det, c->ann, c->probs, img, img, out, t_cnn, t_dec, err);
}

int ac_captioner_run_photo(ac_captioner *c, const ac_image *square, const ac_image *photo, ac_caption *out,
                           double *t_cnn, double *t_dec, ac_err *err) {
    return run(c, &c->enc, c->det, c->ann, c->probs, square, photo, out, t_cnn, t_dec, err);
}

int ac_captioner_lane_open(const ac_captioner *c, int threads, ac_captioner_lane *lane, ac_err *err) {
    memset(lane, 0, sizeof *lane);
    if (ac_encoder_lane(&c->enc, threads, &lane->enc, err)) {
        ac_encoder_lane_close(&lane->enc);
        return -1;
    }
    if (c->det_path && (ac_detector_open(c->det_path, &(ac_detector_opts){.threads = threads}, &lane->det, err) ||
                        ac_detector_use_precision(lane->det, ac_detector_precision(c->det), err))) {
        ac_captioner_lane_close(lane);
        return -1;
    }
    lane->ann = ac_malloc((size_t)c->model.dec.cfg.n_ann * c->D * sizeof *lane->ann);
    if (c->head) lane->probs = ac_malloc(((size_t)c->n_windows + 1) * c->n_classes * sizeof *lane->probs);
    if (!lane->ann || (c->head && !lane->probs)) {
        ac_captioner_lane_close(lane);
        return ac_errf(err, "out of memory");
    }
    return 0;
}

void ac_captioner_lane_close(ac_captioner_lane *lane) {
    if (!lane) return;
    ac_encoder_lane_close(&lane->enc); /* the rest of enc belongs to the captioner */
    ac_detector_close(lane->det);
    free(lane->ann), free(lane->probs);
    memset(lane, 0, sizeof *lane);
}

int ac_captioner_lane_run(const ac_captioner *c, ac_captioner_lane *lane, const ac_image *img, ac_caption *out,
                          double *t_cnn, double *t_dec, ac_err *err) {
    return run(c, &lane->enc, lane->det, lane->ann, lane->probs, img, img, out, t_cnn, t_dec, err);
}

/* buf = the file `name` in the model file's folder. */
static void beside_model(const ac_captioner *c, const char *name, char *buf, size_t n) {
    const char *mp = c->model.path ? c->model.path : "";
    const char *slash = strrchr(mp, '/');
    snprintf(buf, n, "%.*s%s%s", slash ? (int)(slash - mp) : 0, mp, slash ? "/" : "", name);
}

/* presence.safetensors beside the model, if there is one; it must have been fitted on the model's encoder. */
static int load_presence(ac_captioner *c, ac_err *err) {
    if (c->presence) return 0;
    char path[4096];
    beside_model(c, "presence.safetensors", path, sizeof path);
    /* naming settings that use the head (the model's metadata, or the caller's) need the file: without
     * it the captions would change silently */
    if (!ac_is_file(path))
        return c->naming.presence_absent > 0 || c->naming.presence_ratio > 0
                   ? ac_errf(err, "%s: missing: the naming settings use this presence head (presence_absent %g, "
                                  "presence_ratio %g); put it beside the model or turn naming off", path,
                             c->naming.presence_absent, c->naming.presence_ratio)
                   : 0;
    ac_presence *p = ac_calloc(1, sizeof *p);
    if (!p) return ac_errf(err, "out of memory");
    ac_encoder_id pid;
    if (ac_presence_load(path, p, err) || ac_encoder_id_parse(p->encoder_json, path, &pid, err)) {
        ac_presence_free(p), free(p);
        return -1;
    }
    if (!ac_encoder_id_same(&pid, &c->id) || p->dim != c->D) {
        ac_presence_free(p), free(p);
        return ac_errf(err, "%s: fitted on another encoder's features than the model's", path);
    }
    c->presence = p;
    return 0;
}

int ac_captioner_set_naming(ac_captioner *c, const ac_naming_opts *o, const char *table_path, ac_err *err) {
    if (o->mode == AC_TAGS_GIVEN && (!o->words || !*o->words)) return ac_errf(err, "tags: no words given");
    char *words = o->words ? ac_strdup(o->words) : NULL;
    if (o->words && !words) return ac_errf(err, "out of memory");
    free(c->naming_words);
    c->naming_words = words;
    c->naming = *o;
    c->naming.words = words;
    if (!c->naming.presence) c->naming.presence = c->presence;
    if (o->mode == AC_TAGS_AUTO && o->tag_objects_only > 0 && !o->word_object) { /* once per captioner */
        if (!c->word_object) {
            if (!(c->word_object = ac_malloc((size_t)ac_vocab_size(c->model.vocab)))) return ac_errf(err, "out of memory");
            ac_objects_of_vocab(c->model.vocab, c->word_object);
        }
        c->naming.word_object = c->word_object;
    }
    if (o->mode == AC_TAGS_OFF || c->tags) return 0;
    /* The table: the caller's, or beside the model. */
    char buf[4096];
    const char *path = table_path;
    if (!path) {
        beside_model(c, "imagenet_words.tsv", buf, sizeof buf);
        path = buf;
    }
    if (o->mode == AC_TAGS_GIVEN && !table_path && !ac_is_file(path)) return 0; /* the words as they are */
    if (ac_tag_table_load(path, &c->tags, err)) return -1;
    if (o->mode != AC_TAGS_AUTO) return 0;
    ac_grid_window win[AC_NAMING_WINDOWS];
    const int nw = ac_grid_naming_windows(c->grid_h, c->grid_w, win);
    if (ac_captioner_want_classes(c, win, nw, err)) return -1;
    if (ac_tag_table_classes(c->tags) != c->n_classes)
        return ac_errf(err, "%s: %d classes, the encoder's head has %d", path, ac_tag_table_classes(c->tags), c->n_classes);
    if (load_presence(c, err)) return -1;
    c->naming.presence = c->presence;
    return 0;
}
