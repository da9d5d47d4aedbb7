/* attncap caption: caption photos, optionally with per-word attention overlays and contact sheets.
 * The core captions them (ac_caption_each: lanes, results handed back in input order as they are
 * done); caption_output.c prints them and writes the overlays. Over the core API (attncap.h) alone:
 * --shard's share is ac_shard_select's (the hash the featurizer's and the evaluator's shards share), and
 * the attention experiments --head, --hard-context, --fix-attention are ac_captioner_set_attention's
 * research switches. */
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "attncap/attncap.h"
#include "caption_output.h"
#include "cleanup.h"
#include "commands.h"
#include "inputs.h"
#include "messages.h"
#include "options.h"
#include "overlay_flags.h"
#include "progress.h"
#include "tag_flags.h"

static void usage(FILE *f) {
    fprintf(f,
            "usage: attncap caption [options] (IMAGE|DIR|-)...\n\n"
            "Captions each photo: prints \"PATH<TAB>caption\" per photo, and \"<TAB>confidence\" when the model is\n"
            "calibrated (or JSON lines with --json).\n"
            "DIR is walked for .jpg .jpeg .png .bmp .gif .webp .tif .tiff files (sorted; each directory once,\n"
            "symlinks to directories already walked are not followed again; FIFOs and devices are skipped).\n"
            "'-' reads paths from stdin, one per line (trimmed; blank lines and lines starting with # skipped).\n"
            "A photo that cannot be read (a FIFO or device named on the command line included) gets one\n"
            "error line on stderr; the others are still captioned and the exit code is 1.\n\n"
            "  --model FILE      model (default: $ATTNCAP_MODEL, else models/%s beside\n"
            "                    the executable or in the current directory)\n"
            "  --encoder FILE    the model's TFLite encoder (default: $ATTNCAP_ENCODER, else found by\n"
            "                    the model's encoder name in models/ or ../shared/encoders; its SHA-256\n"
            "                    must match the model's record)\n"
            "  --beam K          beam size, 1 = greedy (default: the model's recorded setting, else 3)\n"
            "  --max-len N       maximum words (default: the model's, else 20)\n"
            "  --len-alpha X     length normalisation: score = logprob / (words+1)^X (default: the\n"
            "                    model's, else 1)\n"
            "  --allow-unk       let <unk> be emitted\n"
            "  --allow-repeats   let any word come twice (default: only the words the model's record says\n"
            "                    people repeat; attncap tune --repeats)\n"
            "  --nbest N         also the runners-up: the N best captions by score (at most the beam size),\n"
            "                    one line each, best first, as PATH<TAB>caption<TAB>confidence<TAB>score (the\n"
            "                    confidence '-' when the model has no calibration; JSON: \"alternatives\")\n"
            "  --given CAPTION   do not search: show where the model looks for each word of CAPTION (its\n"
            "                    attention and log-probability; overlays as usual), printed as\n"
            "                    PATH<TAB>caption<TAB>log-probability. A word outside the\n"
            "                    vocabulary is fed to the model as <unk> (its own attention is still\n"
            "                    meaningful: it depends only on the words before it)\n"
            "  --overlays DIR    write DIR/<stem>/NN_<word>.png per word and DIR/<stem>/sheet.png;\n"
            "                    DIR/<stem>/caption.json holds the photo's JSON line; if a photo's DIR/<stem>\n"
            "                    exists already, nothing is done unless --force or --skip-existing\n"
            "                    (written whole: DIR/<stem>.tmp.PID renamed when complete, removed when\n"
            "                    interrupted)\n"
            "  --force           replace earlier overlays in DIR/<stem>\n"
            "  --skip-existing   skip photos whose DIR/<stem> exists: rerun the same command to resume an\n"
            "                    interrupted batch (the stems are the same for the same inputs); a skipped\n"
            "                    photo's line is printed again from its caption.json, in order\n"
            CLI_OVERLAY_HELP
            "  --tags auto|off|WORD,...  name what the encoder sees: auto turns its confident ImageNet tags\n"
            "                    (through WordNet: Egyptian cat -> cat) into words the caption must contain\n"
            "                    when the model agrees they fit; WORD,... requires those words; off: plain\n"
            "                    search (default: the model's setting, chosen on dev photos; its numbers are\n"
            "                    the model's \"naming\" record: attncap info MODEL, docs/naming.md)\n"
            "  --tag-table FILE  class -> word table (default: imagenet_words.tsv beside the model)\n"
            "  --json            one JSON object per line: image, caption, tokens, logprob, token_logprobs\n"
            "                    (each token's, then <end>'s), score (the ranking score: logprob /\n"
            "                    (words+1)^len-alpha), confidence, tags, overlays\n"
            "  --attention       with --json: \"attention\" (per token, L weights) and \"grid\" [h, w]\n"
            "  --head J          a model with attention heads: show head J's attention (default: their mean)\n"
            "  --fix-attention F an experiment on an LSTM model's attention: uniform (every cell weighs the\n"
            "                    same: the photo's mean at every word) or peak (only the most weighted cell,\n"
            "                    the rest 0); with --given, the log-probabilities say what it costs\n"
            "  --hard-context C  a hard-attention model: argmax (one location per word, the default) or\n"
            "                    expected (the expected context, as soft attention)\n"
            "  --shard I/N       only this task's share of the photos: those whose file name hashes to I mod N\n"
            "                    (0 <= I < N), so N tasks cover each photo once; slurm: I and N from the\n"
            "                    Slurm job array. The shares' outputs concatenated are the whole run's lines\n"
            "  --threads N       threads (default: $ATTNCAP_THREADS or all cores)\n"
            CLI_PRECISION_HELP
            "  --quiet           no progress bar, and no summary line (\"N captioned, N failed, S s\" on\n"
            "                    stderr after more than one photo)\n"
            "  --verbose         report images/s and the time split on stderr\n",
            AC_DEFAULT_MODEL_NAME);
}

