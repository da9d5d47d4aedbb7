#!/usr/bin/env bash
# attncap train --attention-mode hard (Xu et al.'s stochastic attention): on the tiny fixture a hard
# model overfits its 20 captions so that the beam search (argmax locations) reproduces the val
# captions, records its mode in the config, trains the same bytes for any thread count and after a
# resume (the REINFORCE baseline is in the checkpoint); on real photos (../shared's COCO photos
# through the small encoder) it captions, draws overlays, lights exactly one cell per word in
# `caption --json --attention` and is scored by `attncap ground`.
. "$(dirname "$0")/lib.sh"
FX=$(dirname "$0")/fixtures/train
tiny=(--data "$FX/captions.json" --features "$FX/features" --embed 32 --hidden 32 --att 16 --min-count 1 --batch 5
      --lr 0.01 --dropout 0 --lambda 0.1 --quiet --checkpoint-every 0 --attention-mode hard)
py=$(command -v python3 || true)
field() { grep -o "\"$1\":[0-9.e-]*" | head -1 | cut -d: -f2; }

t_begin hard_overfits_and_captions_its_val_photos
m="$T/hard.safetensors"
if ! "$A" train "${tiny[@]}" --out "$m" --epochs 60 --patience 100 --log "$T/log.csv" >/dev/null 2>"$T/err"; then
  t_fail "train failed: $(head -2 "$T/err")"
else
  cfg=$("$A" info --ops "$m" | grep '^  config')
  b4=$(tail -1 "$T/log.csv" | cut -d, -f5)
  eb4=$("$A" eval --model "$m" --data "$FX/captions.json" --split val --features "$FX/features" --no-meteor --json \
          --quiet 2>"$T/err" | tr -d '\t\n ' | field BLEU-4)
  if ! grep -qF '"attention_mode":"hard","reinforce":1,"entropy":0.01,"expected_context":0.5' <<<"$cfg"; then
    t_fail "config: $cfg"
  elif ! awk -v a="$b4" -v b="$eb4" 'BEGIN{exit !(a > 0.999 && b > 0.999)}'; then
    t_fail "val BLEU-4 $b4 in training, $eb4 from eval (expected 1) $(head -2 "$T/err")"
  else t_ok; fi
fi

t_begin hard_same_bytes_for_threads_and_resume
# The locations are drawn from the run's seed: 1 and 2 threads give the same model, and so does a run
# stopped after 5 steps and resumed (the baseline and the step counter come back from the checkpoint).
short=("${tiny[@]}" --epochs 3 --patience 100 --checkpoint-every 2)
if "$A" train "${short[@]}" --threads 1 --out "$T/t1.st" >/dev/null 2>"$T/err" &&
   "$A" train "${short[@]}" --threads 2 --out "$T/t2.st" >/dev/null 2>>"$T/err" &&
   "$A" train "${short[@]}" --max-steps 5 --out "$T/r.st" >/dev/null 2>>"$T/err" &&
   "$A" train "${short[@]}" --out "$T/r.st" --resume >/dev/null 2>>"$T/err"; then
  if ! cmp -s "$T/t1.st" "$T/t2.st"; then t_fail "models differ between 1 and 2 threads"
  elif ! cmp -s "$T/t1.st" "$T/r.st"; then t_fail "the resumed model differs from the uninterrupted one"
  elif "$A" train "${short[@]}" --seed 2 --out "$T/s2.st" >/dev/null 2>&1 && cmp -s "$T/t1.st" "$T/s2.st"; then
    t_fail "another seed gives the same model: the test cannot see the samples"
  else t_ok; fi
else t_fail "training failed: $(head -2 "$T/err")"; fi

t_begin hard_errors
# refused WHAT MESSAGE CMD...: CMD fails with one line on stderr, and that line says MESSAGE
refused() {
  local what=$1 msg=$2; shift 2
  expect_error "$what" "$@" || return 1
  grep -qF "$msg" "$T/err" || { t_fail "$what: message: $(cat "$T/err")"; return 1; }
}
ok=1
refused "unknown mode" "attention mode 'stochastic' is not soft or hard" \
  "$A" train "${tiny[@]}" --out "$T/x.st" --attention-mode stochastic || ok=0
