/* fuzz/fuzz_image.c: libFuzzer target for the image path: format sniffing, header size checks, EXIF
 * orientation, libjpeg-turbo's decode (whole, and reduced by a size hint from the last byte),
 * stb_image (PNG, BMP, GIF, and the JPEGs turbo declines), libwebp and libtiff decoding, both
 * resizers and the horizontal flip, under our pixel limit.
 * Also compiled into tests/test_fuzz_regress.c (AC_FUZZ_NO_MAIN) to replay corpus and crashes. */
#include "fuzz_main.h"
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "attncap/image.h"

static int fuzz_image(const uint8_t *data, size_t size) {
    ac_image img, r;
    ac_err err;
    /* the reduced decode: any JPEG of more than 2x2 pixels takes it at a hint of 1 */
    const int hint = size ? 1 + data[size - 1] % 64 : 0;
    if (ac_image_load_mem_min(data, size, "fuzz.img", hint, hint, &img, &err) == 0) {
        if (img.w <= 0 || img.h <= 0 || !img.px) abort();
        ac_image_free(&img);
    } else if (strchr(err.msg, '\n')) {
        abort();
    }
    if (ac_image_load_mem(data, size, "fuzz.img", &img, &err) != 0) {
        if (strchr(err.msg, '\n')) abort();
        return 0;
    }
    if (img.w <= 0 || img.h <= 0 || !img.px) abort();
    /* Shrink (antialiased), enlarge a little (bilinear), both directions at once. */
    if (ac_image_resize(&img, img.w / 3 + 1, img.h / 2 + 1, &r, &err) == 0) ac_image_free(&r);
    if (ac_image_resize_bilinear(&img, 17, img.h > 64 ? 64 : img.h + 1, &r, &err) == 0) ac_image_free(&r);
    ac_image_flip_h(&img);
    if ((size_t)img.w * img.h <= 4096) {
        float out[4096 * 3];
        ac_image_to_float(&img, 127.5f, 1 / 127.5f, out);
    }
    ac_image_free(&img);
    return 0;
}

AC_FUZZ_MAIN(fuzz_image, "ATTNCAP_MAX_IMAGE_PIXELS", "1000000") /* keep each exec small */