/* CPU time of the whole process (every thread), in seconds. */
static double cpu_seconds(void) {
    struct timespec t;
    return clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t) ? 0 : (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

/* --head, --hard-context, --fix-attention: the research switches, each that is given. */
static int set_attention(ac_captioner *cap, int head, const char *hard_context, const char *fix_attention, ac_err *err) {
    char n[16];
    snprintf(n, sizeof n, "%d", head);
    return (head && ac_captioner_set_attention(cap, "head", n, err)) ||
                   (hard_context && ac_captioner_set_attention(cap, "hard_context", hard_context, err)) ||
                   (fix_attention && ac_captioner_set_attention(cap, "fix_attention", fix_attention, err))
               ? -1
               : 0;
}

int cmd_caption(int argc, char **argv) {
    const char *model = NULL, *encoder = NULL, *ov_dir = NULL, *given = NULL;
    cli_tag_flags tf = CLI_TAG_FLAGS_INIT;
    const char *precision = NULL;
    int beam = -1, max_len = -1, json = 0, attention = 0, quiet = 0, verbose = 0, threads = 0, force = 0;
    int allow_unk = 0, allow_repeats = 0, nbest = 0, skip_existing = 0, head = 0;
    float len_alpha = -1.0f; /* -1: the model's recorded setting, else the default */
    cli_overlay_flags of = CLI_OVERLAY_FLAGS_INIT;
    const char *share = NULL, *hard_context = NULL, *fix_attention = NULL;
    const cli_opt opts[] = {
        OPT_STR("--model", &model),
        OPT_STR("--encoder", &encoder),
        OPT_STR("--overlays", &ov_dir),
        OPT_STR("--given", &given),
        CLI_TAG_OPTS(tf),
        OPT_STR("--tag-table", &tf.table),
        CLI_NAMING_REMOVED("--min-confidence", "min_confidence"),
        CLI_OVERLAY_OPTS(of),
        OPT_STR("--shard", &share),
        OPT_INT("--beam", &beam, 1, 100),
        OPT_INT("--nbest", &nbest, 1, 100),
        OPT_INT("--max-len", &max_len, 1, 200),
        OPT_INT("--threads", &threads, 1, 256), OPT_INT("--head", &head, 1, 64), OPT_STR("--precision", &precision),
        OPT_STR("--hard-context", &hard_context),
        OPT_STR("--fix-attention", &fix_attention),
        OPT_FLOAT("--len-alpha", &len_alpha, 0, 10),
        OPT_FLAG("--json", NULL, &json),
        OPT_FLAG("--attention", NULL, &attention),
        OPT_FLAG("--allow-unk", NULL, &allow_unk),
        OPT_FLAG("--allow-repeats", NULL, &allow_repeats),
        OPT_FLAG("--force", NULL, &force),
        OPT_FLAG("--skip-existing", NULL, &skip_existing),
        OPT_FLAG("--quiet", "-q", &quiet),
        OPT_FLAG("--verbose", "-v", &verbose),
        OPT_END,
    };
    const int n_args = cli_parse("caption", argc, argv, opts, -1, usage);
    if (n_args < 0) return n_args == CLI_HELP ? 0 : 2;
    if (cli_check_precision("caption", precision) < 0) return 2;
    unsigned ov_flags = 0;
    if (cli_overlay_flags_apply(&of, &ov_flags)) return 2;
    if (!n_args) {
        fprintf(stderr, "attncap caption: no photos given (IMAGE, DIR or - for paths on stdin; try --help)\n");
        return 2;
    }
    if (attention && !json) {
        fprintf(stderr, "attncap caption: --attention needs --json\n");
        return 2;
    }
    if (skip_existing && (!ov_dir || force)) {
        fprintf(stderr, "attncap caption: --skip-existing %s\n", force ? "and --force contradict each other"
                                                                    : "needs --overlays DIR (it skips photos whose DIR/<stem> exists)");
        return 2;
    }

    ac_err err;
    if (share && ac_shard_select(share, NULL, 0, NULL, NULL, NULL, &err)) { /* a bad share, before anything is read */
        fprintf(stderr, "attncap caption: --shard: %s\n", err.msg);
        return 2;
    }
    cli_strv paths = {0}, stems = {0}, notes = {0};
    cli_caption_done done = {0};
    int skipped = 0, failures = 0, rc = 1;
    ac_captioner *cap = NULL;
    ac_input *in = NULL;
    if (cli_caption_gather(argv + 1, n_args, &paths, &notes)) goto out;
    if (!paths.n) {
        fprintf(stderr, "attncap caption: no photos to caption\n");
        goto out;
    }
    if (share && cli_keep_share(share, &paths, &err)) {
        fprintf(stderr, "attncap caption: %s\n", err.msg);
        goto out;
    }
    if (ov_dir) {
        cli_cleanup_watch(ov_dir, 1); /* a folder being written when interrupted goes (see cleanup.h) */
        if (!(stems.v = calloc((size_t)paths.n + 1, sizeof *stems.v)) || /* core: ac_free = free */
            ac_overlay_stems((const char *const *)paths.v, paths.n, stems.v, &err)) {
            fprintf(stderr, "attncap caption: out of memory\n");
            goto out;
        }
        stems.n = stems.cap = paths.n;
        if (!force && !skip_existing && cli_caption_check_existing(ov_dir, &paths, &stems)) goto out;
        cli_cleanup_hint("attncap caption: interrupted: the same command with --skip-existing goes on where it stopped\n");
    }
    if (skip_existing) { /* resuming: a photo whose folder is there was done (folders are written whole) */
        if ((skipped = cli_caption_skip_done(ov_dir, &paths, &stems, &done)) < 0) goto out;
        if (!paths.n) {
            cli_caption_print_done(ov_dir, json, &done, INT_MAX);
            if (!quiet) fprintf(stderr, "attncap caption: all %d photos were done already (%s)\n", skipped, ov_dir);
            rc = 0;
            goto out;
        }
    }
    if (ov_dir) {
        if (cli_mkdirs(ov_dir, &err)) {
            fprintf(stderr, "attncap caption: %s%s\n", err.msg, cli_hint(&err));
            goto out;
        }
        if (access(ov_dir, W_OK | X_OK)) {
            fprintf(stderr, "attncap caption: %s: output directory is not writable\n", ov_dir);
            goto out;
        }
    }
    double t_start = cli_now();
    /* --precision wins over $ATTNCAP_PRECISION from the start: ac_captioner_open applies the variable,
     * which may name one this CPU or encoder refuses (bf16x2 without AMX) */
    if (precision && setenv("ATTNCAP_PRECISION", precision, 1)) {
        fprintf(stderr, "attncap caption: out of memory\n");
        goto out;
    }
    ac_captioner_opts co;
    ac_captioner_opts_init(&co);
    co.encoder = encoder, co.threads = threads, co.nbest = nbest;
    co.tags = "off"; /* until the tag flags (the model's setting, ATTNCAP_NAMING, --tags) are applied below */
    if (beam > 0) co.beam = beam;
    if (max_len > 0) co.max_len = max_len;
    if (len_alpha >= 0) co.len_alpha = len_alpha;
    if (ac_captioner_open(model, &co, &cap, &err) || cli_captioner_precision(precision, cap, &err) ||
        set_attention(cap, head, hard_context, fix_attention, &err) ||
        (ov_dir && ac_captioner_set_overlay_size(cap, of.size, &err))) { /* the font, before any photo */
        fprintf(stderr, "attncap caption: %s%s\n", err.msg, cli_hint(&err));
        goto out;
    }
    if (given && ac_captioner_set_given(cap, given, &err)) {
        fprintf(stderr, "attncap caption: --given: %s%s\n", err.msg, cli_hint(&err));
        goto out;
    }
    const char *unknown; /* words the model cannot say: fed as <unk> */
    for (int k = 0; given && !quiet && (unknown = ac_captioner_given_unknown(cap, k)); k++)
        fprintf(stderr, "attncap caption: note: --given: '%s' is not in the model's vocabulary (fed as <unk>; "
                        "attncap info --vocab MODEL lists it)\n", unknown);
    if (!given) { /* tags: the model's dev-chosen setting (auto if recorded), or the flags */
        if (cli_tag_flags_apply(cap, &tf, "caption", 1, quiet, &err)) {
            fprintf(stderr, "attncap caption: %s\n", err.msg);
            goto out;
        }
    }
    if (ac_captioner_set_search(cap, (allow_unk ? AC_SEARCH_ALLOW_UNK : 0) | (allow_repeats ? AC_SEARCH_ALLOW_REPEATS : 0),
                                &err)) {
        fprintf(stderr, "attncap caption: %s\n", err.msg);
        goto out;
    }
    double t_load = cli_now() - t_start;
    if (!(in = calloc((size_t)paths.n, sizeof *in))) {
        fprintf(stderr, "attncap caption: out of memory\n");
        goto out;
    }
    for (int i = 0; i < paths.n; i++) in[i].path = paths.v[i];

    double t_run = cli_now(), cpu_run = cpu_seconds();
    cli_caption_view view = {.cap = cap, .paths = &paths, .json = json, .attention = attention, .nbest = nbest,
                             .given = given != NULL, .ov_dir = ov_dir, .done = skip_existing ? &done : NULL,
                             .ov_flags = ov_flags | (force ? AC_OVERLAY_FORCE : 0), .stems = &stems};
    for (int i = 0; i < notes.n && !quiet; i++) fputs(notes.v[i], stderr); /* the walks' skips, once working */
    cli_progress_start(&view.prog, "caption", (uint64_t)paths.n, quiet);
    const int batch_rc = ac_caption_each(cap, in, paths.n, ov_dir ? AC_KEEP_PHOTO : 0, cli_caption_on_result, &view, &err);
    cli_progress_finish(&view.prog);
    if (batch_rc) {
        fprintf(stderr, "attncap caption: %s%s\n", err.msg, cli_hint(&err));
        goto out;
    }
    if (skip_existing) cli_caption_print_done(ov_dir, json, &done, INT_MAX);
    failures += view.failures;
    const int done_ok = view.done_ok;
    char skipped_note[64] = "", ov_note[64] = "";
    if (skipped) snprintf(skipped_note, sizeof skipped_note, ", %d skipped (done before)", skipped);
    if (view.ov_failures) snprintf(ov_note, sizeof ov_note, " (%d writing overlays)", view.ov_failures);
    if (!quiet && (paths.n > 1 || skipped || view.ov_failures))
        fprintf(stderr, "attncap caption: %d captioned, %d failed%s%s, %.1f s\n", done_ok, failures, ov_note,
                skipped_note, cli_now() - t_start);
    t_run = cli_now() - t_run;
    cpu_run = cpu_seconds() - cpu_run;
    if (verbose) cli_caption_print_timing(&view, paths.n, beam, t_run, t_load, cpu_run);
    rc = failures ? 1 : 0;
out:
    ac_captioner_close(cap);
    free(in);
    cli_strv_free(&paths), cli_strv_free(&stems), cli_strv_free(&notes), cli_caption_done_free(&done);
    return rc;
}
