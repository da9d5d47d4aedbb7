/* attncap classify: run a TFLite ImageNet classifier on photos and print the top-K labels (the core
 * API's ac_classifier). */
#include <cjson/cJSON.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "attncap/attncap.h"
#include "commands.h"
#include "messages.h"
#include "options.h"

static void usage(FILE *f) {
    fprintf(f, "usage: attncap classify [--encoder M.tflite] [--labels L.txt] [--top K] [--json] [--threads N] IMAGE...\n\n"
               "Runs a TFLite ImageNet classifier (in float32, with its dequantized weights) on each photo,\n"
               "squashed to the model's input size, and prints the K most probable labels.\n\n"
               "  --encoder M.tflite  the model (default: <data>/encoders/mobilenet_v2_1.0_224_quant.tflite)\n"
               "  --labels L.txt      one label per line, line i = class i (default: <data>/encoders/imagenet_labels.txt)\n"
               "  --top K             labels per photo (default 5)\n"
               "  --json              one JSON object per line: {\"image\": PATH, \"top\": [{\"index\": I, \"label\": L, \"prob\": P}, ...]}\n"
               "  --threads N         threads (default: $ATTNCAP_THREADS or all cores)\n"
               CLI_PRECISION_HELP "\n"
               "<data> is $ATTNCAP_DATA or ../shared. A photo that cannot be read gets one error line on stderr;\n"
               "the others are still classified and the exit code is 1.\n");
}

int cmd_classify(int argc, char **argv) {
    const char *precision = NULL;
    const char *enc_path = NULL, *lab_path = NULL;
    int top = 5, json = 0, threads = 0;
    const cli_opt opts[] = {
        OPT_STR("--encoder", &enc_path),
        OPT_STR("--labels", &lab_path),
        {"--top", "-k", CLI_INT, &top, 1, 100000},
        OPT_INT("--threads", &threads, 1, 256), OPT_STR("--precision", &precision),
        OPT_FLAG("--json", NULL, &json),
        OPT_END,
    };
    const int n_img = cli_parse("classify", argc, argv, opts, -1, usage);
    if (n_img < 0) return n_img == CLI_HELP ? 0 : 2;
    if (cli_check_precision("classify", precision) < 0) return 2;
    char **imgs = argv + 1;
    if (n_img == 0) {
        fprintf(stderr, "attncap classify: no image given (try --help)\n");
        return 2;
    }
    int rc = 0;
    ac_err err;
    ac_classifier *cl = NULL;
    if (ac_classifier_open(enc_path, lab_path, threads, &cl, &err) < 0) {
        if (err.code == AC_ERR_NO_ENCODER && (!enc_path || !lab_path)) { /* no data directory for a default */
            fprintf(stderr, "attncap classify: no --%s given and no data directory found (set ATTNCAP_DATA)\n",
                    enc_path ? "labels" : "encoder");
            return 2;
        }
        fprintf(stderr, "attncap classify: %s%s\n", err.msg, cli_hint(&err));
        return 1;
    }
    if (ac_classifier_set_precision(cl, cli_precision_name(precision), &err) < 0) {
        fprintf(stderr, "attncap classify: %s\n", err.msg);
        ac_classifier_close(cl);
        return 1;
    }
    for (int k = 0; k < n_img; k++) {
        ac_classify_result *r;
        const ac_input in = {imgs[k], NULL, 0, NULL, 0, 0};
        if (ac_classify(cl, &in, top, &r, &err) < 0) {
            fflush(stdout);
            fprintf(stderr, "attncap classify: %s%s\n", err.msg, cli_hint(&err));
            rc = 1;
            continue;
        }
        if (json) {
            cJSON *o = cJSON_CreateObject(), *arr = cJSON_CreateArray();
            cJSON_AddStringToObject(o, "image", imgs[k]);
            for (int j = 0; j < r->n_top; j++) {
                const char *label = ac_classifier_label(cl, r->top[j]);
                cJSON *e = cJSON_CreateObject();
                cJSON_AddNumberToObject(e, "index", r->top[j]);
                cJSON_AddStringToObject(e, "label", label ? label : "");
                cJSON_AddNumberToObject(e, "prob", (double)r->probs[r->top[j]]);
                cJSON_AddItemToArray(arr, e);
            }
            cJSON_AddItemToObject(o, "top", arr);
            char *s = cJSON_PrintUnformatted(o);
            if (s) printf("%s\n", s);
            free(s);
            cJSON_Delete(o);
        } else {
            printf("%s\n", imgs[k]);
            for (int j = 0; j < r->n_top; j++) {
                const char *label = ac_classifier_label(cl, r->top[j]);
                printf("  %.4f  %4d  %s\n", r->probs[r->top[j]], r->top[j], label ? label : "?");
            }
        }
        fflush(stdout);
        ac_classify_result_free(r);
    }
    ac_classifier_close(cl);
    return rc;
}
