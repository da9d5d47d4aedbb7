/* caption_output.c: see caption_output.h. */
#include "caption_output.h"

#include <cjson/cJSON.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cleanup.h"
#include "inputs.h"
#include "messages.h"
#include "progress.h"

/* DIR/STEM, or DIR/STEM/NAME (name not NULL): malloc'd, NULL when out of memory. A DIR ending in '/'
 * gets no second one. */
static char *folder_path(const char *dir, const char *stem, const char *name) {
    const size_t n = strlen(dir) + strlen(stem) + (name ? strlen(name) : 0) + 3;
    char *s = malloc(n);
    const char *sep = !*dir || dir[strlen(dir) - 1] == '/' ? "" : "/";
    if (s) snprintf(s, n, "%s%s%s%s%s", dir, sep, stem, name ? "/" : "", name ? name : "");
    return s;
}

/* The confidence column: "0.90", or "-" when the model has no calibration (NaN). */
static const char *confidence_text(double confidence, char buf[16]) {
    if (isfinite(confidence) && confidence > 0) snprintf(buf, 16, "%.2f", confidence);
    else snprintf(buf, 16, "-");
    return buf;
}

/* PATH, caption, confidence (when the model has one): the plain line. --nbest: every line with the
 * confidence third ("-" without) and the score fourth. --given: the log-probability third. */
static void print_plain(const cli_caption_view *v, const char *path, const ac_result *r) {
    char conf[16];
    if (v->given) printf("%s\t%s\t%.4f\n", path, r->text, r->logprob);
    else if (v->nbest > 1) {
        printf("%s\t%s\t%s\t%.4f\n", path, r->text, confidence_text(r->confidence, conf), r->score);
        for (int a = 0; a < r->n_alternatives; a++)
            printf("%s\t%s\t%s\t%.4f\n", path, r->alternatives[a].text,
                   confidence_text(ac_result_alternative_confidence(r, a), conf), r->alternatives[a].score);
    } else if (isfinite(r->confidence) && r->confidence > 0)
        printf("%s\t%s\t%.2f\n", path, r->text, r->confidence);
    else printf("%s\t%s\n", path, r->text);
}

/* DIR/<stem>/caption.json: the photo's JSON line, beside its overlays (written whole by the core). */
static int write_caption_json(const cli_caption_view *v, const char *stem, const ac_result *r, ac_err *err) {
    char *p = folder_path(v->ov_dir, stem, "caption.json");
    const int rc = p ? ac_result_write_json(v->cap, r, p, NULL, v->attention ? AC_JSON_ATTENTION : 0, err)
                     : cli_errf(err, "out of memory");
    free(p);
    return rc;
}

/* line with "error": what failed (a JSON line whose caption is there but not all its files) */
static char *with_error(const char *line, const char *what) {
    cJSON *o = cJSON_Parse(line);
    char *s = NULL;
    if (o && cJSON_AddStringToObject(o, "error", what)) s = cJSON_PrintUnformatted(o);
    cJSON_Delete(o);
    return s;
}

