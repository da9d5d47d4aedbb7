/* attncap features: annotation vectors of many photos into a resumable feature cache. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "attncap/attncap.h"
#include "inputs.h"
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

static void show(const ac_featurizer_event *ev, void *user) {
    features_view *v = user;
    if (ev->error) {
        cli_progress_clear(&v->bar);
        fprintf(stderr, "attncap features: %s\n", ev->error);
    } else if (ev->done == 0) {
        cli_progress_start(&v->bar, "features", (uint64_t)ev->total, v->quiet);
    } else {
        cli_progress_update(&v->bar, (uint64_t)ev->done);
    }
}

static const char *list_option(const void *job, int i, int *is_switch) { return (void)job, ac_featurizer_option(i, is_switch); }
static int set_option(void *f, const char *key, const char *value, ac_err *err) {
    return ac_featurizer_set(f, key, value, err);
}

/* attncap features --merge OUT DIR... */
static int merge(ac_featurizer *f, const char *out, char **dirs, int n, int quiet) {
    ac_err err;
    ac_featurizer_stats st;
    if (ac_featurizer_merge(f, out, (const char *const *)dirs, n, &st, &err)) {
        fprintf(stderr, "attncap features: %s\n", err.msg);
        return 1;
    }
    if (!quiet)
        printf("%s: %d photos from %d of %d directories, %d shard%s written\n", out, st.photos, st.inputs, n, st.shards,
               st.shards == 1 ? "" : "s");
    return 0;
}

int cmd_features(int argc, char **argv) {
    const char *out = NULL, *list = NULL, *root = NULL, *merge_out = NULL;
    int quiet = 0, rc = 2;
    cli_strv paths = {0};
    ac_err err;
    ac_featurizer *f;
    if (ac_featurizer_open(&f, &err)) {
        fprintf(stderr, "attncap features: %s\n", err.msg);
        return 1;
    }
    const cli_opt opts[] = {
        OPT_STR("--out", &out), OPT_STR("--list", &list), OPT_STR("--root", &root), OPT_STR("--merge", &merge_out),
        OPT_FLAG("--quiet", "-q", &quiet), OPT_END,
    };
    const cli_job_opts job = {list_option, set_option, f, NULL, 0};
    const int n_args = cli_parse_job("features", argc, argv, opts, -1, usage, &job);
    if (n_args < 0) {
        ac_featurizer_close(f);
        return n_args == CLI_HELP ? 0 : 2;
    }
    if (merge_out) {
        if (out || list || *ac_featurizer_get(f, "shard") || !n_args) {
            fprintf(stderr, "attncap features: --merge OUT takes the cache directories to merge, without --out, --list or "
                            "--shard (try --help)\n");
        } else {
            rc = merge(f, merge_out, argv + 1, n_args, quiet);
        }
        ac_featurizer_close(f);
        return rc;
    }
    const char *why = !out ? "--out DIR is required" : (!n_args && !list) ? "no image given (IMAGE... or --list FILE)"
                      : root && !list ? "--root needs --list" : NULL;
    if (why) {
        fprintf(stderr, "attncap features: %s (try --help)\n", why);
        goto done;
    }
    rc = 1;
    for (int i = 1; i <= n_args; i++)
        if (cli_strv_push(&paths, argv[i]) < 0) goto done;
    cli_cleanup_watch(out, 1); /* its shards' temporaries go when interrupted */
    FILE *lf = list ? fopen(list, "rb") : NULL;
    if (list && !lf) {
        fprintf(stderr, "attncap features: %s: cannot open: %s\n", list, strerror(errno));
        goto done;
    }
    const int listed = lf ? cli_read_list(lf, list, root, &paths, &err) : 0;
    if (lf) fclose(lf);
    if (listed < 0) {
        fprintf(stderr, "attncap features: %s\n", err.msg);
        goto done;
    }
    const int n = paths.n;
    features_view view = {.quiet = quiet};
    ac_featurizer_stats st;
    const double t0 = cli_now();
    if (ac_featurizer_run(f, out, (const char *const *)paths.v, n, show, &view, &st, &err) < 0) {
        cli_progress_finish(&view.bar);
        fprintf(stderr, "attncap features: %s%s\n", err.msg, cli_hint(&err));
        rc = err.code == AC_ERR_OPTIONS ? 2 : 1;
        goto done;
    }
    cli_progress_finish(&view.bar);
    const double dt = cli_now() - t0;
    if (!quiet && st.shard_count)
        printf("%s: share %d/%d: %d of the %d photos\n", out, st.shard_index, st.shard_count, st.photos, n);
    if (!quiet)
        printf("%s: %d encoded (%.1f/s), %d already cached, %d failed; %d shard%s written; grid %dx%d x %d (%s)\n", out,
               st.encoded, dt > 0 ? st.encoded / dt : 0.0, st.skipped, st.failed, st.shards, st.shards == 1 ? "" : "s",
               st.grid_h, st.grid_w, st.dim, ac_featurizer_get(f, "layer"));
    rc = st.failed ? 1 : 0;
done:
    cli_strv_free(&paths);
    ac_featurizer_close(f);
    return rc;
}
