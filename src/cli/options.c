/* The subcommands' shared option parser: see options.h. */
#include "options.h"

#include "attncap/attncap.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The optimal string alignment distance (Levenshtein with adjacent transpositions) of a and b, or
 * 99 when either is longer than 63 bytes. */
static int edit_distance(const char *a, const char *b) {
    const int n = (int)strlen(a), m = (int)strlen(b);
    if (n > 63 || m > 63) return 99;
    int d[64][64];
    for (int i = 0; i <= n; i++) d[i][0] = i;
    for (int j = 0; j <= m; j++) d[0][j] = j;
    for (int i = 1; i <= n; i++)
        for (int j = 1; j <= m; j++) {
            int best = d[i - 1][j - 1] + (a[i - 1] != b[j - 1]);
            if (d[i - 1][j] + 1 < best) best = d[i - 1][j] + 1;
            if (d[i][j - 1] + 1 < best) best = d[i][j - 1] + 1;
            if (i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1] && d[i - 2][j - 2] + 1 < best)
                best = d[i - 2][j - 2] + 1;
            d[i][j] = best;
        }
    return d[n][m];
}

const char *cli_closest(const char *word, const char *const *names, int n) {
    const char *best = NULL;
    int best_d = 99;
    const int len = (int)strlen(word), bar = len <= 4 ? 1 : len <= 8 ? 2 : 3;
    for (int i = 0; i < n; i++) {
        const int d = names[i] ? edit_distance(word, names[i]) : 99;
        if (d < best_d) best_d = d, best = names[i];
    }
    return best_d <= bar ? best : NULL;
}

/* " (did you mean --x? try --help)", or " (try --help)": among opts' flags and the job's. */
static void unknown_option(const char *cmd, const cli_opt *opts, const cli_job_opts *job, const char *given) {
    const char *names[256];
    char flags[128][48];
    int n = 0;
    for (const cli_opt *o = opts; o->name && n < 256; o++)
        if (o->kind != CLI_REMOVED) names[n++] = o->name;
    const char *key;
    for (int i = 0; job && i < 128 && n < 256 && (key = job->option(job->job, i, NULL)); i++) {
        snprintf(flags[i], sizeof flags[i], "--%s", key);
        for (char *c = flags[i]; *c; c++) *c = *c == '_' ? '-' : *c;
        names[n++] = flags[i];
    }
    const char *near = given[1] == '-' ? cli_closest(given, names, n) : NULL;
    fprintf(stderr, "attncap %s: unknown option '%s' (%s%s%stry --help)\n", cmd, given, near ? "did you mean " : "",
            near ? near : "", near ? "? " : "");
}

static const cli_opt *find_opt(const cli_opt *opts, const char *arg) {
    for (const cli_opt *o = opts; o->name; o++)
        if (!strcmp(arg, o->name) || (o->alias && !strcmp(arg, o->alias))) return o;
    return NULL;
}

/* Stores `text` as o's number; returns 0, or -1 after saying what is wrong. */
static int set_number(const char *cmd, const cli_opt *o, const char *text) {
    char *end;
    errno = 0;
    double v = strtod(text, &end);
    const int whole = o->kind != CLI_FLOAT;
    if (!*text || *end || errno || !isfinite(v) || (whole && v != floor(v))) {
        fprintf(stderr, "attncap %s: %s wants %s, got '%s'\n", cmd, o->name, whole ? "a whole number" : "a number",
                text);
        return -1;
    }
    if (!(v >= o->lo && v <= o->hi)) {
        fprintf(stderr, "attncap %s: %s wants a value in %.15g..%.15g, got '%s'\n", cmd, o->name, o->lo, o->hi, text);
        return -1;
    }
    if (o->kind == CLI_INT) *(int *)o->dst = (int)v;
    else if (o->kind == CLI_U64) *(unsigned long long *)o->dst = (unsigned long long)v;
    else *(float *)o->dst = (float)v;
    return 0;
}

/* The job's key for flag NAME (len bytes after the dashes), or NULL; *is_switch, *value (an alias's, or
 * "0" for a switch's --no-) set. */
static const char *job_key(const cli_job_opts *job, const char *flag, const char *name, size_t len, int *is_switch,
                           const char **value) {
    *value = NULL;
    for (int i = 0; i < job->n_aliases; i++)
        if (strlen(job->aliases[i][0]) == len + 2 && !strncmp(job->aliases[i][0], flag, len + 2)) {
            *is_switch = 1, *value = job->aliases[i][2];
            return job->aliases[i][1];
        }
    for (int negated = 0; negated < 2; negated++) {
        const char *n = name + 3 * negated;
        const size_t l = len - 3 * (size_t)negated;
        if (negated && (len <= 3 || strncmp(name, "no-", 3))) break;
        const char *key;
        for (int i = 0; (key = job->option(job->job, i, is_switch)); i++) {
            size_t k = 0;
            while (k < l && key[k] && (key[k] == n[k] || (key[k] == '_' && n[k] == '-'))) k++;
            if (k < l || key[k]) continue;
            if (negated && !*is_switch) return NULL; /* only a switch has its --no- */
            if (negated) *value = "0";
            return key;
        }
    }
    return NULL;
}