void cli_caption_on_result(void *user, int index, ac_result *r) {
    cli_caption_view *v = user;
    const char *path = v->paths->v[index];
    cli_progress_clear(&v->prog); /* the result or the error gets the line, then the bar comes back */
    if (v->done) cli_caption_print_done(v->ov_dir, v->json, v->done, v->done->left_pos[index]);
    if (r) {
        v->t_dec += ac_result_seconds(r, AC_SECONDS_READ), v->t_cnn += ac_result_seconds(r, AC_SECONDS_CNN);
        v->t_bs += ac_result_seconds(r, AC_SECONDS_SEARCH), v->t_wait += ac_result_seconds(r, AC_SECONDS_WAITED);
    }
    if (!r || r->error) { /* the photo could not be read (its message names it), or the model failed on it */
        if (r && r->error_code == AC_ERR_BAD_IMAGE) fprintf(stderr, "attncap caption: %s\n", r->error);
        else fprintf(stderr, "attncap caption: %s: %s\n", path, r ? r->error : "out of memory");
        v->failures++;
        ac_result_free(r);
        cli_progress_update(&v->prog, (uint64_t)index + 1);
        return;
    }
    char *line = NULL, failed_what[1200] = "";
    int ov_failed = 0;
    ac_err err;
    char *unit = v->ov_dir ? folder_path(v->ov_dir, v->stems->v[index], NULL) : NULL;
    if (v->ov_dir) {
        double t0 = cli_now();
        /* from its rename until its caption.json is in, the folder goes on an interruption (cleanup.h);
         * one that --force replaces only once the new one is in place */
        const int replacing = unit && access(unit, F_OK) == 0;
        if (!replacing) cli_cleanup_unit(unit);
        if (ac_result_write_overlays(v->cap, r, v->ov_dir, v->stems->v[index], v->ov_flags, &err)) {
            fprintf(stderr, "attncap caption: %s: overlays: %s%s\n", path, err.msg, cli_hint(&err));
            snprintf(failed_what, sizeof failed_what, "overlays: %s", err.msg);
            ov_failed = 1;
        } else if (replacing) {
            cli_cleanup_unit(unit);
        }
        v->t_ov += cli_now() - t0;
    }
    if (v->json) line = ac_result_json(v->cap, r, NULL, v->attention ? AC_JSON_ATTENTION : 0);
    if (v->ov_dir && !ov_failed && write_caption_json(v, v->stems->v[index], r, &err)) {
        fprintf(stderr, "attncap caption: %s: caption.json: %s%s\n", path, err.msg, cli_hint(&err));
        snprintf(failed_what, sizeof failed_what, "caption.json: %s", err.msg);
        ov_failed = 1;
    }
    cli_cleanup_unit(NULL);
    free(unit);
    if (v->json && !line) { /* said, and counted: a photo must not vanish from the output */
        fprintf(stderr, "attncap caption: %s: out of memory writing its JSON line\n", path);
        ov_failed = 1;
    }
    if (v->json) {
        char *marked = ov_failed && line ? with_error(line, failed_what) : NULL;
        if (marked || line) printf("%s\n", marked ? marked : line);
        free(marked);
    } else print_plain(v, path, r);
    free(line);
    fflush(stdout);
    v->failures += ov_failed;
    v->ov_failures += ov_failed;
    v->done_ok += !ov_failed;
    ac_result_free(r);
    cli_progress_update(&v->prog, (uint64_t)index + 1);
}

int cli_caption_gather(char **args, int n, cli_strv *paths, cli_strv *notes) {
    ac_err err;
    int stdin_used = 0;
    for (int i = 0; i < n; i++) {
        const char *a = args[i];
        if (!strcmp(a, "-")) {
            if (stdin_used++) continue;
            if (cli_read_list(stdin, "stdin", NULL, paths, &err) < 0) {
                fprintf(stderr, "attncap caption: %s\n", err.msg);
                return -1;
            }
        } else if (cli_is_dir(a)) {
            cli_walk_skips sk = {0};
            const int found = cli_walk_photos_counted(a, paths, &sk, &err);
            if (found < 0) {
                fprintf(stderr, "attncap caption: %s\n", err.msg);
                return -1;
            }
            char skipped[512];
            const int n_skipped = cli_walk_skips_text(&sk, skipped, sizeof skipped);
            if (!found)
                fprintf(stderr, "attncap caption: warning: %s: no photos in it (.jpg .jpeg .png .bmp .gif .webp .tif .tiff)%s%s\n",
                        a, n_skipped ? "; skipped: " : "", skipped);
            else if (n_skipped) {
                char note[1200];
                snprintf(note, sizeof note, "attncap caption: note: %s: %d photo%s; skipped: %s\n", a, found,
                         found > 1 ? "s" : "", skipped);
                if (cli_strv_push(notes, note)) {
                    fprintf(stderr, "attncap caption: out of memory\n");
                    return -1;
                }
            }
        } else if (cli_strv_push(paths, a)) { /* a missing file is reported when its turn comes */
            fprintf(stderr, "attncap caption: out of memory\n");
            return -1;
        }
    }
    return 0;
}

int cli_caption_skip_done(const char *ov_dir, cli_strv *paths, cli_strv *stems, cli_caption_done *done) {
    memset(done, 0, sizeof *done);
    done->pos = malloc(sizeof *done->pos * ((size_t)paths->n + 1));
    done->left_pos = malloc(sizeof *done->left_pos * ((size_t)paths->n + 1));
    int kept = 0, oom = !done->pos || !done->left_pos;
    for (int i = 0; i < paths->n && !oom; i++) {
        char *d = folder_path(ov_dir, stems->v[i], NULL);
        if (d && cli_is_dir(d)) {
            done->pos[done->paths.n] = i;
            oom = cli_strv_push(&done->paths, paths->v[i]) || cli_strv_push(&done->stems, stems->v[i]);
            free(paths->v[i]), free(stems->v[i]);
        } else {
            done->left_pos[kept] = i;
            paths->v[kept] = paths->v[i], stems->v[kept] = stems->v[i];
            kept++;
        }
        free(d);
    }
    if (oom) {
        fprintf(stderr, "attncap caption: out of memory\n");
        return -1;
    }
    paths->n = stems->n = kept;
    return done->paths.n;
}

