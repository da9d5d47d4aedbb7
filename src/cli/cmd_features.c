/* attncap features: annotation vectors of many photos into a resumable feature cache. */
#include <cjson/cJSON.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "attncap/encoder.h"
#include "attncap/locate.h"
#include "attncap/features.h"
#include "attncap/shard.h"
#include "cleanup.h"
#include "commands.h"
#include "messages.h"
#include "options.h"
#include "progress.h"

static void usage(FILE *f) {
    fprintf(f,
            "usage: attncap features [--encoder M.tflite] [--size N] [--resize squash|aspect] [--layer NAME] [--fp16] [--flip]\n"
            "                        [--shard-size N]\n"
            "                        [--shard I/N|slurm] [--threads N] [--quiet] --out DIR (IMAGE... | --list FILE [--root DIR])\n"
            "       attncap features --merge OUT [--shard-size N] DIR...\n\n"
            "Runs the CNN encoder over each photo (squashed to N x N) up to layer NAME and stores the grid of\n"
            "annotation vectors in DIR as shards shard-NNNNN.safetensors, written atomically. Rerunning skips\n"
            "photos already in DIR, so an interrupted run resumes where it stopped (losing at most one shard).\n"
            "Keys are the photos' file names without directory.\n\n"
            "  --encoder M.tflite  the CNN (default: <data>/encoders/mobilenet_v2_1.0_224_quant.tflite)\n"
            "  --size N            input side in pixels (default 448: a 14x14 grid for MobileNetV2's last conv)\n"
            "  --resize aspect     keep each photo's aspect ratio: the long side at N, the short side at its\n"
            "                      multiple of 32 (a 4:3 photo: 448x320, a 14x10 grid), the grid padded to\n"
            "                      N x N and the padding masked out of the attention of a model trained on it\n"
            "                      (recorded in the cache and the model; default squash: N x N)\n"
            "  --layer NAME        tensor to stop at (default: the last conv layer before pooling; see attncap info)\n"
            "  --fp16              store float16 (half the disk; features are read back as float32)\n"
            "  --flip              also store the mirrored photo's features under \"NAME#flip\" (augmentation)\n"
            "  --shard-size N      photos per shard file (default 256)\n"
            "  --shard I/N         only this task's share of the photos: those whose file name hashes to I\n"
            "                      mod N (0 <= I < N); N tasks with I = 0..N-1 cover each photo once.\n"
            "                      slurm: I and N from the Slurm job array ($SLURM_ARRAY_TASK_ID, ..._COUNT)\n"
            "  --merge OUT         merge the caches DIR... of a sharded run into the new cache OUT, in key\n"
            "                      order, rows as stored (a run over the photos in sorted order gives the same\n"
            "                      bytes); refuses caches of another encoder, size or layer, and overlaps\n"
            "  --list FILE         photo paths, one per line (blank lines and lines starting with # ignored)\n"
            "  --root DIR          directory that relative paths in --list are under\n"
            "  --threads N         threads (default: $ATTNCAP_THREADS or all cores)\n"
            CLI_PRECISION_HELP
            "  --quiet             no progress bar and no summary\n\n"
            "<data> is $ATTNCAP_DATA or ../shared. A photo that cannot be read gets one error line on stderr;\n"
            "the others are still processed and the exit code is 1. A DIR made by another encoder (file,\n"
            "layer or size) is refused.\n");
}

/* The bar (drawn on a terminal unless --quiet) and the per-photo errors, which erase it first. */
typedef struct {
    int quiet;
    cli_progress bar;
} features_view;

static void print_error(void *user, const char *msg) {
    features_view *v = user;
    cli_progress_clear(&v->bar);
    fprintf(stderr, "attncap features: %s\n", msg);
}

static void show_progress(void *user, int done, int total) {
    features_view *v = user;
    if (done == 0) cli_progress_start(&v->bar, "features", (uint64_t)total, v->quiet);
    else cli_progress_update(&v->bar, (uint64_t)done);
}

