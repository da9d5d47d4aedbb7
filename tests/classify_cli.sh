#!/usr/bin/env bash
# attncap classify / info: the shared photos get their known labels (plain and --json), a bad image
# among good ones gets one error line while the others are still classified, hostile models and
# missing files give one error line; info lists ops, tensors and quantization, and a safetensors
# file's metadata and tensors as Python's own reading of the header has them.
. "$(dirname "$0")/lib.sh"
FIX="$(dirname "$0")/fixtures/cnn"
ENC=encoders/mobilenet_v2_1.0_224_quant.tflite

t_begin help
if "$A" classify --help | grep -q -- '--encoder' && "$A" info --help | grep -q 'MODEL.tflite'; then t_ok; else t_fail "no usage"; fi

t_begin known_labels_plain
if need_data $ENC && need_data images/parrot.jpg; then
  out=$("$A" classify --top 2 --encoder "$DATA/$ENC" --labels "$DATA/encoders/imagenet_labels.txt" \
        "$DATA/images/grace_hopper.bmp" "$DATA/images/cat.bmp" "$DATA/images/parrot.jpg" 2>"$T/err"); rc=$?
  top=$(echo "$out" | awk '/^  /{if(!seen[img]++){$1="";$2="";sub(/^ +/,"");print}; next}{img=$0}')
  want=$'military uniform\nEgyptian cat\nmacaw'
  if [ $rc -ne 0 ]; then t_fail "exit $rc: $(head -2 "$T/err")"
  elif [ "$top" != "$want" ]; then t_fail "top-1 labels: $(echo $top)"
  else t_ok; fi
fi

t_begin json_and_default_paths
if need_data $ENC && need_data encoders/imagenet_labels.txt; then
  # no --encoder/--labels: found through ATTNCAP_DATA
  ATTNCAP_DATA="$DATA" "$A" classify --json --top 3 "$DATA/images/parrot.jpg" "$DATA/images/cat.bmp" >"$T/j" 2>"$T/err"; rc=$?
  n=$(wc -l <"$T/j")
  if [ $rc -ne 0 ]; then t_fail "exit $rc: $(head -2 "$T/err")"
  elif [ "$n" -ne 2 ]; then t_fail "expected 2 JSON lines, got $n"
  elif ! head -1 "$T/j" | grep -q '^{"image":".*parrot.jpg","top":\[{"index":89,"label":"macaw","prob":0\.99[0-9]*},{'; then
    t_fail "unexpected JSON: $(head -c 200 "$T/j")"
  elif [ "$(grep -o '"index"' "$T/j" | wc -l)" -ne 6 ]; then t_fail "expected 3 entries per line"
  else t_ok; fi
fi

t_begin bad_image_among_good
if need_data $ENC; then
  mkdir -p "$T/adir"; printf 'not an image' >"$T/junk.jpg"
  "$A" classify --encoder "$DATA/$ENC" --labels "$DATA/encoders/imagenet_labels.txt" --json \
    "$DATA/images/cat.bmp" "$T/missing.jpg" "$T/junk.jpg" "$T/adir" "$DATA/images/parrot.jpg" >"$T/out" 2>"$T/err"; rc=$?
  if [ $rc -eq 0 ] || [ $rc -ge 128 ]; then t_fail "exit code $rc"
  elif [ "$(wc -l <"$T/err")" -ne 3 ]; then t_fail "expected 3 error lines: $(cat "$T/err")"
  elif ! grep -q missing.jpg "$T/err" || ! grep -q junk.jpg "$T/err" || ! grep -q adir "$T/err"; then t_fail "errors do not name the files"
  elif [ "$(wc -l <"$T/out")" -ne 2 ] || ! grep -q '"label":"macaw"' "$T/out"; then t_fail "good photos not classified"
  else t_ok; fi
fi

