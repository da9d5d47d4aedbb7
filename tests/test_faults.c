/* Every allocation failure survived (issue 35, section 1), as SQLite's malloc fault simulation: for
 * each core entry point, the call is counted (how many allocations it makes, T), then run again with
 * allocation N failing and every one after it (ac_test_fault_install, src/base/alloc_internal.h) for
 * N = 1 .. T. Each such call fails with a message (or, when it survived, gives the fault-free
 * answer), leaves nothing in its output folder, and succeeds again once allocation works; N = T + 1
 * never fails. Under ASan (make test-asan) LeakSanitizer checks after each path that nothing leaked.
 * `make test` walks every 7th N; ATTNCAP_FAULTS_FULL=1 (CI's sanitizer pass) every N. One thread,
 * so a call's allocations come in one order. Paths: open a captioner (a tiny model over ../shared's
 * small encoder), caption a file and RGB pixels, a result's JSON, the overlays' font, overlays,
 * evaluate, open a detector and detect (../shared's YOLOX-nano), one training step of the fixture
 * (tests/fixtures/train), features of one photo into a cache, evaluate with the report (thumbnail,
 * sheet, page), the server's request as the library sees it (ac_captioner_batch_stream and the
 * JSON line: the server has no library entry of its own), the shipped model's open and caption. */
#include <dirent.h>
#include <limits.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include "alloc_internal.h"
#include "attncap/captioner.h"
#include "attncap/detect.h"
#include "attncap/encoder.h"
#include "attncap/features.h"
#include "attncap/font.h"
#include "attncap/metrics.h"
#include "attncap/report.h"
#include "attncap/tokenize.h"
#include "attncap/train.h"
#include "test.h"

#if defined(__SANITIZE_ADDRESS__)
#include <sanitizer/lsan_interface.h>
#define LEAK_CHECK() __lsan_do_recoverable_leak_check()
#else
#define LEAK_CHECK() 0
#endif

#define SMALL_ENCODER "encoders/mobilenet_v1_0.25_128_quant.tflite"
#define DETECTOR "encoders/yolox_nano.tflite"

static int full; /* ATTNCAP_FAULTS_FULL */
static char tmp[4096];
static const char *tpath(const char *name) {
    snprintf(tmp, sizeof tmp, "%s/%s", test_tmpdir(), name);
    return tmp;
}

/* A random decoder over the encoder's grid with a real-looking vocabulary (as test_captioner's). */
static int make_model(const char *out, const char *enc_path, ac_err *err) {
    ac_encoder enc;
    if (ac_encoder_open(enc_path, NULL, 128, 1, &enc, err)) return -1;
    const char *b = strrchr(enc_path, '/');
    char json[1024];
    snprintf(json, sizeof json,
             "{\"file\":\"%s\",\"sha256\":\"%s\",\"layer\":\"%s\",\"size\":128,\"grid_h\":%d,\"grid_w\":%d,\"dim\":%d,"
             "\"norm_mean\":%.9g,\"norm_scale\":%.9g,\"resize\":\"area\"}",
             b ? b + 1 : enc_path, enc.sha256, enc.layer, enc.grid_h, enc.grid_w, enc.dim, enc.norm.mean, enc.norm.scale);
    ac_model m = {0};
    ac_decoder_config cfg = {.vocab = 14, .embed = 16, .hidden = 24, .att = 16, .dim = enc.dim,
                             .n_ann = enc.grid_h * enc.grid_w, .grid_h = enc.grid_h, .grid_w = enc.grid_w};
    ac_encoder_close(&enc);
    if (ac_decoder_init(&m.dec, &cfg, 42, err)) return -1;
    for (int i = 0; i < cfg.embed * cfg.vocab; i++) m.dec.out_lo[i] *= 6;
    int rc = ac_vocab_from_json("[\"<pad>\",\"<start>\",\"<end>\",\"<unk>\",\"a\",\"dog\",\"runs\",\"on\",\"the\","
                                "\"grass\",\"man\",\"rides\",\"horse\",\"kite\"]", &m.vocab, err);
    m.encoder_json = json;
    if (!rc) rc = ac_model_save(&m, out, 0, NULL, err);
    m.encoder_json = NULL;
    ac_model_free(&m);
    return rc;
}

/* Entries of dir (0 when it is missing), each named into names when not NULL. */
static int dir_entries(const char *dir, char *names, size_t cap) {
    DIR *d = opendir(dir);
    if (!d) return 0;
    int n = 0;
    if (names && cap) names[0] = 0;
    for (struct dirent *e; (e = readdir(d));) {
        if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, "..")) continue;
        n++;
        if (names && strlen(names) + strlen(e->d_name) + 2 < cap) strcat(strcat(names, " "), e->d_name);
    }
    closedir(d);
    return n;
}

static void rm_tree(const char *path) {
    char cmd[4400];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", path);
    if (system(cmd) != 0) fprintf(stderr, "could not remove %s\n", path);
}