/* Appends the paths listed in a file (relative ones under root) to *paths. */
static int read_list(const char *file, const char *root, char ***paths, int *n, ac_err *err) {
    char *data;
    size_t len;
    if (ac_read_file(file, ac_limits_get().max_file_bytes, &data, &len, err) < 0) return -1;
    int cap = *n;
    int line = 0;
    for (char *p = data, *e; p < data + len; p = e + 1) {
        e = memchr(p, '\n', (size_t)(data + len - p));
        if (!e) e = data + len;
        line++;
        size_t l = (size_t)(e - p);
        while (l && (p[l - 1] == '\r' || p[l - 1] == ' ' || p[l - 1] == '\t')) l--;
        while (l && (*p == ' ' || *p == '\t')) p++, l--;
        if (!l || *p == '#') continue;
        if (memchr(p, 0, l)) {
            free(data);
            return ac_errf(err, "%s:%d: NUL byte in a path", file, line);
        }
        if (*n == cap) {
            cap = cap ? 2 * cap : 1024;
            char **np = realloc(*paths, (size_t)cap * sizeof *np);
            if (!np) {
                free(data);
                return ac_errf(err, "%s: out of memory", file);
            }
            *paths = np;
        }
        char *rel = strndup(p, l);
        char *full = rel && root && *rel != '/' ? ac_path_join(root, rel) : NULL;
        if (full) free(rel), rel = full;
        if (!rel) {
            free(data);
            return ac_errf(err, "%s: out of memory", file);
        }
        (*paths)[(*n)++] = rel;
    }
    free(data);
    return 0;
}

static int encode_cb(void *ctx, const ac_image *img, float *out, int *gh, int *gw, ac_err *err) {
    return ac_encoder_encode_grid(ctx, img, out, gh, gw, err);
}

/* attncap features --merge OUT DIR... */
static int merge(const char *out, char **dirs, int n, int shard_size, int quiet) {
    ac_err err;
    ac_features_merge_stats st;
    if (ac_features_merge(out, (const char *const *)dirs, n, shard_size, &st, &err)) {
        fprintf(stderr, "attncap features: %s\n", err.msg);
        return 1;
    }
    if (!quiet)
        printf("%s: %d photos from %d of %d directories, %d shard%s written\n", out, st.keys, st.inputs, n, st.shards,
               st.shards == 1 ? "" : "s");
    return 0;
}

