#!/usr/bin/env bash
# A model file's metadata is validated (issue 30): an unknown metadata key, an unknown config key or
# an out-of-range naming value is one error line naming the file and the key, never silently ignored.
. "$(dirname "$0")/lib.sh"
MK="$(dirname "$A")/tests/test_captioner"
ROOT=${ATTNCAP_ROOT:-$(cd "$(dirname "$0")/.." && pwd)}
PY=$(command -v python3 || true)
# edit SRC DST KIND: a copy of SRC with its header changed
edit() {
  "$PY" - "$1" "$2" "$3" <<'PY'
import json, struct, sys
src, dst, kind = sys.argv[1:4]
b = open(src, "rb").read(); n = struct.unpack("<Q", b[:8])[0]
h = json.loads(b[8:8 + n]); m = h["__metadata__"]
if kind == "meta": m["colour"] = "blue"
elif kind == "config":
    c = json.loads(m["config"]); c["attention_width"] = 3; m["config"] = json.dumps(c)
elif kind == "naming": m["naming"] = json.dumps({"threshold": 5})
elif kind == "naming_key": m["naming"] = json.dumps({"threshhold": 0.2})
hb = json.dumps(h).encode(); hb += b" " * (-len(hb) % 8)
open(dst, "wb").write(struct.pack("<Q", len(hb)) + hb + b[8 + n:])
PY
}
for kind in meta config naming naming_key; do
  t_begin "model_metadata_refused_$kind"
  need_data encoders/mobilenet_v1_0.25_128_quant.tflite || continue
  [ -x "$MK" ] || { t_skip "needs $MK (make tests)"; continue; }
  [ -n "$PY" ] || { t_skip "needs python3"; continue; }
  [ -f "$T/tiny.safetensors" ] || "$MK" --make-model "$T/tiny.safetensors" >/dev/null || { t_fail "cannot make the tiny model"; continue; }
  "$A" caption --model "$T/tiny.safetensors" "$ROOT/samples/dog.jpg" >/dev/null 2>"$T/err" || { t_fail "the unedited model fails: $(head -1 "$T/err")"; continue; }
  edit "$T/tiny.safetensors" "$T/bad_$kind.safetensors" "$kind"
  expect_error "$kind" "$A" caption --model "$T/bad_$kind.safetensors" "$ROOT/samples/dog.jpg" || continue
  case $kind in meta) want="unknown metadata 'colour'";; config) want="unknown key 'attention_width'";;
                naming) want="'threshold' must be a number";; naming_key) want="unknown key 'threshhold'";; esac
  if grep -q "bad_$kind.safetensors" "$T/err" && grep -qF "$want" "$T/err"; then t_ok; else t_fail "message: $(cat "$T/err")"; fi
done
t_end