/* One path: run does the call (0 or -1 with err), same says whether its success gave the fault-free
 * answer (NULL: any success is), undo removes what a success made (results, files). out_dir: the
 * folder that must be as it was (empty) after a failure, or NULL. */
typedef struct path {
    const char *name;
    int (*run)(ac_err *err);
    int (*same)(void);
    void (*undo)(void);
    const char *out_dir;
    int needs_msg; /* 0: the call's contract has no message for out of memory (ac_result_json: NULL) */
    int every_fast, every_full; /* walk every such N (0: 7 and 1); a path of 84,000 allocations is sampled */
    int out_mode; /* what a failure may leave in out_dir: 0 nothing at all; 1 folders but no file; 2 whole
                   * files written before the failure (training's checkpoint) but no temporary */
} path;

/* Files below dir that a failure must not leave (mode as path.out_mode 1 and 2), named into names;
 * their count. A temporary is a name holding ".tmp" (ac_atomic_*: NAME.tmp.PID, OUT.tmp.PID folders). */
static int leftovers(const char *dir, int mode, char *names, size_t cap) {
    DIR *d = opendir(dir);
    if (!d) return 0;
    int n = 0;
    for (struct dirent *e; (e = readdir(d));) {
        if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, "..")) continue;
        char sub[4400];
        snprintf(sub, sizeof sub, "%s/%s", dir, e->d_name);
        struct stat st;
        if (lstat(sub, &st)) continue;
        const int tmp = strstr(e->d_name, ".tmp") != NULL, lock = !strcmp(e->d_name, ".lock");
        if (S_ISDIR(st.st_mode) && !tmp) n += leftovers(sub, mode, names, cap);
        else if ((tmp || (mode == 1 && !lock)) && names && strlen(names) + strlen(sub) + 2 < cap) {
            strcat(strcat(names, " "), sub + strlen(test_tmpdir()) + 1);
            n++;
        } else if (tmp || (mode == 1 && !lock)) {
            n++;
        }
    }
    closedir(d);
    return n;
}

/* Walks p; returns its allocation count T, or -1 after printing FAIL. */
static int walk(const path *p) {
    ac_err err = {0};
    const char *only = getenv("ATTNCAP_FAULTS_ONLY"); /* a path's name (part of it): walk that one alone */
    if (only && *only && !strstr(p->name, only)) return 1;
    const char *every = getenv("ATTNCAP_FAULTS_EVERY"); /* N: walk every Nth point of every path (1: all) */
    const int stride = every && atoi(every) > 0 ? atoi(every)
                     : full ? (p->every_full ? p->every_full : 1) : (p->every_fast ? p->every_fast : 7);
    /* twice unfaulted: the first warms what a captioner keeps (its scratch), the second is counted */
    for (int k = 0; k < 2; k++) {
        if (k) ac_test_fault_install(INT_MAX, 0);
        int rc = p->run(&err);
        int pending = ac_test_fault_pending();
        ac_test_fault_install(0, 0);
        if (rc) return printf("FAIL %s: without a fault: %s\n", p->name, err.msg), -1;
        if (p->same && !p->same()) return printf("FAIL %s: two runs without a fault differ\n", p->name), -1;
        if (p->undo) p->undo();
        if (k) {
            int total = INT_MAX - 1 - pending, walked = 0;
            if (getenv("ATTNCAP_FAULTS_COUNT")) return printf("# %s: %d allocations (not walked)\n", p->name, total), total;
            /* ATTNCAP_FAULTS_FROM=N: start there (a failure's N, to reproduce it at once) */
            const char *from = getenv("ATTNCAP_FAULTS_FROM");
            const int n0 = from && atoi(from) > 0 && atoi(from) <= total ? atoi(from) : 1;
            for (int n = n0; n <= total + 1; n = n >= total ? total + 1 : n + stride <= total ? n + stride : total) {
                if (n == total + 1) { /* the call makes exactly total allocations */
                    ac_test_fault_install(n, 1);
                    rc = p->run(&err);
                    int failed = ac_test_fault_count();
                    ac_test_fault_install(0, 0);
                    if (failed || rc) return printf("FAIL %s: N = T + 1 = %d: %s\n", p->name, n, rc ? err.msg : "a fault"), -1;
                    if (p->same && !p->same()) return printf("FAIL %s: N = T + 1: a different answer\n", p->name), -1;
                    if (p->undo) p->undo();
                    break;
                }
                walked++;
                /* N and every allocation after it fail; in the full walk also N alone (SQLite's
                 * persistent and transient faults: the second finds a failure swallowed into a
                 * wrong answer) */
                for (int once = 0; once <= full; once++) {
                    const char *how = once ? " alone" : "";
                    memset(&err, 0, sizeof err);
                    ac_test_fault_install(n, !once);
                    rc = p->run(&err);
                    int failed = ac_test_fault_count();
                    ac_test_fault_install(0, 0);
                    if (!failed) return printf("FAIL %s: N = %d of %d: no allocation failed (the count changed)\n", p->name, n, total), -1;
                    if (rc == 0) { /* survived: must be the answer without faults */
                        if (p->same && !p->same()) return printf("FAIL %s: N = %d%s: succeeded with another answer\n", p->name, n, how), -1;
                        if (p->undo) p->undo();
                    } else {
                        char names[512];
                        if (p->needs_msg && !err.msg[0]) return printf("FAIL %s: N = %d%s: failed without a message\n", p->name, n, how), -1;
                        names[0] = 0;
                        if (p->out_dir && (p->out_mode ? leftovers(p->out_dir, p->out_mode, names, sizeof names)
                                                       : dir_entries(p->out_dir, names, sizeof names)))
                            return printf("FAIL %s: N = %d%s (%s): left%s\n", p->name, n, how, err.msg, names), -1;
                    }
                    memset(&err, 0, sizeof err);
                    if (p->run(&err)) return printf("FAIL %s: N = %d%s: allocation works again, yet: %s\n", p->name, n, how, err.msg), -1;
                    if (p->same && !p->same()) return printf("FAIL %s: N = %d%s: the call after it gave another answer\n", p->name, n, how), -1;
                    if (p->undo) p->undo();
                }
            }
            printf("# %s: %d failure points, walked %d (N = 1 + %d k, and T)%s\n", p->name, total, walked, stride,
                   full ? ", each also alone" : "");
            return total;
        }
    }
    return -1;
}

