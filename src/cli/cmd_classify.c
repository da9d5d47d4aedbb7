/* attncap classify: run a TFLite ImageNet classifier on photos and print the top-K labels. */
#include <cjson/cJSON.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "attncap/encoder.h"
#include "attncap/locate.h"
#include "attncap/image.h"
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

/* Labels file: one per line (CR LF tolerated). */
static int read_labels(const char *path, char ***labels, int *n, ac_err *err) {
    char *data;
    size_t len;
    *labels = NULL;
    *n = 0;
    if (ac_read_file(path, 64u << 20, &data, &len, err) < 0) return -1;
    int cap = 0;
    for (char *p = data, *e; p < data + len; p = e + 1) {
        e = memchr(p, '\n', (size_t)(data + len - p));
        if (!e) e = data + len;
        size_t l = (size_t)(e - p);
        if (l && p[l - 1] == '\r') l--;
        if (*n == cap) {
            cap = cap ? cap * 2 : 1024;
            char **nl = realloc(*labels, (size_t)cap * sizeof *nl);
            if (!nl) break;
            *labels = nl;
        }
        (*labels)[(*n)++] = strndup(p, l);
    }
    free(data);
    return 0;
}

static char *data_path(const char *rel) {
    char *d = ac_find_data_dir();
    if (!d) return NULL;
    char *p = ac_path_join(d, rel);
    free(d);
    return p;
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
    char *enc_def = enc_path ? NULL : data_path("encoders/mobilenet_v2_1.0_224_quant.tflite");
    char *lab_def = lab_path ? NULL : data_path("encoders/imagenet_labels.txt");
    if (!enc_path) enc_path = enc_def;
    if (!lab_path) lab_path = lab_def;
    int rc = 0;
    ac_err err;
    ac_encoder enc;
    char **labels = NULL;
    int n_labels = 0;
    float *probs = NULL;
    int *idx = NULL;
    if (!enc_path || !lab_path) {
        fprintf(stderr, "attncap classify: no --%s given and no data directory found (set ATTNCAP_DATA)\n",
                enc_path ? "labels" : "encoder");
        free(enc_def);
        free(lab_def);
        return 2;
    }
    if (read_labels(lab_path, &labels, &n_labels, &err) < 0 || ac_classifier_open(enc_path, threads, &enc, &err) < 0) {
        fprintf(stderr, "attncap classify: %s%s\n", err.msg, cli_hint(&err));
        rc = 1;
        goto done;
    }
    if (cli_set_precision(precision, &enc, &err) < 0) {
        fprintf(stderr, "attncap classify: %s\n", err.msg);
        ac_encoder_close(&enc);
        rc = 1;
        goto done;
    }
    int n_cls = enc.grid_h * enc.grid_w * enc.dim;
    if (top > n_cls) top = n_cls;
    probs = malloc((size_t)n_cls * sizeof *probs);
    idx = malloc((size_t)top * sizeof *idx);
    if (!probs || !idx) {
        fprintf(stderr, "attncap classify: out of memory\n");
        rc = 1;
        goto done_enc;
    }
    int min_w, min_h; /* each photo read only as large as the classifier's input needs */
    ac_encoder_min_photo(&enc, &min_w, &min_h);
    for (int k = 0; k < n_img; k++) {
        ac_image img;
        if (ac_image_load_min(imgs[k], min_w, min_h, &img, &err) < 0 || ac_encoder_encode(&enc, &img, probs, &err) < 0) {
            if (img.px) ac_image_free(&img);
            fflush(stdout);
            fprintf(stderr, "attncap classify: %s%s\n", err.msg, cli_hint(&err));
            rc = 1;
            continue;
        }
        ac_image_free(&img);
        for (int j = 0; j < top; j++) { /* partial selection: K is small */
            int best = -1;
            for (int c = 0; c < n_cls; c++) {
                int taken = 0;
                for (int q = 0; q < j && !taken; q++) taken = idx[q] == c;
                if (!taken && (best < 0 || probs[c] > probs[best])) best = c;
            }
            idx[j] = best;
        }
        if (json) {
            cJSON *o = cJSON_CreateObject(), *arr = cJSON_CreateArray();
            cJSON_AddStringToObject(o, "image", imgs[k]);
            for (int j = 0; j < top; j++) {
                cJSON *e = cJSON_CreateObject();
                cJSON_AddNumberToObject(e, "index", idx[j]);
                cJSON_AddStringToObject(e, "label", idx[j] < n_labels ? labels[idx[j]] : "");
                cJSON_AddNumberToObject(e, "prob", (double)(float)probs[idx[j]]);
                cJSON_AddItemToArray(arr, e);
            }
            cJSON_AddItemToObject(o, "top", arr);
            char *s = cJSON_PrintUnformatted(o);
            if (s) printf("%s\n", s);
            free(s);
            cJSON_Delete(o);
        } else {
            printf("%s\n", imgs[k]);
            for (int j = 0; j < top; j++)
                printf("  %.4f  %4d  %s\n", probs[idx[j]], idx[j], idx[j] < n_labels ? labels[idx[j]] : "?");
        }
        fflush(stdout);
    }
done_enc:
    ac_encoder_close(&enc);
done:
    for (int i = 0; i < n_labels; i++) free(labels[i]);
    free(labels);
    free(probs);
    free(idx);
    free(enc_def);
    free(lab_def);
    return rc;
}
