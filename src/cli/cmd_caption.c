/* attncap caption: caption photos, optionally with per-word attention overlays and contact sheets.
 * The library captions them in lanes (ac_captioner_batch) and hands the results back in input order;
 * this file prints them and writes the overlays. */
#include <cjson/cJSON.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "attncap/captioner.h"
#include "attncap/overlay.h"
#include "attncap/shard.h"
#include "cleanup.h"
#include "commands.h"
#include "inputs.h"
#include "messages.h"
#include "options.h"
#include "overlay_flags.h"
#include "tag_flags.h"
#include "progress.h"

static void usage(FILE *f) {
    fprintf(f,
            "usage: attncap caption [options] (IMAGE|DIR|-)...\n\n"
            "Captions each photo: prints \"PATH<TAB>caption\" per photo, and \"<TAB>confidence\" when the model is\n"
            "calibrated (or JSON lines with --json).\n"
            "DIR is walked for .jpg .jpeg .png .bmp .gif files (sorted; each directory once, symlinks to\n"
            "directories already walked are not followed again; FIFOs and devices are skipped). '-' reads\n"
            "paths from stdin, one per line (trimmed; blank lines and lines starting with # skipped).\n"
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
            "  --nbest N         also the runners-up: the N best captions by score (at most the beam size),\n"
            "                    one line each, best first, as PATH<TAB>caption<TAB>score (JSON: \"alternatives\")\n"
            "  --given CAPTION   do not search: show where the model looks for each word of CAPTION (its\n"
            "                    attention and log-probability; overlays as usual). A word outside the\n"
            "                    vocabulary is fed to the model as <unk> (its own attention is still\n"
            "                    meaningful: it depends only on the words before it)\n"
            "  --overlays DIR    write DIR/<stem>/NN_<word>.png per word and DIR/<stem>/sheet.png;\n"
            "                    an existing DIR/<stem> is refused (that photo fails) unless --force\n"
            "                    (written whole: DIR/<stem>.tmp.PID renamed when complete, removed when\n"
            "                    interrupted)\n"
            "  --force           replace earlier overlays in DIR/<stem>\n"
            "  --skip-existing   skip photos whose DIR/<stem> exists: rerun the same command to resume an\n"
            "                    interrupted batch (the stems are the same for the same inputs)\n"
            CLI_OVERLAY_HELP
            "  --tags auto|off|WORD,...  name what the encoder sees: auto turns its confident ImageNet tags\n"
            "                    (through WordNet: Egyptian cat -> cat) into words the caption must contain\n"
            "                    when the model agrees they fit; WORD,... requires those words; off: plain\n"
            "                    search (default: the model's setting, chosen on dev photos)\n"
            "  --tag-threshold X a tag's probability to become a constraint (default: the model's)\n"
            "  --tag-max-drop X  how much lower the constrained caption's mean token log-probability may be\n"
            "                    than the free caption's for the model to agree (default: the model's)\n"
            "  --tag-absent X    never say a word of many classes (dog, bird, cat...) that scores below X:\n"
            "                    the encoder is sure it is not there (default: the model's; 0 = off)\n"
            "  --tag-trust X     keep a free caption whose confidence reaches X as it is (default: the\n"
            "                    model's; 0 = always try the tags)\n"
            "  --min-confidence X  below this calibrated confidence, say \"a photo of a TAG\" instead\n"
            "  --tag-table FILE  class -> word table (default: imagenet_words.tsv beside the model)\n"
            "  --json            one JSON object per line: image, caption, tokens, logprob, score (the\n"
            "                    ranking score: logprob / (words+1)^len-alpha), confidence, tags, overlays\n"
            "  --attention       with --json: \"attention\" (per token, L weights) and \"grid\" [h, w]\n"
            "  --shard I/N       only this task's share of the photos: those whose file name hashes to I mod N\n"
            "                    (0 <= I < N), so N tasks cover each photo once; slurm: I and N from the\n"
            "                    Slurm job array. The shares' outputs concatenated are the whole run's lines\n"
            "  --threads N       threads (default: $ATTNCAP_THREADS or all cores)\n"
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

/* ---- output ---- */

/* FNV-1a: the stem table's hash. */
static uint64_t hash_str(const char *s) {
    uint64_t h = 1469598103934665603ull;
    for (; *s; s++) h = (h ^ (unsigned char)*s) * 1099511628211ull;
    return h;
}

/* stems->v[i]: a unique name for photo i's folder DIR/<stem>: its file name without the extension,
 * then "-2", "-3", ... for later photos of the same name. Decided for all photos before any is
 * captioned, in input order, so a rerun over the same inputs (--skip-existing) finds the same
 * folders. A hash table of the stems taken keeps this linear in the number of photos. */
static int assign_stems(const strv *paths, strv *stems) {
    size_t cap = 64;
    while (cap < 2 * (size_t)paths->n + 2) cap *= 2;
    int *table = malloc(cap * sizeof *table); /* index into stems->v, or -1 */
    if (!table) return -1;
    for (size_t k = 0; k < cap; k++) table[k] = -1;
    int rc = 0;
    for (int i = 0; i < paths->n && !rc; i++) {
        const char *b = strrchr(paths->v[i], '/');
        b = b ? b + 1 : paths->v[i];
        char stem[200], buf[220];
        snprintf(stem, sizeof stem, "%s", b);
        char *dot = strrchr(stem, '.');
        if (dot && dot != stem) *dot = 0;
        snprintf(buf, sizeof buf, "%s", stem);
        size_t slot;
        for (int k = 2;; k++) {
            slot = hash_str(buf) & (cap - 1);
            while (table[slot] >= 0 && strcmp(stems->v[table[slot]], buf)) slot = (slot + 1) & (cap - 1);
            if (table[slot] < 0) break;
            snprintf(buf, sizeof buf, "%s-%d", stem, k);
        }
        if (strv_push(stems, buf)) rc = -1;
        else table[slot] = stems->n - 1;
    }
    free(table);
    return rc;
}

/* Tags, confidence and whether the caption was replaced by a description (naming.h). */
static void add_naming_json(cJSON *o, const ac_caption *c) {
    cJSON *unk = NULL; /* a given caption's words outside the vocabulary */
    for (int k = 0; c->labels && k < c->n; k++)
        if (c->words[k] == AC_UNK && c->labels[k] && strcmp(c->labels[k], "<unk>")) {
            if (!unk) unk = cJSON_AddArrayToObject(o, "unknown_words");
            cJSON_AddItemToArray(unk, cJSON_CreateString(c->labels[k]));
        }
    if (isfinite(c->confidence) && c->confidence > 0) cJSON_AddNumberToObject(o, "confidence", c->confidence);
    if (c->described) cJSON_AddTrueToObject(o, "described");
    if (!c->n_tags) return;
    cJSON *tags = cJSON_AddArrayToObject(o, "tags");
    for (int i = 0; i < c->n_tags; i++) {
        const ac_caption_tag *t = &c->tags[i];
        cJSON *x = cJSON_CreateObject();
        cJSON_AddStringToObject(x, "word", t->word);
        if (t->cls[0]) cJSON_AddStringToObject(x, "class", t->cls);
        cJSON_AddNumberToObject(x, "prob", round(t->prob * 1e4) / 1e4);
        cJSON_AddBoolToObject(x, "named", t->named);
        cJSON_AddBoolToObject(x, "forced", t->forced);
        if (!t->in_vocab) cJSON_AddFalseToObject(x, "in_vocab");
        cJSON_AddItemToArray(tags, x);
    }
}

static void print_json(const char *path, const char *text, const ac_caption *c, const ac_vocab *v, char **ov, int n_ov,
                       int attention, int gh, int gw) {
    cJSON *o = cJSON_CreateObject();
    cJSON_AddStringToObject(o, "image", path);
    cJSON_AddStringToObject(o, "caption", text);
    cJSON *tok = cJSON_AddArrayToObject(o, "tokens");
    for (int i = 0; i < c->n; i++) cJSON_AddItemToArray(tok, cJSON_CreateString(ac_caption_word(c, v, i)));
    cJSON_AddNumberToObject(o, "logprob", c->logprob);
    cJSON_AddNumberToObject(o, "score", c->score); /* the ranking score, as --nbest prints it */
    add_naming_json(o, c);
    if (c->n_alt) {
        cJSON *alts = cJSON_AddArrayToObject(o, "alternatives");
        for (int a = 0; a < c->n_alt; a++) {
            const ac_caption *ca = &c->alt[a];
            char *t = ac_caption_text(ca, v);
            cJSON *x = cJSON_CreateObject();
            cJSON_AddStringToObject(x, "caption", t ? t : "");
            cJSON *tt = cJSON_AddArrayToObject(x, "tokens");
            for (int i = 0; i < ca->n; i++) cJSON_AddItemToArray(tt, cJSON_CreateString(ac_caption_word(ca, v, i)));
            cJSON_AddNumberToObject(x, "logprob", ca->logprob);
            cJSON_AddNumberToObject(x, "score", ca->score);
            cJSON_AddItemToArray(alts, x);
            free(t);
        }
    }
    cJSON *ovs = cJSON_AddArrayToObject(o, "overlays");
    for (int i = 0; i < n_ov; i++) cJSON_AddItemToArray(ovs, cJSON_CreateString(ov[i]));
    char *raw = NULL;
    if (attention) {
        int L = gh * gw;
        size_t cap = (size_t)c->n * L * 12 + 16, n = 0;
        raw = malloc(cap);
        if (raw) {
            raw[n++] = '[';
            for (int t = 0; t < c->n; t++) {
                n += (size_t)snprintf(raw + n, cap - n, "%s[", t ? "," : "");
                for (int i = 0; i < L; i++)
                    n += (size_t)snprintf(raw + n, cap - n, "%s%.4g", i ? "," : "", c->alpha[(size_t)t * L + i]);
                raw[n++] = ']';
            }
            raw[n++] = ']';
            raw[n] = 0;
            cJSON_AddItemToObject(o, "attention", cJSON_CreateRaw(raw));
        }
        int g[2] = {gh, gw};
        cJSON_AddItemToObject(o, "grid", cJSON_CreateIntArray(g, 2));
    }
    char *s = cJSON_PrintUnformatted(o);
    if (s) printf("%s\n", s);
    free(s), free(raw);
    cJSON_Delete(o);
}

/* What the results need from cmd_caption: output settings and the running totals. */
typedef struct caption_view {
    const ac_captioner *cap;
    int json, attention, nbest;
    const char *ov_dir;
    const ac_overlay_opts *oo;
    const ac_font *font;
    const strv *stems; /* photo i's overlay folder name (assign_stems) */
    cli_progress prog;
    int failures, done_ok;
    double t_dec, t_cnn, t_bs, t_ov;
} caption_view;

/* One photo's result, in input order: its line (or JSON) on stdout, its overlays, or its error. */
static void on_caption(void *user, const ac_batch_result *r) {
    caption_view *v = user;
    const ac_captioner *cap = v->cap;
    const char *path = r->path;
    ac_err err;
    v->t_dec += r->t_decode, v->t_cnn += r->t_cnn, v->t_bs += r->t_search;
    cli_progress_clear(&v->prog); /* the result or the error gets the line, then the bar comes back */
    if (!r->ok) {
        if (r->run_failed) fprintf(stderr, "attncap caption: %s: %s\n", path, r->err.msg);
        else fprintf(stderr, "attncap caption: %s%s\n", r->err.msg, cli_hint(&r->err));
        v->failures++;
    } else {
        const ac_caption *c = r->caption;
        char *text = ac_caption_text(c, cap->model.vocab);
        char **ov = NULL;
        int n_ov = 0, ov_failed = 0;
        if (v->ov_dir) {
            double t0 = ac_now();
            if (ac_overlays_write(v->ov_dir, v->stems->v[r->index], r->photo, c, cap->model.vocab, cap->grid_h,
                                  cap->grid_w, v->oo, v->font, &ov, &n_ov, &err)) {
                fprintf(stderr, "attncap caption: %s: overlays: %s%s\n", path, err.msg, cli_hint(&err));
                ov_failed = 1;
            }
            v->t_ov += ac_now() - t0;
        }
        if (v->json) print_json(path, text ? text : "", c, cap->model.vocab, ov, n_ov, v->attention, cap->grid_h, cap->grid_w);
        else if (v->nbest > 1) {
            printf("%s\t%s\t%.4f\n", path, text ? text : "", c->score);
            for (int a = 0; a < c->n_alt; a++) {
                char *t = ac_caption_text(&c->alt[a], cap->model.vocab);
                printf("%s\t%s\t%.4f\n", path, t ? t : "", c->alt[a].score);
                free(t);
            }
        } else if (isfinite(c->confidence) && c->confidence > 0)
            printf("%s\t%s\t%.2f\n", path, text ? text : "", c->confidence);
        else printf("%s\t%s\n", path, text ? text : "");
        fflush(stdout);
        v->failures += ov_failed;
        v->done_ok += !ov_failed;
        for (int k = 0; k < n_ov; k++) free(ov[k]);
        free(ov), free(text);
    }
    cli_progress_update(&v->prog, (uint64_t)r->index + 1);
}

int cmd_caption(int argc, char **argv) {
    const char *model = NULL, *encoder = NULL, *ov_dir = NULL, *given = NULL;
    cli_tag_flags tf = CLI_TAG_FLAGS_INIT;
    int beam = -1, max_len = -1, json = 0, attention = 0, quiet = 0, verbose = 0, threads = 0, force = 0;
    int allow_unk = 0, stdin_used = 0, nbest = 0, skip_existing = 0;
    float len_alpha = -1.0f; /* -1: the model's recorded setting, else the default */
    cli_overlay_flags of = CLI_OVERLAY_FLAGS_INIT;
    const char *share = NULL;
    const cli_opt opts[] = {
        OPT_STR("--model", &model),
        OPT_STR("--encoder", &encoder),
        OPT_STR("--overlays", &ov_dir),
        OPT_STR("--given", &given),
        CLI_TAG_OPTS(tf),
        OPT_STR("--tag-table", &tf.table),
        OPT_FLOAT("--min-confidence", &tf.min_confidence, 0, 1),
        CLI_OVERLAY_OPTS(of),
        OPT_STR("--shard", &share),
        OPT_INT("--beam", &beam, 1, 100),
        OPT_INT("--nbest", &nbest, 1, 100),
        OPT_INT("--max-len", &max_len, 1, 200),
        OPT_INT("--threads", &threads, 1, 256),
        OPT_FLOAT("--len-alpha", &len_alpha, 0, 10),
        OPT_FLAG("--json", NULL, &json),
        OPT_FLAG("--attention", NULL, &attention),
        OPT_FLAG("--allow-unk", NULL, &allow_unk),
        OPT_FLAG("--force", NULL, &force),
        OPT_FLAG("--skip-existing", NULL, &skip_existing),
        OPT_FLAG("--quiet", "-q", &quiet),
        OPT_FLAG("--verbose", "-v", &verbose),
        OPT_END,
    };
    const int n_args = cli_parse("caption", argc, argv, opts, -1, usage);
    if (n_args < 0) return n_args == CLI_HELP ? 0 : 2;
    ac_overlay_opts oo = ac_overlay_defaults();
    if (cli_overlay_flags_apply(&of, &oo)) return 2;
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
    ac_shard shard = {0, 0};
    if (share && ac_shard_parse(share, &shard, &err)) {
        fprintf(stderr, "attncap caption: --shard: %s\n", err.msg);
        return 2;
    }
    strv paths = {0}, stems = {0};
    int skipped = 0;
    int failures = 0, rc = 1;
    ac_captioner cap;
    int cap_open = 0;
    ac_font *font = NULL;
    /* Gather the inputs. A missing file is reported when its turn comes (as a per-photo error). */
    for (int i = 1; i <= n_args; i++) {
        const char *a = argv[i];
        if (!strcmp(a, "-")) {
            if (stdin_used++) continue;
            if (cli_read_list(stdin, "stdin", NULL, &paths, &err) < 0) {
                fprintf(stderr, "attncap caption: %s\n", err.msg);
                goto out;
            }
        } else if (ac_is_dir(a)) {
            const int found = cli_walk_photos(a, &paths, &err);
            if (found < 0) {
                fprintf(stderr, "attncap caption: %s\n", err.msg);
                goto out;
            }
            if (!found) fprintf(stderr, "attncap caption: warning: %s: no photos in it (.jpg .jpeg .png .bmp .gif)\n", a);
        } else if (strv_push(&paths, a)) {
            fprintf(stderr, "attncap caption: out of memory\n");
            goto out;
        }
    }
    if (!paths.n) {
        fprintf(stderr, "attncap caption: no photos to caption\n");
        goto out;
    }
    paths.n = ac_shard_filter(&shard, paths.v, paths.n, free);
    if (ov_dir) {
        cli_cleanup_watch(ov_dir, 1); /* a folder being written when interrupted goes (see cleanup.h) */
        if (assign_stems(&paths, &stems)) {
            fprintf(stderr, "attncap caption: out of memory\n");
            goto out;
        }
    }
    if (skip_existing) { /* resuming: a photo whose folder is there was done (folders are written whole) */
        int kept = 0;
        for (int i = 0; i < paths.n; i++) {
            char *d = ac_path_join(ov_dir, stems.v[i]);
            if (d && ac_is_dir(d)) {
                free(paths.v[i]), free(stems.v[i]);
                skipped++;
            } else {
                paths.v[kept] = paths.v[i], stems.v[kept] = stems.v[i];
                kept++;
            }
            free(d);
        }
        paths.n = stems.n = kept;
        if (!kept) {
            if (!quiet) fprintf(stderr, "attncap caption: all %d photos were done already (%s)\n", skipped, ov_dir);
            rc = 0;
            goto out;
        }
    }
    if (ov_dir) {
        if (ac_mkdirs(ov_dir, &err)) {
            fprintf(stderr, "attncap caption: %s%s\n", err.msg, cli_hint(&err));
            goto out;
        }
        if (access(ov_dir, W_OK | X_OK)) {
            fprintf(stderr, "attncap caption: %s: output directory is not writable\n", ov_dir);
            goto out;
        }
        if (ac_font_load(NULL, &font, &err)) {
            fprintf(stderr, "attncap caption: %s%s\n", err.msg, cli_hint(&err));
            goto out;
        }
    }
    if (threads) ac_set_threads(threads);
    double t_start = ac_now();
    if (ac_captioner_open(&cap, model, encoder, threads, &err)) {
        fprintf(stderr, "attncap caption: %s%s\n", err.msg, cli_hint(&err));
        goto out;
    }
    cap_open = 1;
    if (given && ac_captioner_set_given(&cap, given, &err)) {
        fprintf(stderr, "attncap caption: --given: %s%s\n", err.msg, cli_hint(&err));
        goto out;
    }
    for (int k = 0; given && k < cap.n_given; k++) /* words the model cannot say: fed as <unk> */
        if (cap.given[k] == AC_UNK && strcmp(cap.given_words[k], "<unk>") && !quiet)
            fprintf(stderr, "attncap caption: note: --given: '%s' is not in the model's vocabulary (fed as <unk>; "
                            "attncap info --vocab MODEL lists it)\n", cap.given_words[k]);
    if (!given) { /* tags: the model's dev-chosen setting (auto if recorded), or the flags */
        if (cli_tag_flags_apply(&cap, &tf, 1, &err)) {
            fprintf(stderr, "attncap caption: --tags: %s\n", err.msg);
            goto out;
        }
    }
    if (beam > 0) cap.beam.beam = beam;
    if (max_len > 0) cap.beam.max_len = max_len;
    if (len_alpha >= 0) cap.beam.len_alpha = len_alpha;
    cap.beam.allow_unk = allow_unk;
    cap.beam.nbest = nbest;
    double t_load = ac_now() - t_start;
    oo.force = force, oo.threads = threads;

    double t_run = ac_now(), cpu_run = cpu_seconds();
    caption_view view = {.cap = &cap, .json = json, .attention = attention, .nbest = nbest, .ov_dir = ov_dir,
                         .oo = &oo, .font = font, .stems = &stems};
    ac_batch_stats bs;
    cli_progress_start(&view.prog, "caption", (uint64_t)paths.n, quiet);
    const int batch_rc = ac_captioner_batch(&cap, (const char *const *)paths.v, paths.n, threads, ov_dir != NULL,
                                            on_caption, &view, &bs, &err);
    cli_progress_finish(&view.prog);
    if (batch_rc) {
        fprintf(stderr, "attncap caption: %s%s\n", err.msg, cli_hint(&err));
        goto out;
    }
    failures += view.failures;
    const int done_ok = view.done_ok;
    char skipped_note[64] = "";
    if (skipped) snprintf(skipped_note, sizeof skipped_note, ", %d skipped (done before)", skipped);
    if (!quiet && (paths.n > 1 || skipped))
        fprintf(stderr, "attncap caption: %d captioned, %d failed%s, %.1f s\n", done_ok, failures, skipped_note,
                ac_now() - t_start);
    t_run = ac_now() - t_run;
    cpu_run = cpu_seconds() - cpu_run;
    if (verbose) {
        int n = paths.n;
        fprintf(stderr,
                "attncap caption: %d photos (%d ok) in %.2f s: %.2f images/s; model+encoder load %.2f s; "
                "%d lane%s x %d CNN thread%s\n"
                "  per photo: decode+resize %.1f ms, CNN %.1f ms, decoder (beam %d) %.1f ms (%s), overlays %.1f ms; "
                "main thread waited %.1f ms; CPU %.1f ms per photo (all threads, after loading)\n",
                n, done_ok, t_run, n / (t_run > 0 ? t_run : 1e-9), t_load, bs.lanes, bs.lanes > 1 ? "s" : "",
                bs.lane_threads, bs.lane_threads > 1 ? "s" : "", 1e3 * view.t_dec / (n ? n : 1),
                1e3 * view.t_cnn / (n ? n : 1), cap.beam.beam, 1e3 * view.t_bs / (n ? n : 1),
                bs.lanes > 1 ? "lanes run concurrently" : "decoding overlapped", 1e3 * view.t_ov / (n ? n : 1),
                1e3 * bs.t_wait / (n ? n : 1), 1e3 * cpu_run / (n ? n : 1));
    }
    rc = failures ? 1 : 0;
out:
    if (cap_open) ac_captioner_close(&cap);
    ac_font_free(font);
    strv_free(&paths), strv_free(&stems);
    return rc;
}