/* ---- the paths' state ---- */
static char model_path[4200], photo_path[4200], out_dir[4200];
static const char *encoder_path;
static ac_captioner *cap;
static ac_result *res, *ref_res;
static char *ref_text;
static unsigned char *rgb;
static int rgb_h, rgb_w;
static char *json, *ref_json;
static ac_font *font;
static ac_metrics metrics, ref_metrics;
static ac_detector *det;
static ac_image giraffe;
static ac_detections dets, ref_dets;

static ac_captioner *opened;
static int run_open(ac_err *err) {
    ac_captioner_opts o;
    ac_captioner_opts_init(&o);
    o.encoder = encoder_path, o.threads = 1;
    return ac_captioner_open(model_path, &o, &opened, err);
}
static void undo_open(void) { ac_captioner_close(opened), opened = NULL; }

static int run_caption_file(ac_err *err) { return ac_caption_file(cap, photo_path, AC_KEEP_PHOTO, &res, err); }
static int run_caption_rgb(ac_err *err) { return ac_caption_rgb(cap, rgb, rgb_h, rgb_w, AC_KEEP_PHOTO, &res, err); }
static int same_caption(void) {
    int same = res && !strcmp(res->text, ref_text);
    if (same && ref_res) {
        same = res->n_words == ref_res->n_words && res->grid_h == ref_res->grid_h && res->grid_w == ref_res->grid_w &&
               !memcmp(res->attention, ref_res->attention, sizeof(float) * (size_t)(res->n_words * res->grid_h * res->grid_w));
    }
    return same;
}
static void undo_caption(void) { ac_result_free(res), res = NULL; }

static int run_json(ac_err *err) {
    json = ac_result_json(cap, ref_res, NULL, AC_JSON_ATTENTION);
    if (!json) snprintf(err->msg, sizeof err->msg, "ac_result_json: NULL");
    return json ? 0 : -1;
}
static int same_json(void) { return !ref_json || !strcmp(json, ref_json); }
static void undo_json(void) {
    if (!ref_json) ref_json = json;
    else ac_free(json);
    json = NULL;
}

static int run_font(ac_err *err) { return ac_font_load(NULL, &font, err); }
static void undo_font(void) { ac_font_free(font), font = NULL; }

static int run_overlays(ac_err *err) { return ac_result_write_overlays(cap, ref_res, out_dir, "photo", 0, err); }
static int same_overlays(void) { return ref_res->n_overlays > 1 && dir_entries(tpath("faults_out/photo"), NULL, 0) == ref_res->n_overlays; }
static void undo_overlays(void) { rm_tree(tpath("faults_out/photo")); }

static const char *cands[3] = {"a dog runs on the grass", "a man rides a horse", "a kite in the sky"};
static const char *r0[2] = {"a dog running on green grass", "the dog runs across a lawn"};
static const char *r1[3] = {"a man riding a brown horse", "a person on a horse", "a rider on horseback"};
static const char *r2[2] = {"a kite flying in a blue sky", "someone flies a kite"};
static const char *const *refs[3] = {r0, r1, r2};
static const int n_refs[3] = {2, 3, 2};
static unsigned eval_flags;
static int run_eval(ac_err *err) { return ac_evaluate(3, cands, refs, n_refs, eval_flags, &metrics, err); }
static int same_eval(void) {
    return metrics.n == 3 && metrics.bleu[3] == ref_metrics.bleu[3] && metrics.cider_d == ref_metrics.cider_d &&
           metrics.rouge_l == ref_metrics.rouge_l &&
           (metrics.meteor == ref_metrics.meteor || (isnan(metrics.meteor) && isnan(ref_metrics.meteor)));
}

