#!/usr/bin/env bash
# The COCO detector (detect.h) against independent references (tools/check_detector.py): its letterbox
# against PIL + a NumPy bilinear resampler, its graph run by our engine against a float64 NumPy run of
# the same flatbuffer (tools/numpy_graph.py, its own reader tools/tflite_py.py), its decoding and NMS
# against the same written in Python; on the samples and everyday photos.
. "$(dirname "$0")/lib.sh"
ROOT=${ATTNCAP_ROOT:-$(cd "$(dirname "$0")/.." && pwd)}
DUMP="$(dirname "$A")/tools/detect_dump"
PY=/usr/bin/python3
for photo in "$ROOT"/samples/giraffe.jpg "$ROOT"/samples/kite.jpg "$ROOT"/samples/horses.jpg everyday_dev/cap_surfer.jpg \
             everyday_dev/da2_street_bus.jpg; do
  name=$(basename "$photo" .jpg)
  t_begin "detector_matches_numpy_$name"
  need_data encoders/yolox_nano.tflite || continue
  case $photo in everyday_dev/*) f=data/everyday_dev/images/${photo#everyday_dev/}; need_data "$f" || continue; photo=$DATA/$f;; esac
  [ -f "$photo" ] || { t_skip "needs $photo"; continue; }
  [ -x "$DUMP" ] || { t_skip "needs $DUMP (make)"; continue; }
  "$PY" -c 'import numpy' 2>/dev/null || { t_skip "needs /usr/bin/python3 with numpy"; continue; }
  if ! "$DUMP" "$DATA/encoders/yolox_nano.tflite" "$photo" "$T/in.f32" "$T/out.f32" >"$T/dets.txt" 2>"$T/err"; then
    t_fail "detect_dump: $(head -2 "$T/err")"; continue
  fi
  if "$PY" "$ROOT/tools/check_detector.py" "$DATA/encoders/yolox_nano.tflite" "$photo" "$T/in.f32" "$T/out.f32" \
       "$T/dets.txt" >"$T/check.txt" 2>&1; then t_ok
  else t_fail "$(grep -E '^FAIL|Error' "$T/check.txt" | head -3 | tr '\n' ' ')"; fi
done
t_end
