/* attncap/detect_draw.h: not part of the stable API; may change in any release (the stable core: attncap.h). */
/* attncap/detect_draw.h: a photo with its detections drawn: each box outlined in its class's colour,
 * its label and score on a filled tab above it (inside the photo when the box touches the top). */
#ifndef ATTNCAP_DETECT_DRAW_H
#define ATTNCAP_DETECT_DRAW_H
#include "attncap/detect.h"
#include "attncap/font.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Draws d onto a copy of photo (out is allocated; free with ac_image_free). labels[i] names class i
 * (n_labels of them); font may be NULL (no text). */
int ac_detections_draw(const ac_image *photo, const ac_detections *d, const char *const *labels, int n_labels,
                       const ac_font *font, ac_image *out, ac_err *err);

#ifdef __cplusplus
}
#endif
#endif