/* The file at path whole, NUL-terminated (malloc'd); NULL when it cannot be read or is over max bytes. */
static char *read_text(const char *path, long max) {
    FILE *f = fopen(path, "rb");
    char *s = NULL;
    long n = -1;
    if (f && !fseek(f, 0, SEEK_END) && (n = ftell(f)) >= 0 && n <= max && !fseek(f, 0, SEEK_SET) &&
        (s = malloc((size_t)n + 1)) && fread(s, 1, (size_t)n, f) == (size_t)n)
        s[n] = 0;
    else free(s), s = NULL;
    if (f) fclose(f);
    return s;
}

void cli_caption_print_done(const char *ov_dir, int json, cli_caption_done *d, int upto) {
    for (; d->next < d->paths.n && d->pos[d->next] < upto; d->next++) {
        const char *path = d->paths.v[d->next];
        char *p = folder_path(ov_dir, d->stems.v[d->next], "caption.json");
        char *text = p ? read_text(p, 1 << 26) : NULL;
        cJSON *o = text ? cJSON_Parse(text) : NULL;
        const cJSON *cap = cJSON_GetObjectItemCaseSensitive(o, "caption"),
                    *conf = cJSON_GetObjectItemCaseSensitive(o, "confidence");
        if (!cJSON_IsString(cap))
            fprintf(stderr, "attncap caption: %s: done before, but %s is missing or unreadable: its caption is not "
                            "printed (--force redoes the photo)\n", path, p ? p : "caption.json");
        else if (json) {
            cJSON_ReplaceItemInObjectCaseSensitive(o, "image", cJSON_CreateString(path));
            char *s = cJSON_PrintUnformatted(o);
            if (s) printf("%s\n", s);
            free(s);
        } else if (cJSON_IsNumber(conf) && conf->valuedouble > 0) printf("%s\t%s\t%.2f\n", path, cap->valuestring, conf->valuedouble);
        else printf("%s\t%s\n", path, cap->valuestring);
        cJSON_Delete(o);
        free(text), free(p);
    }
    fflush(stdout);
}

void cli_caption_done_free(cli_caption_done *d) {
    cli_strv_free(&d->paths), cli_strv_free(&d->stems);
    free(d->pos), free(d->left_pos);
    memset(d, 0, sizeof *d);
}

int cli_caption_check_existing(const char *ov_dir, const cli_strv *paths, const cli_strv *stems) {
    int n = 0;
    char *first = NULL;
    for (int i = 0; i < paths->n; i++) {
        char *d = folder_path(ov_dir, stems->v[i], NULL);
        if (d && cli_is_dir(d) && n++ == 0) first = d, d = NULL;
        free(d);
    }
    if (n)
        fprintf(stderr, "attncap caption: %s%s already exist%s (%d of %d photos' overlay folders): add --skip-existing "
                        "to caption the others only, or --force to redo them\n", first ? first : "", n > 1 ? " and more" : "",
                n > 1 ? "" : "s", n, paths->n);
    free(first);
    return n ? -1 : 0;
}

void cli_caption_print_timing(const cli_caption_view *v, int n, int beam, double t_run, double t_load, double cpu_run) {
    const double per = 1e3 / (n ? n : 1); /* seconds in total -> ms per photo */
    int lane_threads;
    const int lanes = ac_captioner_lanes(v->cap, n, &lane_threads);
    char beam_note[32] = "";
    if (beam > 0) snprintf(beam_note, sizeof beam_note, " (beam %d)", beam);
    fprintf(stderr,
            "attncap caption: %d photos (%d ok) in %.2f s: %.2f images/s; model+encoder load %.2f s; "
            "%d lane%s x %d CNN thread%s\n"
            "  per photo: decode+resize %.1f ms, CNN %.1f ms, decoder%s %.1f ms (%s), overlays %.1f ms; "
            "main thread waited %.1f ms; CPU %.1f ms per photo (all threads, after loading)\n",
            n, v->done_ok, t_run, n / (t_run > 0 ? t_run : 1e-9), t_load, lanes, lanes > 1 ? "s" : "",
            lane_threads, lane_threads > 1 ? "s" : "", per * v->t_dec, per * v->t_cnn, beam_note, per * v->t_bs,
            lanes > 1 ? "lanes run concurrently" : "decoding overlapped", per * v->t_ov, per * v->t_wait, per * cpu_run);
}
