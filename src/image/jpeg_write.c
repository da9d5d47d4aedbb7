/* jpeg_write.c: RGB images as baseline JPEGs through libturbojpeg into an atomic file (png.h). */
#include <stdlib.h>
#include <turbojpeg.h>

#include "attncap/png.h"

int ac_jpeg_write(const char *path, const ac_image *img, int quality, ac_err *err) {
    if (quality < 1 || quality > 100) return ac_errf(err, "%s: JPEG quality %d out of 1..100", path, quality);
    tjhandle tj = tjInitCompress();
    if (!tj) return ac_errf(err, "%s: out of memory writing JPEG", path);
    unsigned char *buf = NULL;
    unsigned long size = 0;
    if (tjCompress2(tj, img->px, img->w, 0, img->h, TJPF_RGB, &buf, &size, TJSAMP_420, quality, TJFLAG_ACCURATEDCT)) {
        const int rc = ac_errf(err, "%s: libturbojpeg failed to encode the image: %s", path, tjGetErrorStr2(tj));
        tjFree(buf);
        tjDestroy(tj);
        return rc;
    }
    tjDestroy(tj);
    ac_atomic_file af;
    int rc = ac_atomic_open(&af, path, err);
    if (!rc && ac_atomic_write(&af, buf, size, err)) {
        ac_atomic_abort(&af);
        rc = -1;
    } else if (!rc) rc = ac_atomic_commit(&af, err);
    tjFree(buf);
    return rc;
}