/* Sets the job's option for argv[*i] (a flag the command's own table does not have): 0, 1 when it is
 * not the job's either, or CLI_BAD after saying what is wrong. */
static int job_option(const char *cmd, const cli_job_opts *job, int argc, char **argv, int *i) {
    const char *a = argv[*i], *name = a + 2, *eq = strchr(a, '=');
    if (a[1] != '-') return 1;
    const size_t len = eq ? (size_t)(eq - name) : strlen(name);
    int is_switch = 0;
    const char *value;
    const char *key = job_key(job, a, name, len, &is_switch, &value);
    if (!key) return 1;
    if (is_switch && eq) {
        fprintf(stderr, "attncap %s: %.*s takes no value, got '%s'\n", cmd, (int)len + 2, a, a);
        return CLI_BAD;
    }
    if (!is_switch) {
        if (!eq && *i + 1 >= argc) {
            fprintf(stderr, "attncap %s: %s needs a value\n", cmd, a);
            return CLI_BAD;
        }
        value = eq ? eq + 1 : argv[++*i];
    }
    ac_err err;
    if (job->set(job->job, key, is_switch && !value ? "1" : value, &err) == 0) return 0;
    /* as every option says it: the flag as given, not the library's "option 'key'" */
    const char *rest = !strncmp(err.msg, "option '", 8) ? strstr(err.msg + 8, "' ") : NULL;
    if (rest) fprintf(stderr, "attncap %s: %.*s %s\n", cmd, (int)len + 2, a, rest + 2);
    else fprintf(stderr, "attncap %s: %s\n", cmd, err.msg);
    return CLI_BAD;
}

int cli_parse(const char *cmd, int argc, char **argv, const cli_opt *opts, int max_pos, void (*usage)(FILE *)) {
    return cli_parse_job(cmd, argc, argv, opts, max_pos, usage, NULL);
}

int cli_parse_job(const char *cmd, int argc, char **argv, const cli_opt *opts, int max_pos, void (*usage)(FILE *),
                  const cli_job_opts *job) {
    int n_pos = 0, options_done = 0;
    for (int i = 1; i < argc; i++) {
        char *a = argv[i];
        if (options_done || a[0] != '-' || !a[1]) {
            if (max_pos >= 0 && n_pos == max_pos) {
                fprintf(stderr, "attncap %s: unexpected argument '%s' (try --help)\n", cmd, a);
                return CLI_BAD;
            }
            argv[++n_pos] = a; /* n_pos < i: only slots already read are overwritten */
            continue;
        }
        if (!strcmp(a, "--")) {
            options_done = 1;
            continue;
        }
        if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
            usage(stdout);
            return CLI_HELP;
        }
        /* "--name=value" is "--name value" (GNU style); the name is matched without the value */
        char name[64];
        const char *eq = a[1] == '-' ? strchr(a, '=') : NULL, *v = NULL;
        if (eq && (size_t)(eq - a) < sizeof name) {
            memcpy(name, a, (size_t)(eq - a));
            name[eq - a] = 0;
            v = eq + 1;
        } else if (eq) {
            fprintf(stderr, "attncap %s: unknown option '%.*s' (try --help)\n", cmd, (int)(eq - a), a);
            return CLI_BAD;
        }
        const cli_opt *o = find_opt(opts, eq ? name : a);
        if (!o && job) {
            const int rc = job_option(cmd, job, argc, argv, &i);
            if (rc == 0) continue;
            if (rc == CLI_BAD) return CLI_BAD;
        }
        if (!o) {
            unknown_option(cmd, opts, job, eq ? name : a);
            return CLI_BAD;
        }
        if (o->kind == CLI_REMOVED) {
            fprintf(stderr, "attncap %s: %s was removed: %s\n", cmd, o->name, (const char *)o->dst);
            return CLI_BAD;
        }
        if (o->kind == CLI_FLAG || o->kind == CLI_UNSET) {
            if (eq) {
                fprintf(stderr, "attncap %s: %s takes no value, got '%s'\n", cmd, o->name, a);
                return CLI_BAD;
            }
            *(int *)o->dst = o->kind == CLI_FLAG;
            continue;
        }
        if (!eq && i + 1 >= argc) {
            fprintf(stderr, "attncap %s: %s needs a value\n", cmd, a);
            return CLI_BAD;
        }
        if (!eq) v = argv[++i];
        if (o->kind == CLI_STR) *(const char **)o->dst = v;
        else if (set_number(cmd, o, v)) return CLI_BAD;
    }
    return n_pos;
}

const char *cli_precision_name(const char *value) {
    const char *env = getenv("ATTNCAP_PRECISION");
    return value ? value : env && *env ? env : "auto";
}

int cli_check_precision(const char *cmd, const char *value) {
    ac_err err;
    if (ac_captioner_set_precision(NULL, cli_precision_name(value), &err) == 0) return 0;
    fprintf(stderr, "attncap %s: %s: %s\n", cmd, value ? "--precision" : "ATTNCAP_PRECISION", err.msg);
    return -1;
}

int cli_captioner_precision(const char *value, ac_captioner *c, ac_err *err) {
    return ac_captioner_set_precision(c, cli_precision_name(value), err);
}
