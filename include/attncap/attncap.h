/* attncap/attncap.h: the whole library in one include.
 *
 *     #include <attncap/attncap.h>      (cc prog.c $(pkg-config --cflags --libs attncap))
 *
 * Start with captioner.h (photo -> caption with attention, end to end); metrics.h scores captions
 * as coco-caption does; overlay.h draws the attention. Every fallible call returns 0, or -1 with a
 * one-line message in an ac_err (common.h). Each header is usable on its own, from C or C++.
 * Every name the library exports starts with ac_ (macros and enum values AC_), private ones too:
 * CONTRIBUTING.md has the naming rules. */
#ifndef ATTNCAP_ATTNCAP_H
#define ATTNCAP_ATTNCAP_H

#include "attncap/beam.h"
#include "attncap/captioner.h"
#include "attncap/cnn.h"
#include "attncap/encoder.h"
#include "attncap/common.h"
#include "attncap/confidence.h"
#include "attncap/dataset.h"
#include "attncap/decoder.h"
#include "attncap/features.h"
#include "attncap/grounding.h"
#include "attncap/image.h"
#include "attncap/locate.h"
#include "attncap/meteor.h"
#include "attncap/metrics.h"
#include "attncap/model.h"
#include "attncap/naming.h"
#include "attncap/objects.h"
#include "attncap/font.h"
#include "attncap/overlay.h"
#include "attncap/png.h"
#include "attncap/presence.h"
#include "attncap/presence_data.h"
#include "attncap/report.h"
#include "attncap/safetensors.h"
#include "attncap/shard.h"
#include "attncap/tag_precision.h"
#include "attncap/tags.h"
#include "attncap/tflite.h"
#include "attncap/tokenize.h"
#include "attncap/train.h"
#include "attncap/tune.h"
#include "attncap/version.h"
#include "attncap/vocab.h"

#endif
