/* bench/caption: `attncap caption` end to end against the PyTorch re-implementation of the same
 * pipeline and weights (tools/torch_caption.py), measured side by side in one run:
 *   - latency of one 640x480 JPEG: decode, squash to 448, MobileNetV2 to Conv_1 (14x14x1280), beam 3
 *     (best and median of warm runs, in process for both; ours half before and half after PyTorch's);
 *   - throughput over the 100 COCO photos of ../shared (ours: ac_captioner_batch, the lanes `attncap
 *     caption` runs, with the model's naming setting as the CLI applies it; theirs: a loop; both
 *     excluding model load), and CPU time per photo of all threads after
 *     loading (fair when the machine is shared). attncap uses 2 threads (for many photos: 2 lanes, each
 *     a photo at a time with a 1-thread CNN); PyTorch the faster of 1 and 2 (it probes).
 * Model: $ATTNCAP_BENCH_MODEL if set (must match the encoder), else a random decoder of the shipped
 * size (V 2600, E 256, H 512, A 256) over MobileNetV2 at 448, saved to a temp dir; both sides search
 * up to MAX_LEN words. The captions of both implementations are compared (they should agree: same
 * weights, same search). */
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "attncap/captioner.h"

#define ENCODER "encoders/mobilenet_v2_1.0_224_quant.tflite"

static int cmp_d(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}
static int cmp_s(const void *a, const void *b) { return strcmp(*(char *const *)a, *(char *const *)b); }

static int make_model(const char *out, const char *enc_path, ac_err *err) {
    ac_encoder enc;
    if (ac_encoder_open(enc_path, NULL, 448, 0, &enc, err)) return -1;
    char *json = ac_encoder_id_json(&enc); /* the identity a model trained on its features records */
    if (!json) {
        ac_encoder_close(&enc);
        return ac_errf(err, "out of memory");
    }
    ac_decoder_config cfg = {.vocab = 2600, .embed = 256, .hidden = 512, .att = 256, .dim = enc.dim,
                             .n_ann = enc.grid_h * enc.grid_w, .grid_h = enc.grid_h, .grid_w = enc.grid_w};
    ac_encoder_close(&enc);
    ac_model m = {0};
    if (ac_decoder_init(&m.dec, &cfg, 7, err)) {
        free(json);
        return -1;
    }
    /* a peaked output distribution, and <end> likely enough that some photos end early (a random
     * decoder cannot count words: most captions run to MAX_LEN = 12 words, about a trained model's
     * 10 words and <end>; with a larger bias every caption was empty, one decoder step) */
    for (size_t i = 0; i < (size_t)cfg.embed * cfg.vocab; i++) m.dec.out_lo[i] *= 4;
    m.dec.out_bo[AC_END] += 1.0f;
    char *words = malloc((size_t)cfg.vocab * 12 + 64);
    size_t n = (size_t)sprintf(words, "[\"<pad>\",\"<start>\",\"<end>\",\"<unk>\"");
    for (int i = 4; i < cfg.vocab; i++) n += (size_t)sprintf(words + n, ",\"w%d\"", i);
    strcpy(words + n, "]");
    int rc = ac_vocab_from_json(words, &m.vocab, err);
    free(words);
    m.encoder_json = json;
    if (!rc) rc = ac_model_save(&m, out, 1, NULL, err);
    m.encoder_json = NULL;
    free(json);
    ac_model_free(&m);
    return rc;
}

enum { RUNS = 8, MAX_LEN = 12 };

/* /proc/loadavg's 1-minute figure: how busy the machine was (the ratios are side by side, but say so) */
static void loadavg(char out[64]) {
    FILE *f = fopen("/proc/loadavg", "r");
    double a = -1;
    if (f) {
        if (fscanf(f, "%lf", &a) != 1) a = -1;
        fclose(f);
    }
    snprintf(out, 64, a >= 0 ? "%.2f" : "?", a);
}

/* n warm runs of one photo, in process: read + decode, squash, CNN, beam (a warm-up run first). */
static int latency_runs(ac_captioner *c, const char *one, int n, double *lat, int *nlat, double split[3]) {
    ac_err err;
    for (int r = -1; r < n; r++) {
        double t0 = ac_now(), tc = 0, td = 0;
        ac_image im;
        ac_caption cap;
        if (ac_image_load(one, &im, &err) || ac_captioner_run(c, &im, &cap, &tc, &td, &err)) {
            fprintf(stderr, "bench caption: %s\n", err.msg);
            return -1;
        }
        double t = ac_now() - t0;
        if (r >= 0) lat[(*nlat)++] = t, split[0] += t - tc - td, split[1] += tc, split[2] += td;
        ac_image_free(&im);
        ac_caption_free(&cap);
    }
    return 0;
}

/* The lanes' results, in input order: "PATH<TAB>caption" lines as tools/torch_caption.py prints them. */
typedef struct tp_out {
    FILE *f;
    const ac_vocab *vocab;
    int failed;
} tp_out;
static void on_result(void *user, const ac_batch_result *r) {
    tp_out *o = user;
    char *text = r->ok ? ac_caption_text(r->caption, o->vocab) : NULL;
    if (!r->ok) fprintf(stderr, "bench caption: %s: %s\n", r->path, r->err.msg), o->failed = 1;
    else fprintf(o->f, "%s\t%s\n", r->path, text ? text : "");
    free(text);
}

