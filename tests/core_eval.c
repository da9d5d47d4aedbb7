/* core_eval.c: the core API's evaluator (attncap.h, since 1.6) from a program that knows only that
 * header, for tests/core_eval.sh. It must compile as C99 and C++17 with -pedantic -Werror.
 *   core_eval run KEY=VALUE...   the options set (KEY alone: a switch), then a run: prints the scores' JSON
 *                                ($CORE_PER_CATEGORY: with each category), then "metrics" and
 *                                ac_evaluator_metrics' numbers (%.12g, METEOR "nan" without it), then
 *                                "events PROGRESS WARNINGS FIRST_TOTAL LAST_DONE" (the events had; each
 *                                warning also on stderr); $CORE_TEXT: the text instead of the JSON.
 *                                Exit 3: the progress events were out of order, or the metrics disagree
 *                                with the JSON's images; 1: the run failed (its message on stderr, with
 *                                "options" when err.code is AC_ERR_OPTIONS)
 *   core_eval errors DIR         every error path; prints "ok WHAT" or "bad WHAT: why"
 *   core_eval describe FLAGS FILE  (1.6's ac_describe_file) the text, FLAGS its flags as a number
 *   core_eval gallery CAPTIONS DIR [TITLE]  (1.6's ac_report_captions) each note as "note<TAB>line",
 *                                then "photos N"
 *   core_eval tool NAME KEY=VALUE...  (1.6's ac_tool) the report's lines on stdout, each note on stderr
 *                                as "note<TAB>line", then on stderr "progress N TOTAL" (events had, last
 *                                total); exit 3 when progress went backwards or a line held a newline */
#include <attncap/attncap.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct seen {
    int progress, warnings, first_total, last_done, out_of_order;
} seen;

static void on_event(const ac_eval_event *ev, void *user) {
    seen *s = (seen *)user;
    if (ev->warning) {
        s->warnings++;
        fprintf(stderr, "warning\t%s\n", ev->warning);
        return;
    }
    if (s->progress == 0) s->first_total = ev->total;
    else if (ev->done != s->last_done + 1 || ev->total != s->first_total) s->out_of_order = 1;
    if (s->progress == 0 && ev->done != 0) s->out_of_order = 1;
    s->progress++, s->last_done = ev->done;
}

/* "key=value" (or "key": a switch) onto e; 0 or -1 after a line on stderr. */
static int set_arg(ac_evaluator *e, const char *arg) {
    char key[64];
    const char *eq = strchr(arg, '=');
    const size_t n = eq ? (size_t)(eq - arg) : strlen(arg);
    if (n >= sizeof key) return fprintf(stderr, "key too long: %s\n", arg), -1;
    memcpy(key, arg, n), key[n] = 0;
    ac_err err;
    if (ac_evaluator_set(e, key, eq ? eq + 1 : NULL, &err) == 0) return 0;
    fprintf(stderr, "set %s: %s\n", key, err.msg);
    return -1;
}

static int run(int argc, char **argv) {
    ac_evaluator *e;
    ac_err err;
    if (ac_evaluator_open(&e, &err)) return fprintf(stderr, "%s\n", err.msg), 1;
    for (int i = 0; i < argc; i++)
        if (set_arg(e, argv[i])) {
            ac_evaluator_close(e);
            return 1;
        }
    seen s = {0, 0, 0, 0, 0};
    if (ac_evaluator_run(e, on_event, &s, &err)) {
        fprintf(stderr, "run%s: %s\n", err.code == AC_ERR_OPTIONS ? " options" : "", err.msg);
        ac_evaluator_close(e);
        return 1;
    }
    const unsigned flags = getenv("CORE_PER_CATEGORY") ? AC_EVAL_PER_CATEGORY : 0;
    char *out = getenv("CORE_TEXT") ? ac_evaluator_text(e, flags) : ac_evaluator_json(e, flags);
    ac_metrics m;
    int rc = 0;
    if (ac_evaluator_images(e) == 0) printf("empty\n");
    else if (!out || ac_evaluator_metrics(e, &m)) rc = 3;
    else {
        printf("%s%s", out, getenv("CORE_TEXT") ? "" : "\n");
        printf("metrics %d %.12g %.12g %.12g %.12g %.12g %.12g %.12g\n", m.n, m.bleu[0], m.bleu[1], m.bleu[2],
               m.bleu[3], m.meteor, m.rouge_l, m.cider_d);
        if (m.n != ac_evaluator_images(e)) rc = 3;
    }
    printf("events %d %d %d %d\n", s.progress, s.warnings, s.first_total, s.last_done);
    if (s.out_of_order) rc = 3;
    ac_free(out);
    ac_evaluator_close(e);
    return rc;
}