static int run_det_open(ac_err *err) { return ac_detector_open(test_shared(DETECTOR), &(ac_detector_opts){.threads = 1}, &det, err); }
static void undo_det_open(void) { ac_detector_close(det), det = NULL; }
static int run_detect(ac_err *err) { return ac_detector_detect(det, &giraffe, NULL, &dets, err); }
static int same_detect(void) {
    if (dets.n != ref_dets.n) return 0;
    for (int i = 0; i < dets.n; i++)
        if (dets.items[i].label != ref_dets.items[i].label || dets.items[i].score != ref_dets.items[i].score) return 0;
    return 1;
}
static void undo_detect(void) { ac_detections_free(&dets); }
/* int8 (cnn_q8.c's filters, then a plan at the kite's aspect borrowing them), then float32 again */
static ac_image kite;
static ac_detections ref_int8;
static int run_detect_int8(ac_err *err) {
    return ac_detector_use_precision(det, AC_PRECISION_INT8, err) || ac_detector_detect(det, &kite, NULL, &dets, err);
}
static int same_detect_int8(void) {
    if (dets.n != ref_int8.n) return 0;
    for (int i = 0; i < dets.n; i++)
        if (dets.items[i].label != ref_int8.items[i].label || dets.items[i].score != ref_int8.items[i].score) return 0;
    return 1;
}
static void undo_detect_int8(void) {
    ac_err e;
    ac_detections_free(&dets);
    ac_detector_use_precision(det, AC_PRECISION_F32, &e); /* frees the int8 filters and plans: cannot fail */
}

static void check_leaks(const char *what) {
    if (LEAK_CHECK()) printf("FAIL %s: LeakSanitizer found leaks (stderr)\n", what), t_cur_failed = 1;
}

/* ---- tests ---- */
static int setup(void) {
    ac_err err;
    encoder_path = test_shared(SMALL_ENCODER);
    const char *photo = test_shared("images/cat.bmp");
    if (!encoder_path || !photo) return 0;
    snprintf(photo_path, sizeof photo_path, "%s", photo);
    snprintf(model_path, sizeof model_path, "%s", tpath("tiny.safetensors"));
    snprintf(out_dir, sizeof out_dir, "%s", tpath("faults_out"));
    if (make_model(model_path, encoder_path, &err)) return printf("# make_model: %s\n", err.msg), -1;
    ac_captioner_opts o;
    ac_captioner_opts_init(&o);
    o.encoder = encoder_path, o.threads = 1;
    if (ac_captioner_open(model_path, &o, &cap, &err)) return printf("# open: %s\n", err.msg), -1;
    ac_image img;
    if (ac_image_load(photo_path, &img, &err)) return printf("# %s\n", err.msg), -1;
    rgb_h = img.h, rgb_w = img.w;
    rgb = malloc((size_t)img.w * img.h * 3);
    memcpy(rgb, img.px, (size_t)img.w * img.h * 3);
    ac_image_free(&img);
    if (ac_caption_file(cap, photo_path, AC_KEEP_PHOTO, &ref_res, &err)) return printf("# caption: %s\n", err.msg), -1;
    ref_text = strdup(ref_res->text);
    return 1;
}

static void captioner_paths(void) {
    int s = setup();
    if (s == 0) SKIP("needs ../shared/" SMALL_ENCODER " and ../shared/images/cat.bmp");
    CHECK(s == 1);
    mkdir(out_dir, 0755);
    path paths[] = {
        /* every 3rd N in the full walk: opening is most of the walk's time under ASan (945 points, twice) */
        {"open_captioner", run_open, NULL, undo_open, NULL, 1, 0, 3, 0},
        {"caption_file", run_caption_file, same_caption, undo_caption, NULL, 1, 0, 0, 0},
        {"json", run_json, same_json, undo_json, NULL, 0, 0, 0, 0},
        {"font", run_font, NULL, undo_font, NULL, 1, 0, 0, 0},
        {"overlays", run_overlays, same_overlays, undo_overlays, out_dir, 1, 0, 0, 0},
    };
    for (size_t i = 0; i < sizeof paths / sizeof *paths; i++) {
        CHECK(walk(&paths[i]) > 0);
        check_leaks(paths[i].name);
        if (t_cur_failed) return;
    }
    /* pixels: their caption is the file's (the same photo, decoded once) */
    path rgbp = {"caption_rgb", run_caption_rgb, same_caption, undo_caption, NULL, 1, 0, 0, 0};
    CHECK(walk(&rgbp) > 0);
    check_leaks(rgbp.name);
}

static void evaluate_paths(void) {
    ac_err err;
    for (int meteor = 0; meteor < 2; meteor++) {
        eval_flags = meteor ? 0 : AC_EVAL_NO_METEOR;
        if (meteor && !full) return; /* WordNet's thousands of allocations: the full walk only */
        if (ac_evaluate(3, cands, refs, n_refs, eval_flags, &ref_metrics, &err)) {
            if (meteor) SKIP("METEOR: %s", err.msg);
            CHECKF(0, "%s", err.msg);
        }
        path p = {meteor ? "evaluate_meteor" : "evaluate", run_eval, same_eval, NULL, NULL, 1, 0, 0, 0};
        CHECK(walk(&p) > 0);
        check_leaks(p.name);
        if (t_cur_failed) return;
    }
}