int cmd_features(int argc, char **argv) {
    const char *enc_path = NULL, *layer = NULL, *out = NULL, *list = NULL, *root = NULL, *share = NULL, *merge_out = NULL,
               *resize = NULL;
    const char *precision = NULL;
    int size = 448, fp16 = 0, flip = 0, shard = 256, threads = 0, quiet = 0, n = 0, rc = 2;
    char **paths = NULL, *enc_def = NULL, *ident = NULL;
    int owned_from = 0; /* paths[owned_from..n) were malloc'd by read_list */
    ac_err err;
    const cli_opt opts[] = {
        OPT_STR("--encoder", &enc_path),
        OPT_STR("--layer", &layer),
        OPT_STR("--out", &out),
        OPT_STR("--list", &list),
        OPT_STR("--root", &root),
        OPT_INT("--size", &size, 16, 4096),
        OPT_STR("--resize", &resize),
        OPT_INT("--shard-size", &shard, 1, 1e6),
        OPT_STR("--shard", &share),
        OPT_STR("--merge", &merge_out),
        OPT_INT("--threads", &threads, 1, 256), OPT_STR("--precision", &precision),
        OPT_FLAG("--fp16", NULL, &fp16),
        OPT_FLAG("--flip", NULL, &flip),
        OPT_FLAG("--quiet", "-q", &quiet),
        OPT_END,
    };
    const int n_args = cli_parse("features", argc, argv, opts, -1, usage);
    if (n_args < 0) return n_args == CLI_HELP ? 0 : 2;
    if (cli_check_precision("features", precision) < 0) return 2;
    ac_shard sh = {0, 0};
    if (share && ac_shard_parse(share, &sh, &err)) {
        const int number = *share && strspn(share, "0123456789") == strlen(share); /* the old photos-per-file flag */
        fprintf(stderr, "attncap features: --shard: %s%s\n", err.msg, number ? " (photos per file is --shard-size N)" : "");
        return 2;
    }
    if (resize && strcmp(resize, "squash") && strcmp(resize, "aspect")) {
        fprintf(stderr, "attncap features: --resize: '%s' is not squash or aspect\n", resize);
        return 2;
    }
    if (merge_out) {
        if (out || list || share || !n_args) {
            fprintf(stderr, "attncap features: --merge OUT takes the cache directories to merge, without --out, --list or "
                            "--shard (try --help)\n");
            return 2;
        }
        return merge(merge_out, argv + 1, n_args, shard, quiet);
    }
    paths = calloc((size_t)n_args + 1, sizeof *paths);
    if (!paths) return 1;
    for (n = 0; n < n_args; n++) paths[n] = argv[n + 1];
    owned_from = n;
    const char *why = !out ? "--out DIR is required" : (!n && !list) ? "no image given (IMAGE... or --list FILE)"
                      : root && !list ? "--root needs --list" : NULL;
    if (why) {
        fprintf(stderr, "attncap features: %s (try --help)\n", why);
        free(paths);
        return 2;
    }
    cli_cleanup_watch(out, 1); /* its shards' temporaries go when interrupted */
    if (list && read_list(list, root, &paths, &n, &err) < 0) {
        fprintf(stderr, "attncap features: %s%s\n", err.msg, cli_hint(&err));
        rc = 1;
        goto done;
    }
    if (!enc_path) {
        char *d = ac_find_data_dir();
        enc_def = d ? ac_path_join(d, "encoders/mobilenet_v2_1.0_224_quant.tflite") : NULL;
        free(d);
        if (!enc_def) {
            fprintf(stderr, "attncap features: no --encoder given and no data directory found (set ATTNCAP_DATA)\n");
            goto done;
        }
        enc_path = enc_def;
    }
    ac_encoder enc;
    if (ac_encoder_open(enc_path, layer, size, threads, &enc, &err) < 0) {
        fprintf(stderr, "attncap features: %s%s\n", err.msg, cli_hint(&err));
        rc = 1;
        goto done;
    }
    if (cli_set_precision(precision, &enc, &err) < 0 ||
        (resize && !strcmp(resize, "aspect") && ac_encoder_set_resize(&enc, AC_RESIZE_ASPECT, &err))) {
        fprintf(stderr, "attncap features: %s\n", err.msg);
        ac_encoder_close(&enc);
        rc = 1;
        goto done;
    }
    ident = ac_encoder_id_json(&enc);
    /* This task's share: a copy of the pointers (the strings stay owned as they were). */
    char **todo = paths;
    int n_todo = n;
    if (sh.count && (todo = malloc(((size_t)n + 1) * sizeof *todo))) {
        memcpy(todo, paths, (size_t)n * sizeof *todo);
        n_todo = ac_shard_filter(&sh, todo, n, NULL);
    }
    ac_feature_source src = {&enc, encode_cb, enc.size, enc.grid_h, enc.grid_w, enc.dim, ident};
    features_view view = {.quiet = quiet};
    ac_features_opts o = {out, shard, fp16, flip, print_error, show_progress, &view};
    ac_features_stats st;
    double t0 = ac_now();
    if (!ident || !todo) {
        fprintf(stderr, "attncap features: out of memory\n");
        rc = 1;
    } else if (ac_features_extract(&src, (const char *const *)todo, n_todo, &o, &st, &err) < 0) {
        cli_progress_finish(&view.bar);
        fprintf(stderr, "attncap features: %s%s\n", err.msg, cli_hint(&err));
        rc = 1;
    } else {
        cli_progress_finish(&view.bar);
        double dt = ac_now() - t0;
        if (!quiet && sh.count) printf("%s: share %d/%d: %d of the %d photos\n", out, sh.index, sh.count, n_todo, n);
        if (!quiet)
            printf("%s: %d encoded (%.1f/s), %d already cached, %d failed; %d shard%s written; grid %dx%d x %d (%s)\n", out,
                   st.encoded, dt > 0 ? st.encoded / dt : 0.0, st.skipped, st.failed, st.shards, st.shards == 1 ? "" : "s",
                   enc.grid_h, enc.grid_w, enc.dim, enc.layer);
        rc = st.failed ? 1 : 0;
    }
    ac_encoder_close(&enc);
    if (todo != paths) free(todo);
done:
    for (int i = owned_from; i < n; i++) free(paths[i]);
    free(paths);
    free(enc_def);
    free(ident);
    return rc;
}