static int failures;
static void expect(const char *what, int ok, const char *why) {
    if (ok) printf("ok %s\n", what);
    else printf("bad %s: %s\n", what, why), failures++;
}

/* A set that must be refused with AC_ERR_OPTIONS and a message naming the key. */
static void refused_set(ac_evaluator *e, const char *key, const char *value, const char *named) {
    ac_err err;
    err.msg[0] = 0;
    const int rc = ac_evaluator_set(e, key, value, &err);
    char what[128];
    snprintf(what, sizeof what, "set %s=%s", key, value ? value : "(null)");
    expect(what, rc == -1 && err.code == AC_ERR_OPTIONS && strstr(err.msg, named) != NULL, err.msg);
}

/* A run that must be refused with code, its message holding want. */
static void refused_run(const char *what, const char *const *args, int n, int code, const char *want) {
    ac_evaluator *e;
    ac_err err;
    if (ac_evaluator_open(&e, &err)) {
        expect(what, 0, err.msg);
        return;
    }
    for (int i = 0; i < n; i++)
        if (set_arg(e, args[i])) expect(what, 0, "an option was refused");
    err.msg[0] = 0;
    const int rc = ac_evaluator_run(e, NULL, NULL, &err);
    expect(what, rc == -1 && (int)err.code == code && strstr(err.msg, want) != NULL && strchr(err.msg, '\n') == NULL,
           err.msg);
    ac_metrics m;
    expect("nothing to read after a failed run",
           ac_evaluator_images(e) == 0 && ac_evaluator_metrics(e, &m) == -1 && !ac_evaluator_json(e, 0) &&
               !ac_evaluator_text(e, 0), "a getter answered");
    ac_evaluator_close(e);
}

static void tool_errors(void);

