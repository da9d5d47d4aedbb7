/* attncap info: lists a TFLite model's inputs, outputs, ops and tensors (to choose --layer). */
#include <stdio.h>
#include <string.h>

#include "attncap/tflite.h"
#include "commands.h"

static void usage(FILE *f) {
    fprintf(f, "usage: attncap info [--ops|--tensors] MODEL.tflite\n\n"
               "Prints the model's inputs and outputs, its operators (with strides, padding and fused\n"
               "activation) and its tensors (shape, type, quantization). A tensor name can be passed to\n"
               "`attncap features --layer NAME`.\n\n"
               "  --ops       only the operators\n"
               "  --tensors   only the tensors\n");
}

static void print_shape(const ac_tfl_tensor *t) {
    printf("[");
    for (int d = 0; d < t->ndim; d++) printf("%s%d", d ? "," : "", t->shape[d]);
    printf("]");
}

static void print_tensor(const ac_tfl_model *m, int i) {
    const ac_tfl_tensor *t = &m->tensors[i];
    printf("  %4d %-8s ", i, ac_tfl_typename(t->type));
    print_shape(t);
    printf(" %s", t->name);
    if (t->n_quant == 1) printf("  q: scale=%g zero_point=%lld", t->scale[0], (long long)t->zero_point[0]);
    else if (t->n_quant > 1) printf("  q: per-channel (%d scales, dim %d)", t->n_quant, t->quant_dim);
    if (t->data) printf("  const");
    printf("\n");
}

int cmd_info(int argc, char **argv) {
    const char *path = NULL;
    int ops = 1, tensors = 1;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h")) {
            usage(stdout);
            return 0;
        } else if (!strcmp(argv[i], "--ops")) tensors = 0;
        else if (!strcmp(argv[i], "--tensors")) ops = 0;
        else if (argv[i][0] == '-' && argv[i][1]) {
            fprintf(stderr, "attncap info: unknown option '%s' (try --help)\n", argv[i]);
            return 2;
        } else if (path) {
            fprintf(stderr, "attncap info: one model at a time (got '%s' and '%s')\n", path, argv[i]);
            return 2;
        } else path = argv[i];
    }
    if (!path) {
        fprintf(stderr, "attncap info: missing MODEL.tflite (try --help)\n");
        return 2;
    }
    ac_err err;
    ac_tfl_model *m;
    if (ac_tfl_load(path, &m, &err) < 0) {
        fprintf(stderr, "attncap info: %s\n", err.msg);
        return 1;
    }
    printf("%s: %d operators, %d tensors\n", path, m->n_ops, m->n_tensors);
    printf("inputs:\n");
    for (int i = 0; i < m->n_inputs; i++) print_tensor(m, m->inputs[i]);
    printf("outputs:\n");
    for (int i = 0; i < m->n_outputs; i++) print_tensor(m, m->outputs[i]);
    static const char *act[] = {"", " relu", " relu_n1_to_1", " relu6", " tanh", " sign_bit"};
    if (ops) {
        printf("operators:\n");
        for (int k = 0; k < m->n_ops; k++) {
            const ac_tfl_op *op = &m->ops[k];
            printf("  %4d %-18s", k, op->opname);
            if (op->opcode == 3 || op->opcode == 4 || op->opcode == 1 || op->opcode == 17) {
                printf(" %s stride %dx%d", op->padding ? "VALID" : "SAME", op->stride_h, op->stride_w);
                if (op->opcode == 1 || op->opcode == 17) printf(" filter %dx%d", op->filter_h, op->filter_w);
                if (op->dilation_h != 1 || op->dilation_w != 1) printf(" dilation %dx%d", op->dilation_h, op->dilation_w);
                if (op->opcode == 4 && op->depth_multiplier != 1) printf(" multiplier %d", op->depth_multiplier);
            }
            if (op->activation > 0 && op->activation < 6) printf("%s", act[op->activation]);
            printf("  ->");
            for (int j = 0; j < op->n_out; j++) {
                int o = op->outputs[j];
                if (o < 0) continue;
                printf(" ");
                print_shape(&m->tensors[o]);
                printf(" %s", m->tensors[o].name);
            }
            printf("\n");
        }
    }
    if (tensors) {
        printf("tensors:\n");
        for (int i = 0; i < m->n_tensors; i++) print_tensor(m, i);
    }
    ac_tfl_free(m);
    return 0;
}
