/* The training plot's legend never covers a curve (issue #32, 5): the same curves drawn with two
 * different series names differ only in the legend's text, and no pixel a curve paints (its colour
 * in either drawing) is among those that differ. The curve runs along the top left of the plot area,
 * where a legend inside it would sit. */
#include "attncap/font.h"
#include "attncap/image.h"
#include "test.h"
#include "train_internal.h"

#include <stdint.h>
#include <unistd.h>

/* a pixel of the series colour (0xd62728) or a blend of it with white or grey: red well above blue */
static int reddish(const uint8_t *p) { return p[0] > 150 && p[0] - p[2] > 60; }

static int draw(const char *path, const char *name, ac_image *img) {
    enum { N = 21 };
    double x[N], y[N];
    for (int i = 0; i < N; i++) x[i] = i, y[i] = i == 0 ? 10 : i == N - 1 ? 0 : 9.72; /* flat near the top */
    const ac_plot_series s = {name, y, 0, 0xd62728};
    ac_err e;
    if (ac_plot_png(path, "training", "epoch", N, x, &s, 1, &e)) return printf("  %s\n", e.msg), -1;
    return ac_image_load(path, img, &e) ? printf("  %s\n", e.msg), -1 : 0;
}

static void test_legend_off_the_curves(void) {
    ac_font *f;
    ac_err e;
    if (ac_font_load(NULL, &f, &e)) SKIP("no font (fonts-dejavu-core): the plot has no text");
    ac_font_free(f);
    char pa[64], pb[64];
    snprintf(pa, sizeof pa, "/tmp/test_plot_%d_a.png", (int)getpid());
    snprintf(pb, sizeof pb, "/tmp/test_plot_%d_b.png", (int)getpid());
    ac_image a = {0}, b = {0};
    const int ok = draw(pa, "train loss", &a) == 0 && draw(pb, "WWWWWWWWWWWWWWWWWWWW MMMMMMMMMMMMMMMM", &b) == 0;
    unlink(pa), unlink(pb);
    CHECK(ok);
    CHECK(a.w == b.w && a.h == b.h);
    long differ = 0, on_curve = 0, red = 0;
    for (long i = 0; i < (long)a.w * a.h; i++) {
        const uint8_t *p = a.px + 3 * i, *q = b.px + 3 * i;
        red += reddish(p);
        if (!memcmp(p, q, 3)) continue;
        differ++;
        on_curve += reddish(p) || reddish(q);
    }
    ac_image_free(&a), ac_image_free(&b);
    CHECKF(differ > 100, "the names changed only %ld pixels: is there a legend?", differ);
    CHECKF(red > 1000, "only %ld curve pixels", red);
    CHECKF(on_curve == 0, "%ld pixels of the curve change with the legend's text (of %ld that differ)", on_curve, differ);
}

int main(void) {
    RUN(test_legend_off_the_curves);
    return TEST_EXIT();
}
