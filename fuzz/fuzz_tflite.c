/* fuzz/fuzz_tflite.c: libFuzzer target for the TFLite reader (flatbuffer offsets, vectors, strings,
 * shapes, quantization, buffers) and, for what it accepts, the engine's planner and one run at the
 * model's own input size. Seeds: tests/fixtures/cnn/{op,bad}_*.tflite. Also compiled into
 * tests/test_fuzz_regress.c (with AC_FUZZ_NO_MAIN) to replay the corpus in the normal suite. */
#include "fuzz_main.h"
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "attncap/cnn.h"
#include "attncap/tflite.h"

static int fuzz_tflite(const uint8_t *data, size_t size) {
    ac_tfl_model *m;
    ac_err err;
    if (ac_tfl_load_mem(data, size, "fuzz.tflite", &m, &err) != 0) {
        if (strchr(err.msg, '\n') || !strstr(err.msg, "fuzz.tflite")) abort(); /* one line naming the file */
        return 0;
    }
    for (int i = 0; i < m->n_tensors; i++)
        if (ac_tfl_find_tensor(m, m->tensors[i].name) < 0) abort();
    ac_cnn *c;
    if (ac_cnn_create(m, NULL, 0, 0, 1, &c, &err) == 0) {
        const ac_tfl_tensor *in = &m->tensors[m->inputs[0]];
        size_t n = (size_t)in->shape[1] * in->shape[2] * in->shape[3];
        int h, w, ch;
        ac_cnn_output_shape(c, &h, &w, &ch);
        size_t on = (size_t)h * w * ch;
        if (n <= (1u << 20) && on <= (1u << 22) && ac_cnn_flops(c) < 1e8) {
            float *x = calloc(n + 1, sizeof *x), *y = calloc(on + 1, sizeof *y);
            if (x && y) ac_cnn_run(c, x, y, &err);
            free(x);
            free(y);
        }
        ac_cnn_free(c);
    } else if (strchr(err.msg, '\n')) {
        abort();
    }
    ac_tfl_free(m);
    return 0;
}

AC_FUZZ_MAIN(fuzz_tflite, "ATTNCAP_MAX_TENSOR_ELEMS", "4000000")
