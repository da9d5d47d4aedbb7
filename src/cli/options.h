/* Command-line options for the subcommands: each command describes its flags in a table and
 * cli_parse fills the variables, so every command checks values and reports mistakes the same way.
 *
 *     int beam = 0, json = 0;
 *     const char *model = NULL;
 *     const cli_opt opts[] = {
 *         OPT_INT("--beam", &beam, 1, 100),
 *         OPT_FLAG("--json", NULL, &json),
 *         OPT_STR("--model", &model),
 *         OPT_END,
 *     };
 *     int n = cli_parse("caption", argc, argv, opts, -1, usage);
 *     if (n < 0) return n == CLI_HELP ? 0 : 2; // usage or one line of error already printed
 *     for (int i = 1; i <= n; i++) ...      // the positional arguments, in order
 */
#ifndef ATTNCAP_CLI_OPTIONS_H
#define ATTNCAP_CLI_OPTIONS_H
#include <stdio.h>

typedef enum {
    CLI_FLAG,  /* int *: set to 1 */
    CLI_UNSET, /* int *: set to 0 (a --no-X that turns off a default) */
    CLI_STR,   /* const char **: the next argument */
    CLI_INT,   /* int *: the next argument, a whole number in [lo, hi] */
    CLI_U64,   /* unsigned long long *: a whole number in [lo, hi] */
    CLI_FLOAT, /* float *: a number in [lo, hi] */
    CLI_REMOVED, /* const char *: a flag no longer taken; given, it is refused with this note on what to use */
} cli_kind;

typedef struct {
    const char *name;  /* "--beam" */
    const char *alias; /* "-q", or NULL */
    cli_kind kind;
    void *dst;
    double lo, hi; /* the accepted range of a number */
} cli_opt;

/* Table entries (all fields spelled out, for -Wmissing-field-initializers). */
#define OPT_STR(name, dst) {(name), NULL, CLI_STR, (dst), 0, 0}
#define OPT_FLAG(name, alias, dst) {(name), (alias), CLI_FLAG, (dst), 0, 0}
#define OPT_UNSET(name, dst) {(name), NULL, CLI_UNSET, (dst), 0, 0}
#define OPT_INT(name, dst, lo, hi) {(name), NULL, CLI_INT, (dst), (lo), (hi)}
#define OPT_U64(name, dst, lo, hi) {(name), NULL, CLI_U64, (dst), (lo), (hi)}
#define OPT_FLOAT(name, dst, lo, hi) {(name), NULL, CLI_FLOAT, (dst), (lo), (hi)}
#define OPT_REMOVED(name, note) {(name), NULL, CLI_REMOVED, (void *)(note), 0, 0}
#define OPT_END {NULL, NULL, CLI_FLAG, NULL, 0, 0}

enum { CLI_HELP = -1, CLI_BAD = -2 };
struct ac_err;

/* Parses argv[1..argc-1] against `opts` (ended by an entry whose name is NULL). A value is the next
 * argument or follows '=' ("--beam 3" or "--beam=3"; a flag given "=value" is a mistake). Arguments that are
 * not options ("-" is one, and everything after "--") are moved, in order, to argv[1..n] and n is
 * returned; more than max_pos of them (max_pos < 0: no limit) is a mistake. Returns CLI_HELP after
 * usage(stdout) for -h/--help, or CLI_BAD after printing one line "attncap CMD: ..." on stderr for
 * an unknown option, a removed one ("attncap CMD: --X was removed: NOTE"), a missing or malformed value, or a
 * number out of range. */
int cli_parse(const char *cmd, int argc, char **argv, const cli_opt *opts, int max_pos, void (*usage)(FILE *));

/* A core job's options (the trainer's, the featurizer's: attncap.h), reached by cli_parse_job: every
 * "--key value" that is not the command's own sets the job's option key ('-' for '_'), a switch
 * "--key" sets "1" and "--no-key" "0"; aliases [n_aliases] map a flag to a key and value ("--load-features"
 * to map_features 0). The job's message for a bad value is printed with the flag given. */
typedef struct {
    const char *(*option)(const void *job, int i, int *is_switch); /* ac_tool_option; the job below */
    int (*set)(void *job, const char *key, const char *value, struct ac_err *err); /* ac_trainer_set */
    void *job;
    const char *const (*aliases)[3]; /* {flag, key, value} */
    int n_aliases;
} cli_job_opts;
/* cli_parse with the job's options beside opts. */
int cli_parse_job(const char *cmd, int argc, char **argv, const cli_opt *opts, int max_pos, void (*usage)(FILE *),
                  const cli_job_opts *job);

/* The one of names[0..n) closest to word by edit distance (typos: a letter wrong, missing, extra or
 * two swapped), if within 1 edit for words of up to 4 bytes, 2 up to 8, else 3; NULL when none is
 * (the "did you mean" of an unknown command or option). */
const char *cli_closest(const char *word, const char *const *names, int n);

/* --precision: the name value gives (NULL: $ATTNCAP_PRECISION, else "auto"), applied to a captioner
 * (ac_captioner_set_precision). -1 with err set for an unknown name, bf16x2 asked of a CPU without AMX,
 * or int8 of an encoder that is not quantized. */
struct ac_captioner;
const char *cli_precision_name(const char *value);
int cli_captioner_precision(const char *value, struct ac_captioner *c, struct ac_err *err);
/* The name --precision (value, or NULL) or $ATTNCAP_PRECISION gives, checked while the command line is
 * read: -1 after one line "attncap CMD: ..." for an unknown one (a mistake on the command line). */
int cli_check_precision(const char *cmd, const char *value);
#define CLI_PRECISION_HELP                                                                             \
    "  --precision P     the CNN's arithmetic: auto (int8 for a model trained on int8 features, else\n" \
    "                    bf16x2 where the CPU has AMX, else f32), f32 (float32: the same bits on\n"  \
    "                    every CPU), bf16x2 (AMX; features within 1e-9 cosine of f32's) or int8 (a\n" \
    "                    quantized encoder on its own integers, as TFLite's reference kernels: the\n" \
    "                    same bits on every CPU; features ~1e-2 cosine from f32's, so a model\n"     \
    "                    trained on the other kind captions slightly worse with them; a model's\n"  \
    "                    detector then multiplies on integers too, its scores ~0.01 from f32's)\n"    \
    "                    (default: $ATTNCAP_PRECISION or auto)\n"

#endif