/* Captions the photos with ac_captioner_batch on 2 threads into DIR/ours.txt: photos per second and
 * CPU seconds per photo (all threads), both after loading. */
static int throughput(const char *model, const char *enc, const char *const *names, int n, const char *dir, double *tp,
                      double *cpu) {
    ac_err err;
    ac_captioner c;
    if (ac_captioner_init(&c, model, enc, 2, &err)) {
        fprintf(stderr, "bench caption: %s\n", err.msg);
        return -1;
    }
    const ac_naming_opts naming = ac_naming_opts_for_model(&c.model);
    char path[4300];
    snprintf(path, sizeof path, "%s/ours.txt", dir);
    tp_out o = {fopen(path, "w"), c.model.vocab, 0};
    int rc = o.f ? 0 : -1;
    c.beam.max_len = MAX_LEN;
    if (!rc && ac_captioner_set_naming(&c, &naming, NULL, &err)) rc = -1;
    struct timespec c0, c1;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &c0);
    const double t0 = ac_now();
    if (!rc && ac_captioner_batch(&c, names, n, 2, 0, on_result, &o, NULL, &err)) rc = -1;
    const double t = ac_now() - t0;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &c1);
    if (rc) fprintf(stderr, "bench caption: %s\n", o.f ? err.msg : "cannot write ours.txt");
    if (o.f) fclose(o.f);
    ac_captioner_free(&c);
    *tp = n / (t > 0 ? t : 1e-9);
    *cpu = ((double)(c1.tv_sec - c0.tv_sec) + 1e-9 * (double)(c1.tv_nsec - c0.tv_nsec)) / n;
    return rc || o.failed ? -1 : 0;
}

