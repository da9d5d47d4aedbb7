/* attncap/encoder.h: not part of the stable API; may change in any release (the stable core: attncap.h). */
/* attncap/encoder.h: photo -> annotation vectors (and ImageNet class probabilities) on the engine of
 * cnn.h; and the encoder's identity, the JSON a feature cache and a model record of the encoder they
 * were made with (written, parsed and compared only by encoder_id.c). */
#ifndef ATTNCAP_ENCODER_H
#define ATTNCAP_ENCODER_H
#include <stddef.h>

#include "attncap/cnn.h"
#include "attncap/common.h"
#include "attncap/image.h"
#include "attncap/tflite.h"

#ifdef __cplusplus
extern "C" {
#endif

/* How to turn pixels into the encoder's input: real = (pixel - mean) * scale. For uint8 models
 * taken from the input tensor's quantization (real = (q - zero_point) * scale). */
typedef struct ac_input_norm {
    float mean, scale;
} ac_input_norm;
ac_input_norm ac_tfl_input_norm(const ac_tfl_model *model);

/* How a photo becomes the encoder's input: the policy the training photos were prepared with,
 * recorded in the encoder identity ("resize"), set once on the encoder (ac_encoder_set_resize) and
 * applied in one place, ac_resize_photo. The first two squash the photo to size x size (aspect not
 * kept); AC_RESIZE_ASPECT keeps it. */
typedef enum ac_resize {
    AC_RESIZE_ANTIALIASED = 0, /* ac_image_resize (Pillow's BILINEAR): what `attncap features` does */
    AC_RESIZE_BILINEAR,        /* ac_image_resize_bilinear: plain, for references computed that way */
    /* Aspect kept: antialiased (as AC_RESIZE_ANTIALIASED) to the long side at size and the short side
     * at the nearest multiple of the stride (size / grid: 32 for MobileNetV2), at least one stride. The
     * CNN runs on that shape (it is fully convolutional) and gives the photo its own gh x gw grid (14 x
     * 10 for a 4:3 photo at 448), which goes first in the grid_h x grid_w annotation vectors, row-major,
     * the rest zero padding that the decoder masks out (decoder.h: masks). A square photo is the
     * squashed one. Needs a square grid and size a multiple of it. */
    AC_RESIZE_ASPECT,
} ac_resize;

/* Encoder = model + plan + preprocessing. */
typedef struct ac_encoder {
    ac_tfl_model *model;
    ac_cnn *cnn;
    int size;                 /* input side, e.g. 224 or 448 */
    char *layer;              /* output tensor name */
    ac_input_norm norm;
    int grid_h, grid_w, dim;  /* L = grid_h * grid_w annotation vectors of dim floats */
    char sha256[65];          /* of the .tflite file: the encoder's identity */
    char *path;
    ac_resize resize;         /* AC_RESIZE_ANTIALIASED after opening; a model's record may say otherwise
                                 (set it with ac_encoder_set_resize) */
    int threads;              /* as opened (0 = default): the plans of other shapes get as many */
    struct ac_encoder_shapes *shapes; /* AC_RESIZE_ASPECT: plans of the other input shapes, made on first
                                 use and kept (a few, the least recently used replaced); NULL until then */
} ac_encoder;
/* layer NULL = default (the last conv layer before pooling; for MobileNetV2 "MobilenetV2/Conv_1/Relu6").
 * A layer name matches a tensor's full name or the first ';'-separated part of it (TFLite joins the
 * names of fused ops). size 0 = the model's native input size. threads 0 = default. */
int ac_encoder_open(const char *tflite_path, const char *layer, int size, int threads, ac_encoder *enc, ac_err *err);
/* photo -> size x size by a squashing policy (AC_RESIZE_ASPECT: as AC_RESIZE_ANTIALIASED). */
int ac_resize_squash(const ac_image *photo, int size, ac_resize policy, ac_image *square, ac_err *err);
/* The w x h of the input a photo of w x h becomes under the policy, at size and stride (AC_RESIZE_ASPECT's
 * short side: a multiple of it): size x size for the squashing ones. */
void ac_resize_dims(int w, int h, int size, int stride, ac_resize policy, int *out_w, int *out_h);
/* photo -> the input by the policy: the one place a policy becomes a resampler (the encoder, and
 * feature extraction by the policy its identity records, both call it). */
int ac_resize_photo(const ac_image *photo, int size, int stride, ac_resize policy, ac_image *out, ac_err *err);
/* Sets the policy, refusing AC_RESIZE_ASPECT (one line) for a grid that is not square or a size that is
 * not a multiple of it. */
int ac_encoder_set_resize(ac_encoder *enc, ac_resize policy, ac_err *err);
/* The input's pixels per grid cell: size / grid_h. */
int ac_encoder_stride(const ac_encoder *enc);
/* The smallest photo (upright) the encoder's input can be made from as well as from the whole one:
 * what to ask ac_image_load_min for. size x size for the antialiased policies (AC_RESIZE_ASPECT's input
 * is at most that); 0 x 0 (the whole photo) for AC_RESIZE_BILINEAR, whose references sampled the full
 * photo without averaging, which a reduced decode would not reproduce. */
void ac_encoder_min_photo(const ac_encoder *enc, int *min_w, int *min_h);
/* photo -> the encoder's input, by enc->resize. Thread-safe (reads enc only). */
int ac_encoder_prepare(const ac_encoder *enc, const ac_image *photo, ac_image *prepared, ac_err *err);
/* out: grid_h*grid_w*dim floats (row-major grid, then channels). img: any photo (prepared here unless
 * ac_encoder_prepare left it so). The photo's own grid is *grid_h x *grid_w (may be NULL): the
 * encoder's whole grid, except under AC_RESIZE_ASPECT, where its cells come first and zeros follow. */
int ac_encoder_encode_grid(ac_encoder *enc, const ac_image *img, float *out, int *grid_h, int *grid_w, ac_err *err);
/* The same without the photo's grid: for the squashing policies. */
int ac_encoder_encode(ac_encoder *enc, const ac_image *img, float *out, ac_err *err);
/* The arithmetic of the CNN's products (cnn.h: AC_PRECISION_F32, the default, AC_PRECISION_BF16X2,
 * faster on CPUs with AMX, features within rounding of F32's, AC_PRECISION_INT8, a quantized encoder
 * on its own integers as TFLite runs it, or AC_PRECISION_AUTO). Lanes and plans of other shapes
 * made from enc keep it. One line (err) if the CPU or the encoder cannot. */
int ac_encoder_set_precision(ac_encoder *enc, ac_precision p, ac_err *err);
ac_precision ac_encoder_precision(const ac_encoder *enc);
/* Another encoder sharing enc's model and settings (a shallow copy) with its own plans and `threads`
 * threads, so that several photos can be encoded at once; close it with ac_encoder_lane_close (enc
 * must outlive it). */
int ac_encoder_lane(const ac_encoder *enc, int threads, ac_encoder *lane, ac_err *err);
void ac_encoder_lane_close(ac_encoder *lane);
void ac_encoder_close(ac_encoder *enc);
/* The whole classifier: an encoder whose "layer" is the model's output (class probabilities for the
 * usual softmax models; grid 1 x 1, dim = number of classes), at the model's native input size. */
int ac_encoder_open_classifier(const char *tflite_path, int threads, ac_encoder *enc, ac_err *err);

/* The classifier head that follows the encoder's layer in the same graph (MobileNet: global average
 * pool -> 1x1 conv "Logits" -> reshape -> softmax), run on the annotation grid ac_encoder_encode
 * already wrote: ImageNet class probabilities of the whole photo, and of windows of the grid, from
 * the same CNN pass. The whole-grid row at the model's native size is the graph's own output bit
 * for bit in F32 (same kernels, same order; checked with the AVX-512 product and with OpenBLAS; the
 * head's product is always float32, so under BF16X2 it differs from the graph's by rounding). At 448
 * (grid 14x14) a 7x7 window sees the photo at the scale the classifier was trained at, while the
 * whole 14x14 average is a flatter, less confident distribution. Cost at 448: 0.5 ms for the whole
 * photo, 0.9 ms with 5 windows, 7 ms with all 64 windows of 7x7 (the CNN: ~50 ms on one thread). */
typedef struct ac_class_head ac_class_head;
/* Fails (one line) when the graph past enc->layer is not pool -> [reshape] -> 1x1 conv or fully
 * connected -> [reshape] -> softmax. Keeps pointers into enc->model, which must outlive it. Read-only
 * after opening: one head serves any number of threads. */
int ac_class_head_open(const ac_encoder *enc, ac_class_head **head, ac_err *err);
int ac_class_head_classes(const ac_class_head *head); /* 1001 for the ImageNet MobileNets */
void ac_class_head_free(ac_class_head *head);

/* A window of the annotation grid: rows y..y+h-1, columns x..x+w-1. */
typedef struct ac_grid_window {
    int y, x, h, w;
} ac_grid_window;
/* Standard windows: side x side (clipped to the grid), per_axis positions per axis spread evenly from
 * edge to edge (2 = the four quadrants; 1 = one centred; side 7 and 8 at 14x14 = every position),
 * plus a centred one if `centre` and not already there. Writes at most cap; returns how many. */
int ac_grid_windows(int grid_h, int grid_w, int side, int per_axis, int centre, ac_grid_window *out, int cap);
/* The naming's windows (the tags' classes, the presence head's ratio bar): the four quadrants and the
 * centre, of half the grid's shorter side (7x7 at 14x14, the classifier's own scale at 448); none
 * when that is under 2 cells. out holds AC_NAMING_WINDOWS; returns how many. */
#define AC_NAMING_WINDOWS 5
int ac_grid_naming_windows(int grid_h, int grid_w, ac_grid_window out[AC_NAMING_WINDOWS]);
/* The windows of a grid moved into a smaller grid_h x grid_w one (a photo that kept its aspect ratio):
 * each cut to fit and moved inside, so that it keeps its scale where it can. */
void ac_grid_windows_fit(ac_grid_window *win, int n, int grid_h, int grid_w);
/* ann: grid_h*grid_w*dim floats (as ac_encoder_encode wrote them). probs: (1 + n_win) rows of
 * n_classes: row 0 the whole grid, row 1 + k window k. Allocates its scratch per call. */
int ac_class_head_forward(const ac_class_head *head, const float *ann, int grid_h, int grid_w, int dim,
                          const ac_grid_window *win, int n_win, float *probs, ac_err *err);
/* out[c] = the maximum of probs[r][c] over the n_rows rows: each class at its most confident, over
 * the whole photo and the windows. */
void ac_class_probs_max(const float *probs, int n_rows, int n_classes, float *out);

/* The encoder identity (metadata "encoder" of a model and of every feature shard): JSON with file,
 * sha256, layer, size, grid_h, grid_w (AC_RESIZE_ASPECT: the padded grid), dim, norm_mean, norm_scale,
 * resize and, for features of the integer path, "precision": "int8" (float32 and bf16x2 agree to 1e-9
 * cosine and are not told apart; int8's features are ~1e-2 from theirs, so they are another input). */
typedef struct ac_encoder_id {
    char file[256];  /* the .tflite file name, e.g. mobilenet_v2_1.0_224_quant.tflite */
    char sha256[65]; /* "" if absent */
    char layer[256]; /* "" = default */
    char resize[128]; /* as recorded: "bilinear" = plain bilinear, AC_ENCODER_ASPECT_TEXT = aspect kept;
                         anything else = antialiased squash */
    ac_resize policy; /* what resize says */
    int size, grid_h, grid_w, dim;
    int has_norm;
    float norm_mean, norm_scale;
    int int8; /* features of the integer path (AC_PRECISION_INT8): a model trained on them asks for it */
} ac_encoder_id;
/* Parses and checks (a bare file name, size in 0..4096, precision absent, "float32" or "int8"); missing
 * fields are empty or 0. what names the identity's owner in errors. */
int ac_encoder_id_parse(const char *json, const char *what, ac_encoder_id *id, ac_err *err);
/* The identity of an open encoder as JSON (malloc'd; NULL when out of memory). */
char *ac_encoder_id_json(const ac_encoder *enc);
/* The "resize" recorded for AC_RESIZE_ASPECT. */
#define AC_ENCODER_ASPECT_TEXT "aspect kept, antialiased bilinear, long side at size, grid padded"
/* 1 if features of a and of b are interchangeable: the same file (by SHA-256 when both record it,
 * else by name), layer, input size and grid, both keep the aspect ratio or neither does, and both come
 * from the integer path or neither does. */
int ac_encoder_id_same(const ac_encoder_id *a, const ac_encoder_id *b);
/* The precision to run an encoder in for a model whose encoder identity is id, when asked is what the
 * user asked for: AC_PRECISION_AUTO resolves to AC_PRECISION_INT8 for a model trained on int8 features
 * (the same integers on every CPU), otherwise asked is returned as it is. */
ac_precision ac_encoder_id_precision(const ac_encoder_id *id, ac_precision asked);
/* "sha256 1234abcd..., layer L, size N", for messages. */
void ac_encoder_id_describe(const ac_encoder_id *id, char *buf, size_t n);
/* The encoder id names: flag, $ATTNCAP_ENCODER, else id->file beside the model file, in models/ (as
 * ac_find_model in locate.h), in the installed data directories, then in ac_find_data_dir()/encoders/.
 * Its SHA-256 must equal id->sha256 (when recorded): a different file is refused. malloc'd. */
int ac_find_encoder(const char *flag, const char *model_path, const ac_encoder_id *id, char **path, ac_err *err);
#ifdef __cplusplus
}
#endif
#endif