static void detector_paths(void) {
    ac_err err;
    if (!test_shared(DETECTOR)) SKIP("needs ../shared/" DETECTOR);
    CHECKF(ac_image_load(test_repo_path("samples/giraffe.jpg"), &giraffe, &err) == 0, "%s", err.msg);
    path po = {"open_detector", run_det_open, NULL, undo_det_open, NULL, 1, 0, 3, 0}; /* 1,912 points: every 3rd in full */
    CHECK(walk(&po) > 0);
    check_leaks(po.name);
    CHECKF(run_det_open(&err) == 0, "%s", err.msg);
    CHECKF(ac_detector_detect(det, &giraffe, NULL, &ref_dets, &err) == 0, "%s", err.msg);
    CHECK(ref_dets.n > 0);
    path pd = {"detect", run_detect, same_detect, undo_detect, NULL, 1, 0, 0, 0};
    CHECK(walk(&pd) > 0);
    check_leaks(pd.name);
    CHECKF(ac_image_load(test_repo_path("samples/kite.jpg"), &kite, &err) == 0, "%s", err.msg);
    CHECKF(run_detect_int8(&err) == 0, "%s", err.msg);
    ref_int8 = dets, dets = (ac_detections){0};
    undo_detect_int8();
    CHECK(ref_int8.n > 0 && ac_detector_precision(det) == AC_PRECISION_F32);
    path pi = {"detect_int8", run_detect_int8, same_detect_int8, undo_detect_int8, NULL, 1, 0, 3, 0};
    CHECK(walk(&pi) > 0);
    check_leaks(pi.name);
    ac_detections_free(&ref_int8);
    ac_image_free(&kite);
}

/* ---- issue 35's second round: a training step, features, the report, the server's request ---- */

/* A file's bytes (malloc'd, NULL if unreadable). */
static char *slurp(const char *path, size_t *len) {
    char *data = NULL;
    ac_err e;
    return ac_read_file(path, 64u << 20, &data, len, &e) ? NULL : data;
}
/* 1 when the file holds exactly ref[0..len). */
static int same_bytes(const char *path, const char *ref, size_t len) {
    size_t n;
    char *d = slurp(path, &n);
    int same = d && ref && n == len && !memcmp(d, ref, len);
    free(d);
    return same;
}

/* One training step of the tiny fixture (tests/fixtures/train: 20 captions, a cached 2 x 2 grid),
 * one thread and one shard (a walk needs one order of allocations): the step, its validation (beam
 * captions, BLEU-4 and CIDEr-D), the best model and the checkpoint written. A success must write the
 * fault-free run's model byte for byte (training is deterministic). */
static char train_dir[4200], train_out[4300], train_data[4200], train_feats[4200];
static char *train_ref;
static size_t train_ref_len;
static int run_train(ac_err *err) {
    ac_train_opts o;
    ac_train_defaults(&o);
    o.data = train_data, o.features = train_feats, o.out = train_out;
    o.embed = 16, o.hidden = 16, o.att = 8, o.min_count = 1, o.batch = 5, o.lr = 0.01f, o.dropout = 0;
    o.epochs = 1, o.max_steps = 1, o.checkpoint_every = 0, o.threads = 1, o.shards = 1, o.beam = 2;
    return ac_train(&o, err);
}
static int same_train(void) { return !train_ref || same_bytes(train_out, train_ref, train_ref_len); }
static void undo_train(void) {
    if (!train_ref) train_ref = slurp(train_out, &train_ref_len);
    rm_tree(train_dir);
    mkdir(train_dir, 0755);
}

static void train_paths(void) {
    snprintf(train_data, sizeof train_data, "%s", test_fixture("train/captions.json"));
    snprintf(train_feats, sizeof train_feats, "%s", test_fixture("train/features"));
    snprintf(train_dir, sizeof train_dir, "%s", tpath("train_out"));
    snprintf(train_out, sizeof train_out, "%s/m.safetensors", train_dir);
    rm_tree(train_dir); /* a model left by an earlier process would be kept (train writes one only when missing) */
    mkdir(train_dir, 0755);
    /* failures may leave the checkpoint or model a finished stage wrote (whole files: a resume reads
     * them), never a temporary */
    /* 2,720 points: every 37th in make test, every 4th in the full walk (every N and each alone, in a
     * plain build: 300 s; under ASan it would be most of CI's budget) */
    path p = {"train_step", run_train, same_train, undo_train, train_dir, 1, 37, 4, 2};
    const int t = walk(&p);
    CHECK(t > 0);
    CHECK(t == 1 || train_ref != NULL); /* 1: not walked (ATTNCAP_FAULTS_ONLY) */
    check_leaks(p.name);
    free(train_ref), train_ref = NULL;
}

