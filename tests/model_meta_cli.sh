#!/usr/bin/env bash
# A model file's metadata is validated (issue 30): an unknown metadata key, an unknown config key or
# an out-of-range naming value or a malformed training-photos record is one error line naming the file
# and the key, never silently ignored.
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
elif kind == "naming_max_tags": m["naming"] = json.dumps({"max_tags": 1.5})
elif kind == "naming_string": m["naming"] = json.dumps({"threshold": "0.2"})
elif kind == "naming_logprob": m["naming"] = json.dumps({"trust_logprob": 0.5})
elif kind == "naming_array": m["naming"] = json.dumps([0.2])
elif kind == "training_photos":  # out of order: eval read it so; the loader refuses it now
    m["training_photos"] = json.dumps({"hash": "fnv1a64-low32 of the file name", "n": 2, "hashes": "0000000b0000000a"})
hb = json.dumps(h).encode(); hb += b" " * (-len(hb) % 8)
open(dst, "wb").write(struct.pack("<Q", len(hb)) + hb + b[8 + n:])
PY
}
for kind in meta config naming naming_key naming_max_tags naming_string naming_logprob naming_array training_photos; do
  t_begin "model_metadata_refused_$kind"
  need_data encoders/mobilenet_v1_0.25_128_quant.tflite || continue
  [ -x "$MK" ] || { t_skip "needs $MK (make tests)"; continue; }
  [ -n "$PY" ] || { t_skip "needs python3"; continue; }
  [ -f "$T/tiny.safetensors" ] || "$MK" --make-model "$T/tiny.safetensors" >/dev/null || { t_fail "cannot make the tiny model"; continue; }
  "$A" caption --model "$T/tiny.safetensors" "$ROOT/samples/dog.jpg" >/dev/null 2>"$T/err" || { t_fail "the unedited model fails: $(head -1 "$T/err")"; continue; }
  edit "$T/tiny.safetensors" "$T/bad_$kind.safetensors" "$kind"
  expect_error "$kind" "$A" caption --model "$T/bad_$kind.safetensors" "$ROOT/samples/dog.jpg" || continue
  case $kind in meta) want="unknown metadata 'colour'";; config) want="unknown key 'attention_width'";;
                naming) want="'threshold' must be a number";; naming_key) want="unknown key 'threshhold'";;
                naming_max_tags) want="'max_tags' must be a whole number";; naming_string) want="'threshold' must be a number";;
                naming_logprob) want="'trust_logprob' must be a number in [-100, 0]";; naming_array) want="not a JSON object";;
                training_photos) want="metadata 'training_photos': hash 1 is not hex, or out of order";; esac
  if grep -q "bad_$kind.safetensors" "$T/err" && grep -qF "$want" "$T/err"; then t_ok; else t_fail "message: $(cat "$T/err")"; fi
done

# attncap tune --naming writes no record the loader would refuse: the file is left as it was (same
# bytes), one line names the key; a good record is written and read back.
t_begin tune_naming_checked
if [ -f "$T/tiny.safetensors" ]; then
  cp "$T/tiny.safetensors" "$T/tune.safetensors"
  ok=1
  for bad in '{"threshold":5}' '{"max_tags":1.5}' '{"threshhold":0.2}' '{"trust_logprob":0.5}' '[1]'; do
    expect_error "tune --naming $bad" "$A" tune --model "$T/tune.safetensors" --naming "$bad" || { ok=0; break; }
    cmp -s "$T/tiny.safetensors" "$T/tune.safetensors" || { ok=0; t_fail "tune --naming $bad changed the file"; break; }
  done
  if [ $ok = 1 ]; then
    "$A" tune --model "$T/tune.safetensors" --naming '{"threshold":0.3,"max_tags":1}' >/dev/null 2>"$T/err" &&
      "$A" info "$T/tune.safetensors" >"$T/info" 2>>"$T/err"
    if grep -qF '{"threshold":0.3,"max_tags":1}' "$T/info"; then t_ok; else t_fail "good record: $(cat "$T/err") $(grep naming "$T/info")"; fi
  fi
else t_skip "needs the tiny model (model_metadata_refused_meta)"; fi
t_end
