/* attncap report: the HTML gallery of a caption run without references (report.h, ac_gallery_write):
 * caption --json lines in, DIR/index.html with thumbnails, captions, confidences and sheets out. */
#include <cjson/cJSON.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "attncap/image.h"
#include "attncap/report.h"
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

/* DIR/sheets/NNNNN_sheet.EXT: a copy of the run's sheet (the page stands alone); relative path, or NULL. */
static char *copy_sheet(const char *dir, int i, const char *sheet, ac_err *err) {
    const char *dot = strrchr(sheet, '.');
    char rel[64];
    snprintf(rel, sizeof rel, "sheets/%05d_sheet%s", i + 1, dot && strlen(dot) <= 5 ? dot : ".png");
    char *sub = ac_path_join(dir, "sheets"), *full = ac_path_join(dir, rel), *data = NULL;
    size_t len = 0;
    int ok = sub && full && !ac_mkdirs(sub, err) && !ac_read_file(sheet, (size_t)1 << 30, &data, &len, err) &&
             !ac_write_file_atomic(full, data, len, err);
    free(sub), free(full), free(data);
    return ok ? strdup(rel) : NULL;
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
    const char *res = argv[1];
    ac_err err;
    if (cli_check_writable_dir(out, &err)) {
        fprintf(stderr, "attncap report: --out: %s\n", err.msg);
        return 1;
    }
    FILE *f = fopen(res, "r");
    if (!f) {
        fprintf(stderr, "attncap report: %s: cannot be read\n", res);
        return 1;
    }
    cli_strv photos = {0}, caps = {0}, sheets = {0};
    double *conf = NULL;
    char *line = NULL, **thumbs = NULL, **sheet_rel = NULL;
    size_t cap = 0;
    int rc = 0, lineno = 0, missing = 0;
    while (!rc && getline(&line, &cap, f) >= 0) {
        lineno++;
        if (strspn(line, " \t\r\n") == strlen(line)) continue;
        cJSON *o = cJSON_Parse(line);
        const cJSON *im = cJSON_GetObjectItemCaseSensitive(o, "image"), *c = cJSON_GetObjectItemCaseSensitive(o, "caption"),
                    *cf = cJSON_GetObjectItemCaseSensitive(o, "confidence"), *ov = cJSON_GetObjectItemCaseSensitive(o, "overlays"),
                    *x;
        const char *sheet = "";
        cJSON_ArrayForEach(x, ov) if (cJSON_IsString(x) && strstr(x->valuestring, "/sheet.")) sheet = x->valuestring;
        double *nc = realloc(conf, sizeof *conf * ((size_t)photos.n + 1));
        if (!cJSON_IsString(im) || !cJSON_IsString(c)) {
            fprintf(stderr, "attncap report: %s:%d: not a line of attncap caption --json (no \"image\" and \"caption\")\n", res, lineno);
            rc = 1;
        } else if (!nc || cli_strv_push(&photos, im->valuestring) || cli_strv_push(&caps, c->valuestring) ||
                   cli_strv_push(&sheets, sheet)) {
            fprintf(stderr, "attncap report: out of memory\n");
            rc = 1;
        }
        if (nc) conf = nc;
        if (!rc) conf[photos.n - 1] = cJSON_IsNumber(cf) && cf->valuedouble > 0 ? cf->valuedouble : NAN;
        cJSON_Delete(o);
    }
    free(line);
    fclose(f);
    if (!rc && !photos.n) fprintf(stderr, "attncap report: %s: no captions in it\n", res), rc = 1;
    if (!rc && (!(thumbs = calloc((size_t)photos.n, sizeof *thumbs)) || !(sheet_rel = calloc((size_t)photos.n, sizeof *sheet_rel))))
        fprintf(stderr, "attncap report: out of memory\n"), rc = 1;
    for (int i = 0; !rc && i < photos.n; i++) { /* a photo or sheet gone since the run: its row has none */
        ac_image img = {0};
        if (ac_image_load_min(photos.v[i], 200, 200, &img, &err) == 0) thumbs[i] = ac_report_thumb(out, i, &img, &err);
        if (!thumbs[i]) fprintf(stderr, "attncap report: note: %s\n", err.msg), missing++;
        ac_image_free(&img);
        if (sheets.v[i][0] && !(sheet_rel[i] = copy_sheet(out, i, sheets.v[i], &err)))
            fprintf(stderr, "attncap report: note: %s\n", err.msg), missing++;
    }
    char default_title[600];
    snprintf(default_title, sizeof default_title, "attncap caption: %.500s", res);
    const ac_gallery g = {title ? title : default_title, NULL, photos.n, (const char *const *)photos.v,
                          (const char *const *)caps.v, conf, thumbs, sheet_rel};
    if (!rc && ac_gallery_write(out, &g, &err)) fprintf(stderr, "attncap report: %s\n", err.msg), rc = 1;
    if (!rc && !quiet)
        fprintf(stderr, "attncap report: %s/index.html: %d photos%s\n", out, photos.n, missing ? " (some files missing: see above)" : "");
    for (int i = 0; i < photos.n; i++) {
        if (thumbs) free(thumbs[i]);
        if (sheet_rel) free(sheet_rel[i]);
    }
    free(thumbs), free(sheet_rel), free(conf);
    cli_strv_free(&photos), cli_strv_free(&caps), cli_strv_free(&sheets);
    return rc;
}