/* Features of one photo into a cache (ac_features_extract over the small encoder, as `attncap
 * features` runs it): the decoding thread's reading, the encoder, the shard. A photo that cannot be
 * read is no fatal error there (stats.failed, the message through on_error): here it is the call's
 * failure, its message the one on_error got. A success must write the fault-free run's shard. */
static ac_encoder feat_enc;
static char *feat_ident, feat_dir[4200], feat_shard[4300], feat_msg[1024];
static char *feat_ref;
static size_t feat_ref_len;
static int feat_encode(void *ctx, const ac_image *img, float *out, int *gh, int *gw, ac_err *err) {
    return ac_encoder_encode_grid(ctx, img, out, gh, gw, err);
}
static void feat_error(void *user, const char *msg) {
    (void)user;
    snprintf(feat_msg, sizeof feat_msg, "%s", msg);
}
static int run_features(ac_err *err) {
    ac_feature_source src = {&feat_enc, feat_encode, feat_enc.size, feat_enc.grid_h, feat_enc.grid_w, feat_enc.dim, feat_ident};
    ac_features_opts o = {feat_dir, 0, 0, 0, feat_error, NULL, NULL};
    ac_features_stats st;
    const char *paths[1] = {photo_path};
    feat_msg[0] = 0;
    if (ac_features_extract(&src, paths, 1, &o, &st, err)) return -1;
    if (st.failed) return snprintf(err->msg, sizeof err->msg, "%s", feat_msg[0] ? feat_msg : "failed, no message"), -1;
    return st.encoded == 1 && st.shards == 1 ? 0 : (snprintf(err->msg, sizeof err->msg, "encoded %d", st.encoded), -1);
}
static int same_features(void) { return !feat_ref || same_bytes(feat_shard, feat_ref, feat_ref_len); }
static void undo_features(void) {
    if (!feat_ref) feat_ref = slurp(feat_shard, &feat_ref_len);
    unlink(feat_shard);
}

/* eval --report's library part: the set scored (tokenized, BLEU, ROUGE-L, CIDEr-D, the objects), a
 * thumbnail and an attention sheet of the photo, the page, as the CLI's eval_caption.c and
 * eval_report.c call them. A failure may leave the thumbnail or sheet a finished stage wrote (whole
 * files, replaced by the next run, as after `attncap eval --report` fails), never a temporary; the
 * page (index.html) is written last and atomically. */
static char report_dir[4200];
static ac_caption sheet_cap; /* the reference caption as the search gives it (beam.h), its words as labels */
static int make_sheet_caption(void) {
    const int n = ref_res->n_words, L = ref_res->grid_h * ref_res->grid_w;
    sheet_cap.n = n;
    sheet_cap.words = calloc((size_t)n + 1, sizeof(int));
    sheet_cap.labels = calloc((size_t)n + 1, sizeof(char *));
    sheet_cap.alpha = calloc((size_t)(n + 1) * L, sizeof(float));
    sheet_cap.beta = calloc((size_t)n + 1, sizeof(float));
    if (!sheet_cap.words || !sheet_cap.labels || !sheet_cap.alpha || !sheet_cap.beta) return -1;
    for (int i = 0; i < n; i++) sheet_cap.words[i] = AC_UNK, sheet_cap.labels[i] = (char *)ref_res->words[i];
    memcpy(sheet_cap.alpha, ref_res->attention, sizeof(float) * (size_t)n * L);
    for (int k = 0; k < L; k++) sheet_cap.alpha[(size_t)n * L + k] = 1.0f / L;
    for (int i = 0; i <= n; i++) sheet_cap.beta[i] = 1;
    return 0;
}
static void free_sheet_caption(void) { free(sheet_cap.words), free(sheet_cap.labels), free(sheet_cap.alpha), free(sheet_cap.beta); }
static int run_report(ac_err *err) {
    ac_eval_set set = {0};
    ac_scores sc = {0};
    char *thumbs[3] = {NULL, NULL, NULL}, *sheets[3] = {NULL, NULL, NULL};
    const char *ids[3] = {"cat.bmp", "horse", "kite"};
    int rc = -1;
    for (int i = 0; i < 3; i++)
        if (ac_eval_set_add(&set, ids[i], refs[i], n_refs[i], cands[i], 1, err)) goto done;
    if (ac_metrics_compute(&set, 0, NULL, &sc, err)) goto done;
    ac_image photo;
    if (ac_image_load(photo_path, &photo, err)) goto done;
    thumbs[0] = ac_report_thumb(report_dir, 0, &photo, err);
    sheets[0] = thumbs[0] ? ac_report_sheet(report_dir, 0, "cat.bmp", &photo, &sheet_cap, ac_captioner_model(cap)->vocab,
                                            ref_res->grid_h, ref_res->grid_w, font, 1, err)
                          : NULL;
    ac_image_free(&photo);
    if (!sheets[0]) goto done;
    ac_report r = {.title = "attncap eval: faults", .model = "tiny", .set = &set, .scores = &sc, .thumbs = thumbs, .sheets = sheets};
    rc = ac_report_write(report_dir, &r, err);
done:
    for (int i = 0; i < 3; i++) free(thumbs[i]), free(sheets[i]);
    ac_scores_free(&sc);
    ac_eval_set_free(&set);
    return rc;
}
static char *report_ref;
static size_t report_ref_len;
static int same_report(void) {
    char p[4400];
    snprintf(p, sizeof p, "%s/index.html", report_dir);
    return report_ref ? same_bytes(p, report_ref, report_ref_len) : ac_is_file(p);
}
static void undo_report(void) {
    char p[4400];
    snprintf(p, sizeof p, "%s/index.html", report_dir);
    if (!report_ref) report_ref = slurp(p, &report_ref_len);
    rm_tree(report_dir);
    mkdir(report_dir, 0755);
}