t_begin hostile_models
# (needs no ../shared: the model is refused before any photo is read)
ok=1
: >"$T/labels.txt"
head -c 300 "$FIX/op_conv1x1.tflite" >"$T/trunc.tflite"
for m in "$FIX/bad_huge_shape.tflite" "$FIX/bad_bad_tensor_index.tflite" "$FIX/bad_short_data.tflite" "$T/trunc.tflite" \
         "$T/nope.tflite" "$FIX"; do
  expect_error "classify $m" "$A" classify --encoder "$m" --labels "$T/labels.txt" "$T/photo.jpg" || { ok=0; break; }
  expect_error "info $m" "$A" info "$m" || { ok=0; break; }
done
if [ $ok -eq 1 ]; then
  expect_error "unsupported op" "$A" classify --encoder "$FIX/bad_unsupported_op.tflite" --labels "$T/labels.txt" "$T/photo.jpg" || ok=0
fi
if [ $ok -eq 1 ] && ! grep -q "unsupported operator L2_NORMALIZATION" "$T/err"; then t_fail "message: $(cat "$T/err")"; ok=0; fi
if [ $ok -eq 1 ]; then expect_error "bad option" "$A" classify --frobnicate x || ok=0; fi
[ $ok -eq 1 ] && t_ok

t_begin info_lists_model
if [ -n "$DATA" ] && [ -e "$DATA/$ENC" ]; then
  "$A" info "$DATA/$ENC" >"$T/info" 2>"$T/err"; rc=$?
  if [ $rc -ne 0 ]; then t_fail "exit $rc"
  elif ! grep -q 'DEPTHWISE_CONV_2D  SAME stride 2x2 relu6' "$T/info"; then t_fail "no op line"
  elif ! grep -q 'UINT8    \[1,7,7,1280\] MobilenetV2/Conv_1/Relu6' "$T/info"; then t_fail "no Conv_1 tensor"
  elif ! grep -q 'input  q: scale=0.0078125 zero_point=128' "$T/info"; then t_fail "no input quantization"
  else t_ok; fi
else
  # without ../shared: the generated fixture
  if "$A" info "$FIX/op_quantized_weights.tflite" | grep -q 'per-channel (5 scales, dim 3)'; then t_ok; else t_fail "fixture info"; fi
fi

t_begin info_lists_safetensors
M=$(cd "$(dirname "$0")/.." && pwd)/models/attncap.safetensors
py=$(command -v python3 || true)
if [ ! -f "$M" ]; then t_skip "no models/attncap.safetensors"
elif [ -z "$py" ]; then t_skip "needs python3"
elif ! "$A" info "$M" >"$T/info" 2>"$T/err"; then t_fail "exit: $(head -1 "$T/err")"
else
  # expected lines, from the header read in Python: tensors (sorted by name as stored), vocab size, metadata
  "$py" - "$M" >"$T/want" <<'PY'
import json, struct, sys
with open(sys.argv[1], "rb") as f:
    n = struct.unpack("<Q", f.read(8))[0]
    h = json.loads(f.read(n))
meta = h.pop("__metadata__", {})
print("vocab %d entries" % len(json.loads(meta["vocab"])))
for k in ("format", "config", "encoder", "decode"):
    v = meta[k].encode()  # info shortens a value over 400 bytes to its first 400
    print("%s %s" % (k, meta[k] if len(v) <= 400 else "%s... (%d bytes)" % (v[:400].decode(), len(v))))
for i, name in enumerate(sorted(h, key=lambda k: h[k]["data_offsets"][0])):
    print("%d %s [%s] %s" % (i, h[name]["dtype"], ",".join(map(str, h[name]["shape"])), name))
PY
  tr -s ' ' <"$T/info" | sed 's/^ //' >"$T/got"
  missing=$(grep -vxF -f "$T/got" "$T/want" | head -3)
  if [ -n "$missing" ]; then t_fail "info lacks: $missing"
  elif ! head -c 2000 "$M" >"$T/trunc.safetensors" || ! expect_error "truncated safetensors" "$A" info "$T/trunc.safetensors"; then :
  elif ! grep -q trunc.safetensors "$T/err"; then t_fail "error does not name the file: $(cat "$T/err")"
  else t_ok; fi
fi
t_end