[ $ok = 1 ] && { expect_error "chance over 1" "$A" train "${tiny[@]}" --out "$T/x.st" --expected-context 2 || ok=0; }
if [ $ok = 1 ] && [ -f "$T/r.st.ckpt" ]; then
  refused "resume as soft" "attention_mode soft (checkpoint: hard)" \
    "$A" train "${short[@]}" --out "$T/r.st" --epochs 4 --resume --attention-mode soft || ok=0
fi
# --hard-context: a name it does not know, and a soft model (the shipped one)
ev=(eval --data "$FX/captions.json" --split val --features "$FX/features" --no-meteor --quiet)
ROOT=${ATTNCAP_ROOT:-$(cd "$(dirname "$0")/.." && pwd)}
[ $ok = 1 ] && { refused "context median" "context 'median': argmax or expected" \
  "$A" "${ev[@]}" --model "$T/hard.safetensors" --hard-context median || ok=0; }
[ $ok = 1 ] && { refused "soft model" "the model has soft attention" \
  "$A" "${ev[@]}" --model "$ROOT/models/attncap.safetensors" --hard-context argmax || ok=0; }
if [ $ok = 1 ]; then
  if ls "$T"/x.st* >/dev/null 2>&1; then t_fail "output left behind by a failed run"; else t_ok; fi
fi

t_begin hard_captions_photos_one_cell_per_word
if need_data encoders/mobilenet_v1_0.25_128_quant.tflite && need_data data/coco/captions.json; then
  m="$T/coco_hard.safetensors"
  ok=1
  { coco_features && coco_train "$m" --embed 16 --hidden 24 --att 16 --attention-mode hard; } || ok=0
  if [ $ok = 1 ] && ! "$A" caption --model "$m" --encoder "$ENC" --json --attention --overlays "$T/ov" --size 64 \
       "$COCO/images/$photo" >"$T/cap.json" 2>"$T/err"; then
    t_fail "caption: $(head -2 "$T/err")"; ok=0
  fi
  if [ $ok = 1 ] && [ ! -s "$T/ov/$stem/sheet.png" ]; then t_fail "no overlay sheet"; ok=0; fi
  if [ $ok = 1 ] && [ -n "$py" ] && ! "$py" - "$T/cap.json" 2>"$T/err" <<'PY'
import json, sys
o = json.load(open(sys.argv[1]))
rows = o["attention"]
assert len(rows) >= 2 and o["caption"], o
for r in rows:  # one lit cell per word, the others dark
    assert sorted(r)[-1] == 1 and sum(r) == 1 and all(v in (0, 1) for v in r), r
PY
  then t_fail "attention rows are not one-hot: $(tail -1 "$T/err")"; ok=0; fi
  # --hard-context expected: the expected context's attention, spread over the cells
  if [ $ok = 1 ] && [ -n "$py" ] && ! { "$A" caption --model "$m" --encoder "$ENC" --json --attention --hard-context expected \
       "$COCO/images/$photo" >"$T/cap_e.json" 2>"$T/err" && "$py" - "$T/cap_e.json" 2>"$T/err" <<'PY'
import json, sys
o = json.load(open(sys.argv[1]))
assert o["caption"] and all(abs(sum(r) - 1) < 1e-3 and max(r) < 1 for r in o["attention"]), o["attention"]
PY
  }; then t_fail "--hard-context expected: $(tail -1 "$T/err")"; ok=0; fi
  printf '%s\t%s\t0,0,0.5,1\n' "$COCO/images/$photo" "$(tr -d '\n' <"$T/cap.json" | grep -o '"caption":"[a-z]*' | cut -d'"' -f4)" \
    >"$T/boxes.tsv"
  if [ $ok = 1 ] && ! "$A" ground --boxes "$T/boxes.tsv" --model "$m" --encoder "$ENC" --quiet >"$T/g" 2>"$T/err"; then
    t_fail "ground: $(cat "$T/err")"; ok=0
  fi
  [ $ok = 1 ] && t_ok
fi
t_end