/* attncap serve's request, the library's part of it. The server (src/cli/serve_*.c) has no library
 * entry of its own: libmicrohttpd parses the request, the CLI queues the body, and each worker runs
 * one ac_captioner_batch_stream over the queue (captioner.h), answering each photo with
 * ac_caption_json. Here the stream's source hands out one JPEG's bytes, then ends (one photo: the
 * decoding thread and the caller take turns, one order of allocations); the answer is its JSON line
 * with attention. A photo that fails is a result with ok = 0 and its message, as the server answers it. */
static char *jpeg, *serve_json, *serve_ref, serve_msg[1024];
static size_t jpeg_len;
static int serve_given, serve_failed;
static int serve_next(void *user, ac_input *in, void **tag) {
    (void)user;
    if (serve_given) return -1;
    serve_given = 1;
    memset(in, 0, sizeof *in);
    in->data = jpeg, in->size = jpeg_len;
    *tag = &serve_given;
    return 1;
}
static void serve_wait(void *user) { (void)user; }
static void serve_result(void *user, const ac_batch_result *r) {
    ac_captioner *c = user;
    if (!r->ok || r->tag != &serve_given) {
        serve_failed = 1;
        snprintf(serve_msg, sizeof serve_msg, "%s", r->ok ? "another photo's tag" : r->err.msg);
    } else if (!(serve_json = ac_caption_json("", r->caption, &c->model, NULL, 0, 1, c->grid_h, c->grid_w))) {
        serve_failed = 1;
        snprintf(serve_msg, sizeof serve_msg, "ac_caption_json: NULL");
    }
}
static int run_serve(ac_err *err) {
    const ac_batch_source src = {serve_next, serve_wait, NULL, 8};
    serve_given = serve_failed = 0;
    if (ac_captioner_batch_stream(cap, &src, 1, 0, serve_result, cap, err)) return -1;
    if (!serve_given) return snprintf(err->msg, sizeof err->msg, "the stream took no photo"), -1;
    if (serve_failed) {
        free(serve_json), serve_json = NULL;
        return snprintf(err->msg, sizeof err->msg, "%s", serve_msg), -1;
    }
    return serve_json ? 0 : (snprintf(err->msg, sizeof err->msg, "no result"), -1);
}
static int same_serve(void) { return !serve_ref || !strcmp(serve_json, serve_ref); }
static void undo_serve(void) {
    if (!serve_ref) serve_ref = serve_json;
    else free(serve_json);
    serve_json = NULL;
}

static void more_captioner_paths(void) {
    ac_err err;
    if (!cap) SKIP("needs ../shared/" SMALL_ENCODER " and ../shared/images/cat.bmp");
    const char *giraffe_path = test_repo_path("samples/giraffe.jpg");
    CHECKF((jpeg = slurp(giraffe_path, &jpeg_len)) != NULL, "%s unreadable", giraffe_path);
    path ps = {"serve_request", run_serve, same_serve, undo_serve, NULL, 1, 0, 0, 0};
    CHECK(walk(&ps) > 0);
    check_leaks(ps.name);
    if (t_cur_failed) return;

    CHECKF(ac_font_load(NULL, &font, &err) == 0, "%s", err.msg);
    CHECK(ref_res->n_words > 0 && make_sheet_caption() == 0);
    snprintf(report_dir, sizeof report_dir, "%s", tpath("report"));
    rm_tree(report_dir);
    mkdir(report_dir, 0755);
    /* every 5th N in the full walk: each run draws a 768-pixel sheet (every N under ASan: 6 minutes) */
    path pr = {"evaluate_report", run_report, same_report, undo_report, report_dir, 1, 0, 5, 2};
    CHECK(walk(&pr) > 0);
    check_leaks(pr.name);
    if (t_cur_failed) return;

    CHECKF(ac_encoder_open(encoder_path, NULL, 128, 1, &feat_enc, &err) == 0, "%s", err.msg);
    CHECK((feat_ident = ac_encoder_id_json(&feat_enc)) != NULL);
    snprintf(feat_dir, sizeof feat_dir, "%s", tpath("features"));
    snprintf(feat_shard, sizeof feat_shard, "%s/shard-00000.safetensors", feat_dir);
    rm_tree(feat_dir);
    mkdir(feat_dir, 0755);
    path pf = {"features_one_photo", run_features, same_features, undo_features, feat_dir, 1, 0, 0, 1};
    const int t = walk(&pf);
    CHECK(t > 0);
    CHECK(t == 1 || feat_ref != NULL);
    check_leaks(pf.name);
}