int main(void) {
    char *data = ac_find_data_dir();
    char enc[4096], coco[4096];
    if (!data) {
        printf("skip: needs ../shared (ATTNCAP_DATA)\n");
        return 0;
    }
    snprintf(enc, sizeof enc, "%s/" ENCODER, data);
    snprintf(coco, sizeof coco, "%s/data/coco/images", data);
    free(data);
    if (!ac_is_file(enc) || !ac_is_dir(coco)) {
        printf("skip: needs ../shared/" ENCODER " and ../shared/data/coco/images\n");
        return 0;
    }
    char tmp[] = "/tmp/attncap-bench-caption-XXXXXX";
    if (!mkdtemp(tmp)) return 1;
    char model[4200];
    ac_err err;
    const char *given = getenv("ATTNCAP_BENCH_MODEL");
    if (given) snprintf(model, sizeof model, "%s", given);
    else {
        snprintf(model, sizeof model, "%s/bench.safetensors", tmp);
        if (make_model(model, enc, &err)) {
            fprintf(stderr, "bench caption: %s\n", err.msg);
            return 1;
        }
    }
    /* the photos, and a 640x480 one for latency */
    DIR *d = opendir(coco);
    char **names = NULL;
    int n = 0;
    struct dirent *e;
    while (d && (e = readdir(d)))
        if (strstr(e->d_name, ".jpg")) {
            names = realloc(names, (size_t)(n + 1) * sizeof *names);
            names[n++] = ac_path_join(coco, e->d_name);
        }
    if (d) closedir(d);
    qsort(names, (size_t)n, sizeof *names, cmp_s);
    const char *one = NULL;
    for (int i = 0; i < n && !one; i++) {
        ac_image im;
        if (!ac_image_load(names[i], &im, NULL)) {
            if (im.w == 640 && im.h == 480) one = names[i];
            ac_image_free(&im);
        }
    }
    if (!one) one = names[0];

    /* ours: latency in process */
    ac_set_threads(2);
    ac_captioner c;
    if (ac_captioner_init(&c, model, enc, 2, &err)) {
        fprintf(stderr, "bench caption: %s\n", err.msg);
        return 1;
    }
    c.beam.max_len = MAX_LEN;
    char load0[64];
    loadavg(load0);
    /* half the runs before PyTorch's, half after: a change in the machine's load hits both sides */
    double lat[RUNS], split[3] = {0};
    int nlat = 0;
    if (latency_runs(&c, one, RUNS / 2, lat, &nlat, split)) return 1;

    /* ours: throughput, as `attncap caption` runs it (the library's lanes, the model's naming setting) */
    double our_tp = 0, our_cpu = 0;
    if (throughput(model, enc, (const char *const *)names, n, tmp, &our_tp, &our_cpu)) return 1;
    size_t cmd_cap = (size_t)n * 300 + 16384;
    char *cmd = malloc(cmd_cap);
    char path[4300], line[1024];
    size_t k;
    FILE *f;

    /* PyTorch */
    k = (size_t)sprintf(cmd, "nice -n 0 /usr/bin/python3 tools/torch_caption.py --threads 0 --latency %d --max-len %d --model '%s' "
                        "--encoder '%s' '%s'", RUNS, MAX_LEN, model, enc, one);
    for (int i = 0; i < n; i++)
        if (strcmp(names[i], one)) k += (size_t)sprintf(cmd + k, " '%s'", names[i]);
    sprintf(cmd + k, " >'%s/torch.txt' 2>'%s/torch.err'", tmp, tmp);
    double torch_min = 0, torch_med = 0, torch_tp = 0, torch_cpu = 0;
    int torch_threads = 0;
    int torch_ok = system(cmd) == 0;
    snprintf(path, sizeof path, "%s/torch.err", tmp);
    f = fopen(path, "r");
    while (f && fgets(line, sizeof line, f)) {
        if (!strncmp(line, "latency_ms ", 11)) {
            char *q;
            torch_min = strtod(line + 11, &q) / 1e3;
            torch_med = strtod(q, NULL) / 1e3;
        }
        if (!strncmp(line, "throughput ", 11)) torch_tp = atof(line + 11);
        if (!strncmp(line, "cpu_per_image ", 14)) torch_cpu = atof(line + 14);
        if (!strncmp(line, "threads ", 8)) torch_threads = atoi(line + 8);
    }
    if (f) fclose(f);
    if (latency_runs(&c, one, RUNS - RUNS / 2, lat, &nlat, split)) return 1;
    ac_captioner_free(&c);
    qsort(lat, RUNS, sizeof *lat, cmp_d);
    double our_min = lat[0], our_med = lat[RUNS / 2];
    char load1[64];
    loadavg(load1);
    /* agreement: same caption for the same photo */
    int same = 0, total = 0;
    double words = 0;
    if (torch_ok) {
        char p2[4300], a[2048], b[2048];
        snprintf(path, sizeof path, "%s/ours.txt", tmp);
        snprintf(p2, sizeof p2, "%s/torch.txt", tmp);
        FILE *fa = fopen(path, "r"), *fb = fopen(p2, "r");
        /* torch.txt has `one` first; index ours by path */
        char **ours = calloc((size_t)n, sizeof *ours);
        int no = 0;
        while (fa && no < n && fgets(a, sizeof a, fa)) {
            ours[no++] = strdup(a);
            char *t = strchr(a, '\t');
            for (int in_word = 0; t && *t; t++) /* words of the caption */
                if (*t != ' ' && *t != '\t' && *t != '\n') words += !in_word, in_word = 1;
                else in_word = 0;
        }
        while (fb && fgets(b, sizeof b, fb)) {
            total++;
            for (int i = 0; i < no; i++)
                if (!strcmp(ours[i], b)) { same++; break; }
        }
        for (int i = 0; i < no; i++) free(ours[i]);
        free(ours);
        if (fa) fclose(fa);
        if (fb) fclose(fb);
    }
    printf("caption pipeline (decode JPEG, squash to 448, MobileNetV2 Conv_1 14x14x1280, beam 3)\n");
    printf("  machine load (1-minute average, 2 cores here): %s at the start, %s at the end\n", load0, load1);
    printf("  threads: attncap 2 (latency: one photo, 2-thread CNN; throughput: 2 lanes, a photo each, 1-thread CNN),\n"
           "           PyTorch %d (the faster of 1 and 2, probed: 2 can be much slower on a busy machine)\n",
           torch_threads);
    printf("  latency, one 640x480 JPEG, best of %d:     attncap %7.1f ms   PyTorch %7.1f ms   speed-up %.2fx\n", RUNS,
           1e3 * our_min, 1e3 * torch_min, torch_min > 0 ? torch_min / our_min : 0);
    printf("  latency, one 640x480 JPEG, median of %d:   attncap %7.1f ms   PyTorch %7.1f ms   speed-up %.2fx\n", RUNS,
           1e3 * our_med, 1e3 * torch_med, torch_med > 0 ? torch_med / our_med : 0);
    printf("    attncap split (mean): decode+resize %.1f ms, CNN %.1f ms, decoder %.1f ms\n", 1e3 * split[0] / RUNS,
           1e3 * split[1] / RUNS, 1e3 * split[2] / RUNS);
    printf("  throughput, %d COCO photos:               attncap %7.2f img/s PyTorch %7.2f img/s speed-up %.2fx\n", n,
           our_tp, torch_tp, torch_tp > 0 ? our_tp / torch_tp : 0);
    printf("  CPU time per photo (100 photos, no load):  attncap %7.1f ms   PyTorch %7.1f ms   ratio %.2fx\n",
           1e3 * our_cpu, 1e3 * torch_cpu, our_cpu > 0 ? torch_cpu / our_cpu : 0);
    if (torch_ok) printf("  captions identical in both: %d/%d (mean length %.1f words)\n", same, total, words / (n ? n : 1));
    else printf("  PyTorch peer failed: see %s/torch.err\n", tmp);
    if (torch_ok) {
        snprintf(cmd, cmd_cap, "rm -rf '%s'", tmp);
        if (system(cmd)) {}
    }
    for (int i = 0; i < n; i++) free(names[i]);
    free(names), free(cmd);
    return 0;
}
