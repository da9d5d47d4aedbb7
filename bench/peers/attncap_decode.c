/* attncap_decode.c: our decode + resize of a photo file, for bench/decode_peers.py.
 *
 * Started without arguments, prints "ready"; then for each line on stdin:
 *   run N SIDE MODE PATH   -> "ms W1/C1 ... WN/CN": N timed decode + resize to SIDE x SIDE of PATH's
 *                             bytes (read once, before timing, as the peers do), each as wall-clock
 *                             and CPU (this thread's) milliseconds
 *   save SIDE MODE PATH OUT -> "ok": the SIDE x SIDE RGB result written raw to OUT
 * MODE: "reduced" (ac_image_load_mem_min at SIDE x SIDE, what the captioner does now), "full"
 * (ac_image_load_mem, stb_image's whole photo: the captioner before), "decode" (the reduced decode
 * alone, no resize). A failure prints "error: MESSAGE". */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "attncap/image.h"

static double now_ms(clockid_t clock) {
    struct timespec ts;
    clock_gettime(clock, &ts);
    return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

/* One decode (+ resize unless MODE is "decode") into out (freed by the caller). */
static int once(const char *data, size_t n, const char *path, int side, const char *mode, ac_image *out, ac_err *err) {
    ac_image img;
    const int full = !strcmp(mode, "full");
    if ((full ? ac_image_load_mem(data, n, path, &img, err) : ac_image_load_mem_min(data, n, path, side, side, &img, err)))
        return -1;
    if (!strcmp(mode, "decode")) {
        *out = img;
        return 0;
    }
    int rc = ac_image_resize(&img, side, side, out, err);
    ac_image_free(&img);
    return rc;
}

int main(void) {
    printf("ready\n");
    fflush(stdout);
    char line[8192], mode[32], path[4096], outp[4096];
    int n, side;
    while (fgets(line, sizeof line, stdin)) {
        int is_run = sscanf(line, "run %d %d %31s %4095s", &n, &side, mode, path) == 4;
        int is_save = !is_run && sscanf(line, "save %d %31s %4095s %4095s", &side, mode, path, outp) == 4;
        if (!is_run && !is_save) {
            printf("error: bad command\n");
            fflush(stdout);
            continue;
        }
        char *data;
        size_t len;
        ac_err err;
        ac_image out;
        if (ac_read_file(path, 1u << 30, &data, &len, &err)) {
            printf("error: %s\n", err.msg);
            fflush(stdout);
            continue;
        }
        if (is_save) {
            if (once(data, len, path, side, mode, &out, &err)) {
                printf("error: %s\n", err.msg);
            } else {
                FILE *f = fopen(outp, "wb");
                int ok = f && fwrite(out.px, 1, (size_t)out.w * out.h * 3, f) == (size_t)out.w * out.h * 3;
                if (f) fclose(f);
                printf(ok ? "ok %d %d\n" : "error: cannot write %d %d\n", out.w, out.h);
                ac_image_free(&out);
            }
        } else {
            printf("ms");
            for (int i = 0; i < n; i++) {
                double t0 = now_ms(CLOCK_MONOTONIC), c0 = now_ms(CLOCK_THREAD_CPUTIME_ID);
                if (once(data, len, path, side, mode, &out, &err)) {
                    printf("\nerror: %s", err.msg);
                    break;
                }
                const double c1 = now_ms(CLOCK_THREAD_CPUTIME_ID);
                printf(" %.3f/%.3f", now_ms(CLOCK_MONOTONIC) - t0, c1 - c0);
                ac_image_free(&out);
            }
            printf("\n");
        }
        fflush(stdout);
        free(data);
    }
    return 0;
}