/* The shipped model (models/, its encoder from make models or ../shared): the paths a tiny model
 * does not reach (the tags and their naming, the presence head, calibration). */
static ac_captioner *shipped;
static char shipped_model[4200], dog[4200];
static ac_result *shipped_ref;
static int run_open_shipped(ac_err *err) {
    ac_captioner_opts o;
    ac_captioner_opts_init(&o);
    o.threads = 1;
    return ac_captioner_open(shipped_model, &o, &opened, err);
}
static int run_caption_shipped(ac_err *err) { return ac_caption_file(shipped, dog, AC_KEEP_PHOTO, &res, err); }
static int same_shipped(void) { return res && !strcmp(res->text, shipped_ref->text) && res->n_tags == shipped_ref->n_tags; }

static void shipped_model_paths(void) {
    ac_err err;
    snprintf(shipped_model, sizeof shipped_model, "%s", test_repo_path("models/attncap.safetensors"));
    snprintf(dog, sizeof dog, "%s", test_repo_path("samples/dog.jpg"));
    if (run_open_shipped(&err)) SKIP("the shipped model does not open here (%s): make models, or ../shared", err.msg);
    shipped = opened, opened = NULL;
    CHECKF(ac_caption_file(shipped, dog, AC_KEEP_PHOTO, &shipped_ref, &err) == 0, "%s", err.msg);
    /* the shipped model attends to the detector's regions and copies their names: the paths this adds
     * (the detector opened and run, the regions' vectors, the pointer's mixture) */
    CHECKF(strstr(shipped_ref->text, "dog") != NULL, "the dog sample: '%s'", shipped_ref->text);
    path paths[] = {
        /* sampled in the full walk too: every N of these is hours under ASan (CI has 90 minutes); the
         * tiny model's paths above walk every N of the same code */
        {"open_shipped_model", run_open_shipped, NULL, undo_open, NULL, 1, 4999, 2999, 0},
        {"caption_shipped_model", run_caption_shipped, same_shipped, undo_caption, NULL, 1, 37, 7, 0},
    };
    for (size_t i = 0; i < sizeof paths / sizeof *paths; i++) {
        CHECK(walk(&paths[i]) > 0);
        check_leaks(paths[i].name);
        if (t_cur_failed) return;
    }
}

/* The hook itself: the nth allocation fails, once or from then on, and nothing when removed. */
static void fault_hook(void) {
    ac_test_fault_install(3, 0);
    void *a = ac_malloc(8), *b = ac_calloc(1, 8), *c = ac_strdup("x"), *d = ac_malloc(8);
    CHECK(a && b && !c && d && ac_test_fault_count() == 1);
    free(a), free(b), free(d);
    ac_test_fault_install(2, 1);
    a = ac_malloc(8), b = ac_realloc(NULL, 8), c = ac_strndup("xy", 1), d = ac_aligned_alloc(64, 64);
    CHECK(a && !b && !c && !d && ac_test_fault_count() == 3);
    ac_test_fault_install(0, 0);
    b = ac_realloc(a, 16);
    CHECK(b && ac_test_fault_count() == 0);
    free(b);
    /* the tokenizer tells its out of memory (-2: the caller's failure) from a caption it refuses (-1: one
     * a reader of many may skip), which training once mixed up (it trained on the captions left) */
    ac_tokens t;
    ac_err e;
    ac_test_fault_install(1, 1);
    CHECK(ac_tokenize("a dog runs", &t, &e) == -2 && strstr(e.msg, "out of memory"));
    ac_test_fault_install(0, 0);
    CHECK(ac_tokenize("bad \xc3 byte", &t, &e) == -1);
    CHECK(ac_tokenize("a dog runs", &t, &e) == 0 && t.n == 3);
    ac_tokens_free(&t);
}

int main(void) {
    const char *env = getenv("ATTNCAP_FAULTS_FULL");
    full = env && *env && strcmp(env, "0");
    RUN(fault_hook);
    RUN(evaluate_paths);
    RUN(captioner_paths);
    RUN(detector_paths);
    RUN(train_paths);
    RUN(more_captioner_paths);
    RUN(shipped_model_paths);
    ac_result_free(ref_res);
    ac_captioner_close(cap);
    ac_result_free(shipped_ref);
    ac_captioner_close(shipped);
    ac_detector_close(det);
    ac_detections_free(&ref_dets);
    ac_image_free(&giraffe);
    ac_free(ref_json);
    free(serve_ref);
    free(jpeg), free(feat_ref), free(feat_ident), free(report_ref);
    if (feat_enc.cnn) ac_encoder_close(&feat_enc);
    ac_font_free(font);
    free_sheet_caption();
    free(ref_text), free(rgb);
    return TEST_EXIT();
}
