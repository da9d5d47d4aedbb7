/* attncap/detect.h: not part of the stable API; may change in any release (the stable core: attncap.h). */
/* attncap/detect.h: a COCO object detector (YOLOX-nano as a TFLite graph, run by our engine, cnn.h)
 * that finds boxes in a photo: what the captioner attends to beside the grid cells, and the objects
 * whose names it may copy.
 *
 * The graph takes a 1 x S x S x 3 float input (S = 416 for YOLOX-nano): the photo letterboxed
 * (scaled by r = min(S / w, S / h) to round(w r) x round(h r) with plain bilinear resampling, placed
 * at the top-left, the rest filled with 114), channels in BGR order, values 0..255. Being fully
 * convolutional, it runs here at the letterbox's own aspect rounded up to whole strides (32): less
 * grey to look at (ac_detector_input_dims). Its output is N x (5 + K) already decoded: per anchor the box centre x, y, width, height in input pixels, the
 * objectness, then K class probabilities. A detection's score is objectness x class probability;
 * boxes of one class whose IoU with a higher-scored box of that class exceeds the NMS threshold are
 * dropped (greedy non-maximum suppression per class, as YOLOX's own demo). Boxes come back in the
 * photo's pixels (divided by r, clipped to the photo), highest score first. */
#ifndef ATTNCAP_DETECT_H
#define ATTNCAP_DETECT_H
#include "attncap/cnn.h"
#include "attncap/common.h"
#include "attncap/image.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct ac_detection {
    float x0, y0, x1, y1; /* the box in the photo's pixels, x0 <= x1, y0 <= y1 */
    float score;          /* objectness x class probability, 0..1 */
    int label;            /* class index, 0 .. ac_detector_labels() - 1 */
} ac_detection;

typedef struct ac_detections {
    int n;
    ac_detection *items; /* n detections, highest score first; owned, ac_detections_free */
    int width, height;   /* the photo the boxes are in */
} ac_detections;

/* What ac_detector_detect keeps: detections scored at least min_score after NMS at nms_iou, at most
 * max_detections of them. ac_detect_options_default(): min_score 0.3, nms_iou 0.45, 100. */
typedef struct ac_detect_options {
    float min_score;
    float nms_iou;
    int max_detections;
} ac_detect_options;
ac_detect_options ac_detect_options_default(void);

/* ac_detector_open, ac_detector_close, ac_detector_labels, ac_detector_label: attncap.h (the core). The
 * graph's output must be N x (5 + K) with K the number of labels. */
int ac_detector_input_size(const ac_detector *det); /* S */
/* What the core's ac_detect_* calls keep: the defaults with the min_score det was opened with. */
ac_detect_options ac_detector_options(const ac_detector *det);
/* The label's index, or -1. */
int ac_detector_find_label(const ac_detector *det, const char *name);
/* The arithmetic of its convolutions: f32 (the default: the same bits on every CPU) or int8, the
 * products on integers (each filter per channel and each input per run quantized to 8 bits, cnn_q8.c):
 * faster, its scores ~0.01 from float32's. AUTO and BF16X2 (whose split is for quantized filters) are f32.
 * The current one: ac_detector_precision. The core API's ac_detector_set_precision takes the name. */
int ac_detector_use_precision(ac_detector *det, ac_precision p, ac_err *err);
ac_precision ac_detector_precision(const ac_detector *det);

/* Detects objects in img (NULL opts: the defaults). out is filled (free it with ac_detections_free). */
int ac_detector_detect(ac_detector *det, const ac_image *img, const ac_detect_options *opts, ac_detections *out,
                       ac_err *err);
void ac_detections_free(ac_detections *d);

/* The steps of ac_detector_detect, for tests and tools. ac_detector_input_dims: the input a photo of
 * w x h is fed as: its letterbox (scaled by r = min(S / w, S / h) to round(w r) x round(h r), top-left)
 * on 114s rounded up to whole strides of the graph's coarsest level (a 640 x 480 photo: 416 x 320 of
 * YOLOX-nano's S = 416, three quarters of the square's work; the graph is fully convolutional and its
 * anchors keep their meaning), or S x S for a graph without levels (ac_detector_levels 0).
 * ac_detector_letterbox writes that input (in_h*in_w*3 floats) for any in_h, in_w at least the
 * letterbox's and returns r through *scale. ac_detector_run_raw runs the graph on an in_h x in_w input
 * (S x S for a graph without levels) and returns its output decoded as the graph decodes it,
 * *n_anchors rows of 5 + K floats (owned by the detector, valid until the next call). ac_detector_decode
 * turns raw output into detections for a photo of w x h letterboxed with scale r; an output that is
 * no detector's (a score reaching min_score above 1, a negative objectness, a box that is not finite: a
 * graph without its sigmoids) is an error, not boxes. */
void ac_detector_input_dims(const ac_detector *det, int w, int h, int *in_h, int *in_w);
int ac_detector_letterbox(const ac_detector *det, const ac_image *img, int in_h, int in_w, float *input, float *scale,
                          ac_err *err);
int ac_detector_run_raw(ac_detector *det, const float *input, int in_h, int in_w, const float **raw, int *n_anchors,
                        ac_err *err);
/* How many head levels the plan stops at, decoding them itself (detector.c; 3 for YOLOX-nano), or 0:
 * the graph runs whole at S x S, its own decoding included. */
int ac_detector_levels(const ac_detector *det);
int ac_detector_decode(const float *raw, int n_anchors, int n_labels, float scale, int w, int h,
                       const ac_detect_options *opts, ac_detections *out, ac_err *err);

/* Intersection over union of two boxes (0 when either is empty). */
float ac_box_iou(const ac_detection *a, const ac_detection *b);

#ifdef __cplusplus
}
#endif
#endif
