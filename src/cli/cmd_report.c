/* attncap report: the HTML gallery of a caption run without references, as the core's
 * ac_report_captions writes it: caption --json lines in, DIR/index.html with thumbnails, captions,
 * confidences and sheets out. */
#include <stdio.h>

#include "attncap/attncap.h"
#include "commands.h"
#include "inputs.h"
#include "options.h"

static void usage(FILE *f) {
    fprintf(f,
            "usage: attncap report CAPTIONS.jsonl --out DIR [--title T]\n\n"
            "A page for a caption run without references: DIR/index.html lists each photo of CAPTIONS.jsonl\n"
            "(the lines of attncap caption --json) with its thumbnail (DIR/thumbs/), caption, confidence and,\n"
            "when the run wrote overlays, its attention sheet (copied to DIR/sheets/), sortable and searchable.\n"
            "For captions with references, attncap eval --report scores them too.\n\n"
            "  --out DIR        the page's directory (made if missing)\n"
            "  --title T        the page's title (default: attncap caption: CAPTIONS.jsonl)\n"
            "  --quiet          no summary line\n");
}

static void note(const char *line, void *user) {
    fprintf(stderr, "attncap report: note: %s\n", line);
    ++*(int *)user;
}

int cmd_report(int argc, char **argv) {
    const char *out = NULL, *title = NULL;
    int quiet = 0;
    const cli_opt opts[] = {OPT_STR("--out", &out), OPT_STR("--title", &title), OPT_FLAG("--quiet", "-q", &quiet), OPT_END};
    const int n_args = cli_parse("report", argc, argv, opts, 1, usage);
    if (n_args < 0) return n_args == CLI_HELP ? 0 : 2;
    if (n_args != 1 || !out) {
        fprintf(stderr, "attncap report: give CAPTIONS.jsonl and --out DIR (try --help)\n");
        return 2;
    }
    ac_err err;
    if (cli_check_writable_dir(out, &err)) {
        fprintf(stderr, "attncap report: --out: %s\n", err.msg);
        return 1;
    }
    int photos = 0, missing = 0;
    if (ac_report_captions(argv[1], out, title, note, &missing, &photos, &err)) {
        fprintf(stderr, "attncap report: %s\n", err.msg);
        return 1;
    }
    if (!quiet)
        fprintf(stderr, "attncap report: %s/index.html: %d photos%s\n", out, photos, missing ? " (some files missing: see above)" : "");
    return 0;
}