static int errors(const char *dir) {
    ac_evaluator *e;
    ac_err err;
    if (ac_evaluator_open(&e, &err)) return fprintf(stderr, "%s\n", err.msg), 1;
    ac_evaluator_close(NULL);
    refused_set(e, "no_such_option", "1", "no_such_option");
    refused_set(e, "beam", "0", "beam");
    refused_set(e, "beam", "three", "beam");
    refused_set(e, "len_alpha", "11", "len_alpha");
    refused_set(e, "tags", "giraffe", "tags");
    refused_set(e, "shard", "3/3", "shard");
    refused_set(e, "precision", "f64", "precision");
    refused_set(e, "results", "", "results");
    expect("defaults", !strcmp(ac_evaluator_get(e, "split"), "test") && !strcmp(ac_evaluator_get(e, "meteor"), "1") &&
                           !strcmp(ac_evaluator_get(e, "novel_max"), "10") && !strcmp(ac_evaluator_get(e, "results"), "") &&
                           ac_evaluator_get(e, "no_such_option") == NULL,
           "a default differs");
    expect("dashes read as underscores", ac_evaluator_set(e, "max-len", "12", &err) == 0 &&
                                              !strcmp(ac_evaluator_get(e, "max_len"), "12"), err.msg);
    expect("results: the first of those set", ac_evaluator_set(e, "results", "a.json", &err) == 0 &&
                                                   ac_evaluator_set(e, "results", "b.json", &err) == 0 &&
                                                   !strcmp(ac_evaluator_get(e, "results"), "a.json"), err.msg);
    int switches = 0, n = 0, is_switch;
    for (const char *k; (k = ac_evaluator_option(n, &is_switch)) != NULL; n++) switches += is_switch;
    expect("options listed", n > 20 && switches == 3 && ac_evaluator_option(-1, &is_switch) == NULL, "the list differs");
    ac_metrics m;
    expect("nothing to read before a run", ac_evaluator_images(e) == 0 && ac_evaluator_metrics(e, &m) == -1 &&
                                               !ac_evaluator_json(e, 0) && !ac_evaluator_text(e, 0), "a getter answered");
    ac_evaluator_close(e);

    char refs[1024], missing[1024];
    snprintf(refs, sizeof refs, "refs=%s/refs.json", dir);
    snprintf(missing, sizeof missing, "results=%s/missing.json", dir);
    const char *none[1] = {"meteor=0"};
    refused_run("nothing to score", none, 1, AC_ERR_OPTIONS, "need exactly one of");
    const char *refs_only[1] = {refs};
    refused_run("refs without results", refs_only, 1, AC_ERR_OPTIONS, "need exactly one of");
    const char *two[3] = {refs, "results=x.json", "pairs=p.json"};
    refused_run("refs and pairs", two, 3, AC_ERR_OPTIONS, "need exactly one of");
    const char *shard[3] = {refs, "results=x.json", "shard=0/2"};
    refused_run("a shard without data", shard, 3, AC_ERR_OPTIONS, "shard");
    const char *compare[3] = {refs, "results=x.json", "compare=y.json"};
    refused_run("compare without a report", compare, 3, AC_ERR_OPTIONS, "compare");
    const char *absent[3] = {refs, missing, "meteor=0"};
    refused_run("a results file that is not there", absent, 3, AC_ERR_FAILED, "missing.json");
    const char *model[2] = {"data=/nonexistent/flickr8k", "model=/nonexistent/model.safetensors"};
    refused_run("a model that is not there", model, 2, AC_ERR_FAILED, "/nonexistent/model.safetensors");
    const char *novel[4] = {refs, "results=x.json", "novel_from=x", "novel_split=bogus"};
    refused_run("an unknown novel split", novel, 4, AC_ERR_OPTIONS, "novel_split");
    tool_errors();
    return failures ? 1 : 0;
}

static int describe(const char *flags, const char *path) {
    char *text;
    ac_err err;
    if (ac_describe_file(path, (unsigned)atoi(flags), &text, &err)) return fprintf(stderr, "%s\n", err.msg), 1;
    fputs(text, stdout);
    ac_free(text);
    return 0;
}

static void note(const char *line, void *user) {
    (void)user;
    printf("note\t%s\n", line);
}

static int gallery(const char *captions, const char *dir, const char *title) {
    int photos = -1;
    ac_err err;
    if (ac_report_captions(captions, dir, title, note, NULL, &photos, &err)) return fprintf(stderr, "%s\n", err.msg), 1;
    printf("photos %d\n", photos);
    return 0;
}

typedef struct tool_seen {
    int progress, total, last, bad;
} tool_seen;

static void on_tool(const ac_tool_event *ev, void *user) {
    tool_seen *s = (tool_seen *)user;
    if (ev->line) {
        if (strchr(ev->line, '\n')) s->bad = 1;
        printf("%s\n", ev->line);
    } else if (ev->note) fprintf(stderr, "note\t%s\n", ev->note);
    else {
        if (ev->done < s->last || (s->progress && ev->total != s->total)) s->bad = 1;
        s->progress++, s->total = ev->total, s->last = ev->done;
    }
}

