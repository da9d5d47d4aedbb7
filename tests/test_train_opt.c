/* The optimizer step of attncap train (src/train/train_opt.c) against PyTorch: torch.optim.Adam with L2
 * weight decay, clip_grad_norm_ and the --ema weight average, over 7 steps (some clipped), for 1
 * and 3 threads (fixture: tools/make_adam_fixture.py). */
#include <cjson/cJSON.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "attncap/common.h"
#include "train_internal.h"
#include "test.h"

static int floats(const cJSON *j, const char *key, int index, float *out, int n) {
    const cJSON *a = cJSON_GetObjectItemCaseSensitive(j, key);
    if (index >= 0) a = cJSON_GetArrayItem(a, index);
    if (cJSON_GetArraySize(a) != n) return -1;
    for (int i = 0; i < n; i++) out[i] = (float)cJSON_GetArrayItem(a, i)->valuedouble;
    return 0;
}

static double num(const cJSON *j, const char *key) { return cJSON_GetObjectItemCaseSensitive(j, key)->valuedouble; }

static void run_adam(int threads) {
    const char *path = test_fixture("adam/adam.json");
    char *text;
    size_t len;
    ac_err e;
    CHECKF(ac_read_file(path, 1u << 20, &text, &len, &e) == 0, "%s", e.msg);
    cJSON *j = cJSON_Parse(text);
    free(text);
    CHECK(j);
    const int n = (int)num(j, "n"), steps = (int)num(j, "steps");
    const float D = (float)num(j, "ema_decay");
    float *buf = calloc((size_t)n * 9, sizeof(float));
    float *p = buf, *g = p + n, *m = g + n, *v = m + n, *ema = v + n, *rp = ema + n, *rm = rp + n, *rv = rm + n,
          *rema = rv + n;
    int ok = floats(j, "p0", -1, p, n) == 0 && floats(j, "p", -1, rp, n) == 0 && floats(j, "m", -1, rm, n) == 0 &&
             floats(j, "v", -1, rv, n) == 0 && floats(j, "ema", -1, rema, n) == 0;
    memcpy(ema, p, sizeof(float) * (size_t)n);
    double worst_norm = 0;
    for (int t = 0; ok && t < steps; t++) {
        ok = floats(j, "grads", t, g, n) == 0;
        const float d = fminf(D, (float)((1.0 + t) / (10.0 + t))); /* as in train.c */
        double norm = ac_clip_and_adam(p, g, m, v, ema, d, (size_t)n, (float)num(j, "clip"), num(j, "lr"), t + 1,
                                       (float)num(j, "wd"), threads);
        double ref = cJSON_GetArrayItem(cJSON_GetObjectItemCaseSensitive(j, "norms"), t)->valuedouble;
        worst_norm = fmax(worst_norm, fabs(norm - ref) / ref);
    }
    cJSON_Delete(j);
    if (!ok) free(buf);
    CHECK(ok);
    /* Errors relative to each array's largest value: the parameters moved by about lr per step (0.01),
     * so 2e-6 of their scale (~1) is ~1/300 of one step; float32 rounding over 7 steps gives ~5e-7. */
    double worst[4] = {0};
    const float *got[4] = {p, m, v, ema}, *want[4] = {rp, rm, rv, rema};
    for (int k = 0; k < 4; k++) {
        double scale = 0;
        for (int i = 0; i < n; i++) scale = fmax(scale, fabs(want[k][i]));
        for (int i = 0; i < n; i++) worst[k] = fmax(worst[k], fabs(got[k][i] - want[k][i]) / scale);
    }
    free(buf);
    CHECK(worst_norm < 1e-5);
    CHECKF(worst[0] < 2e-6 && worst[1] < 1e-5 && worst[2] < 1e-5 && worst[3] < 2e-6,
           "errors relative to the largest value: params %.2g, m %.2g, v %.2g, ema %.2g", worst[0], worst[1],
           worst[2], worst[3]);
}

static void test_adam_ema_matches_torch_1_thread(void) { run_adam(1); }
static void test_adam_ema_matches_torch_3_threads(void) { run_adam(3); }

int main(void) {
    RUN(test_adam_ema_matches_torch_1_thread);
    RUN(test_adam_ema_matches_torch_3_threads);
    return TEST_EXIT();
}