static int tool(const char *name, int argc, char **argv) {
    ac_tool *t;
    ac_err err;
    if (ac_tool_open(name, &t, &err)) return fprintf(stderr, "open: %s\n", err.msg), 1;
    for (int i = 0; i < argc; i++) {
        char key[64];
        const char *eq = strchr(argv[i], '=');
        const size_t n = eq ? (size_t)(eq - argv[i]) : strlen(argv[i]);
        if (n >= sizeof key) return ac_tool_close(t), 1;
        memcpy(key, argv[i], n), key[n] = 0;
        if (ac_tool_set(t, key, eq ? eq + 1 : NULL, &err)) {
            fprintf(stderr, "set %s: %s\n", key, err.msg);
            ac_tool_close(t);
            return 1;
        }
    }
    tool_seen s = {0, 0, 0, 0};
    const int rc = ac_tool_run(t, on_tool, &s, &err);
    if (rc) fprintf(stderr, "run%s: %s\n", err.code == AC_ERR_OPTIONS ? " options" : "", err.msg);
    fprintf(stderr, "progress %d %d\n", s.progress, s.total);
    ac_tool_close(t);
    return rc ? 1 : s.bad ? 3 : 0;
}

static void tool_errors(void) {
    ac_tool *t = NULL;
    ac_err err;
    err.msg[0] = 0;
    expect("an unknown tool", ac_tool_open("no_such_tool", &t, &err) == -1 && t == NULL && err.code == AC_ERR_OPTIONS &&
                                 strstr(err.msg, "no_such_tool") != NULL, err.msg);
    int found = 0;
    for (int i = 0; ac_tool_name(i); i++) found |= !strcmp(ac_tool_name(i), "ground");
    expect("tools listed", found && ac_tool_name(-1) == NULL, "ground is not among ac_tool_name's");
    if (ac_tool_open("ground", &t, &err)) {
        expect("open ground", 0, err.msg);
        return;
    }
    int photos = 0, is_switch = 0;
    for (int i = 0; ac_tool_option(t, i, &is_switch); i++) photos |= !strcmp(ac_tool_option(t, i, &is_switch), "photos");
    expect("its options listed", photos, "no photos option");
    expect("an unknown option", ac_tool_set(t, "no_such_option", "1", &err) == -1 && err.code == AC_ERR_OPTIONS, err.msg);
    expect("a bad value", ac_tool_set(t, "beam", "0", &err) == -1 && strstr(err.msg, "beam") != NULL, err.msg);
    expect("a bad precision", ac_tool_set(t, "precision", "f64", &err) == -1 && err.code == AC_ERR_OPTIONS, err.msg);
    expect("root's default", !strcmp(ac_tool_get(t, "root"), "."), ac_tool_get(t, "root"));
    expect("photos: the first", ac_tool_set(t, "photos", "a.jpg", &err) == 0 && ac_tool_set(t, "photos", "b.jpg", &err) == 0 &&
                                    !strcmp(ac_tool_get(t, "photos"), "a.jpg"), err.msg);
    expect("photos without boxes detected", ac_tool_set(t, "boxes", "x.tsv", &err) == 0 &&
                                                ac_tool_run(t, NULL, NULL, &err) == -1 && err.code == AC_ERR_OPTIONS,
           err.msg);
    ac_tool_close(t);
    ac_tool_close(NULL);
}

int main(int argc, char **argv) {
    if (argc >= 2 && !strcmp(argv[1], "run")) return run(argc - 2, argv + 2);
    if (argc == 3 && !strcmp(argv[1], "errors")) return errors(argv[2]);
    if (argc >= 3 && !strcmp(argv[1], "tool")) return tool(argv[2], argc - 3, argv + 3);
    if (argc == 4 && !strcmp(argv[1], "describe")) return describe(argv[2], argv[3]);
    if ((argc == 4 || argc == 5) && !strcmp(argv[1], "gallery")) return gallery(argv[2], argv[3], argc == 5 ? argv[4] : NULL);
    fprintf(stderr, "usage: core_eval run KEY=VALUE... | errors DIR | describe FLAGS FILE | gallery CAPTIONS DIR [TITLE]\n");
    return 2;
}
