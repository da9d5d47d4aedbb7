#!/usr/bin/env bash
# attncap train --decoder transformer: the transformer decoder trains, saves (its kind and sizes in the
# model's config, shown by info), loads and captions through the unchanged commands. On the tiny
# fixture it must overfit its 20 captions so that the beam search (the step with its key/value cache,
# not the training forward) reproduces the val captions exactly; a run stopped and resumed gives the
# same model bytes as one that was not; captions without photos train too. On real photos (../shared's
# COCO photos through the small encoder) it captions with overlays, --json --attention, --given,
# --head J, required tags and `attncap ground`, and gives the same JSON one photo at a time as in
# batches on 1 or 3 threads.
. "$(dirname "$0")/lib.sh"
FX=$(dirname "$0")/fixtures/train
tiny=(--decoder transformer --embed 32 --hidden 64 --heads 2 --min-count 1 --batch 5 --lr 0.003 --quiet
      --checkpoint-every 0)
py=$(command -v python3 || true)

t_begin transformer_overfits_and_captions_its_val_photos
m="$T/fx.safetensors"
if ! "$A" train --data "$FX/captions.json" --features "$FX/features" --out "$m" "${tiny[@]}" --dropout 0 \
     --epochs 60 --patience 100 --log "$T/log.csv" >/dev/null 2>"$T/err"; then
  t_fail "train failed: $(head -2 "$T/err")"
else
  cfg=$("$A" info --ops "$m" | grep '^  config')
  b4=$(tail -1 "$T/log.csv" | cut -d, -f5)
  e=$("$A" eval --model "$m" --data "$FX/captions.json" --split val --features "$FX/features" --no-meteor --json \
        --quiet 2>"$T/err" | tr -d '\t\n ')
  eb4=$(echo "$e" | grep -o '"BLEU-4":[0-9.e-]*' | cut -d: -f2)
  if ! grep -qF '"att":32,' <<<"$cfg" || ! grep -qF '"attention":"scaled-dot","heads":2,"decoder":"transformer","layers":2}' <<<"$cfg"; then
    t_fail "config: $cfg"
  elif ! awk -v a="$b4" -v b="$eb4" 'BEGIN{exit !(a > 0.999 && b > 0.999)}'; then
    t_fail "val BLEU-4 $b4 in training, $eb4 from eval (expected 1) $(head -2 "$T/err")"
  elif [ "$("$A" info --tensors "$m" | grep -c " tf_")" != 26 ]; then
    t_fail "expected the 26 tf_ tensors: $("$A" info --tensors "$m" | head -5)"
  else
    t_ok
  fi
fi

t_begin lstm_files_keep_their_config
# an LSTM's config names neither a decoder nor layers (files before the transformer keep their bytes)
"$A" train --data "$FX/captions.json" --features "$FX/features" --out "$T/lstm.st" --embed 16 --hidden 16 --att 8 \
  --min-count 1 --batch 5 --quiet --checkpoint-every 0 --epochs 1 >/dev/null 2>"$T/err"
cfg=$("$A" info --ops "$T/lstm.st" 2>&1 | grep '^  config')
if [ -z "$cfg" ] || grep -q 'decoder\|layers' <<<"$cfg"; then t_fail "LSTM config: $cfg $(head -2 "$T/err")"; else t_ok; fi

t_begin transformer_resumes_exactly
# 6 steps in one run, and 3 + 3 with a resume between: the same model, byte for byte (dropout, EMA on)
r=(--data "$FX/captions.json" --features "$FX/features" "${tiny[@]}" --dropout 0.2 --epochs 10 --eval-every 3)
"$A" train "${r[@]}" --out "$T/a.st" --max-steps 6 >/dev/null 2>"$T/err1"
"$A" train "${r[@]}" --out "$T/b.st" --max-steps 3 >/dev/null 2>"$T/err2"
"$A" train "${r[@]}" --out "$T/b.st" --max-steps 6 --resume >/dev/null 2>"$T/err3"
if [ ! -s "$T/a.st" ] || [ ! -s "$T/b.st" ]; then t_fail "no models: $(head -2 "$T/err1" "$T/err2" "$T/err3")"
elif ! cmp -s "$T/a.st" "$T/b.st"; then t_fail "a resumed run gave another model"
else t_ok; fi

t_begin transformer_trains_captions_without_photos
# the "no photo" context: L copies of one learned vector as the memory (its gradient: dctx_sum)
if "$A" train --data "$FX/captions.json" --features "$FX/features" --out "$T/text.st" "${tiny[@]}" --epochs 2 \
     --text "$FX/captions.json" --text-ratio 0.6 --log "$T/text.csv" >/dev/null 2>"$T/err" &&
   "$A" info --ops "$T/text.st" | grep -q '"text_captions":2[0-9]'; then
  t_ok
else
  t_fail "$(head -2 "$T/err") $("$A" info --ops "$T/text.st" 2>&1 | grep training)"
fi

t_begin transformer_errors
ok=1
x=(--data "$FX/captions.json" --features "$FX/features" --out "$T/x.st" --min-count 1 --batch 5 --quiet --epochs 1)
expect_error "unknown kind" "$A" train "${x[@]}" --decoder rnn || ok=0
[ $ok = 1 ] && ! grep -q "decoder 'rnn' is not one of lstm, transformer" "$T/err" && { t_fail "message: $(cat "$T/err")"; ok=0; }
[ $ok = 1 ] && { expect_error "layers of an LSTM" "$A" train "${x[@]}" --layers 3 || ok=0; }
[ $ok = 1 ] && ! grep -q "layers are the transformer's" "$T/err" && { t_fail "message: $(cat "$T/err")"; ok=0; }
[ $ok = 1 ] && { expect_error "additive transformer" "$A" train "${x[@]}" --decoder transformer --attention additive || ok=0; }
[ $ok = 1 ] && ! grep -q "the transformer's attention is scaled-dot, not additive" "$T/err" && { t_fail "message: $(cat "$T/err")"; ok=0; }
[ $ok = 1 ] && { expect_error "3 heads of 32" "$A" train "${x[@]}" --decoder transformer --embed 32 --heads 3 || ok=0; }
[ $ok = 1 ] && ! grep -q "3 heads do not divide the transformer's width 32" "$T/err" && { t_fail "message: $(cat "$T/err")"; ok=0; }
[ $ok = 1 ] && { expect_error "hard transformer" "$A" train "${x[@]}" --decoder transformer --attention-mode hard || ok=0; }
[ $ok = 1 ] && ! grep -q "train: hard attention is the LSTM decoder's (the transformer's attention is soft)" "$T/err" &&
  { t_fail "message: $(cat "$T/err")"; ok=0; }
if [ $ok = 1 ] && [ -s "$T/lstm.st" ]; then # --init from an LSTM into a transformer run
  expect_error "init from an LSTM" "$A" train "${x[@]}" --decoder transformer --embed 16 --hidden 16 --init "$T/lstm.st" || ok=0
  [ $ok = 1 ] && ! grep -q "a lstm decoder (0 layers), this run's is a transformer (2 layers)" "$T/err" &&
    { t_fail "message: $(cat "$T/err")"; ok=0; }
fi
if [ $ok = 1 ] && [ -f "$T/b.st.ckpt" ]; then # resuming a transformer as an LSTM is a changed flag
  expect_error "resume as an LSTM" "$A" train "${r[@]}" --out "$T/b.st" --max-steps 9 --decoder lstm --resume || ok=0
  [ $ok = 1 ] && ! grep -q "decoder lstm (checkpoint: transformer)" "$T/err" && { t_fail "message: $(cat "$T/err")"; ok=0; }
fi
if [ $ok = 1 ]; then
  if ls "$T"/x.st* >/dev/null 2>&1; then t_fail "output left behind by a failed run"; else t_ok; fi
fi

t_begin transformer_captions_photos
if need_data encoders/mobilenet_v1_0.25_128_quant.tflite && need_data data/coco/captions.json; then
  m="$T/coco.st"
  ok=1
  { coco_features && coco_train "$m" --decoder transformer --embed 16 --hidden 32 --heads 2 --dropout 0.1; } || ok=0
  c=(--model "$m" --encoder "$ENC")
  if [ $ok = 1 ] && { ! "$A" caption "${c[@]}" --json --overlays "$T/ov" --size 64 "$COCO/images/$photo" >"$T/cap.json" 2>"$T/err" ||
       ! "$A" caption "${c[@]}" --json --given "a man on a street" "$COCO/images/$photo" >"$T/given.json" 2>>"$T/err"; }; then
    t_fail "caption: $(head -2 "$T/err")"; ok=0
  fi
  n_words=$(grep -o '"tokens":\[[^]]*\]' "$T/cap.json" | tr ',' '\n' | grep -c .)
  if [ $ok = 1 ] && { ! grep -q '"caption":"[a-z]' "$T/cap.json" || [ ! -s "$T/ov/$stem/sheet.png" ] ||
       [ "$(ls "$T/ov/$stem" | grep -c '^[0-9][0-9]_.*png$')" != "$n_words" ]; }; then
    t_fail "no caption, sheet or per-word overlays: $(head -c 300 "$T/cap.json")"; ok=0
  elif [ $ok = 1 ] && ! grep -q '"caption":"a man on a street"' "$T/given.json"; then
    t_fail "--given: $(head -c 200 "$T/given.json")"; ok=0
  fi
  # required words: the constrained search says them
  if [ $ok = 1 ] && ! "$A" caption "${c[@]}" --tags street "$COCO/images/$photo" 2>"$T/err" | grep -q 'street'; then
    t_fail "--tags street: $(head -2 "$T/err")"; ok=0
  fi
  # one photo at a time, and batches on 1 and 3 threads: the same JSON, attention included
  ls "$COCO/images" | head -12 | sed "s|^|$COCO/images/|" >"$T/list"
  if [ $ok = 1 ]; then
    for th in 1 3; do "$A" caption "${c[@]}" --json --attention --threads $th - <"$T/list" >"$T/th$th.json" 2>/dev/null; done
    while read -r f; do "$A" caption "${c[@]}" --json --attention --threads 2 "$f" 2>/dev/null; done <"$T/list" >"$T/one.json"
    if [ "$(wc -l <"$T/one.json")" != 12 ] || ! cmp -s "$T/one.json" "$T/th1.json" || ! cmp -s "$T/one.json" "$T/th3.json"; then
      t_fail "captions differ between one photo at a time and batches on 1 or 3 threads"; ok=0
    fi
  fi
  # --head J: the two heads' cross-attention averages to the default (their mean); ground scores a head
  if [ $ok = 1 ] && [ -n "$py" ]; then
    g=("${c[@]}" --json --attention --given "a man on a street" "$COCO/images/$photo")
    "$A" caption "${g[@]}" >"$T/h0.json" && "$A" caption "${g[@]}" --head 1 >"$T/h1.json" &&
      "$A" caption "${g[@]}" --head 2 >"$T/h2.json" || { t_fail "--head"; ok=0; }
    if [ $ok = 1 ] && ! "$py" - "$T"/h{0,1,2}.json <<'PY'
import json, sys
r = [json.load(open(p)) for p in sys.argv[1:]]
assert r[0]["logprob"] == r[1]["logprob"] == r[2]["logprob"], "the words' log-probability changed"
m, a, b = (x["attention"] for x in r)
for t in range(len(m)):
    assert abs(sum(m[t]) - 1) < 1e-3
    for l in range(len(m[t])):
        assert abs((a[t][l] + b[t][l]) / 2 - m[t][l]) < 1e-4, (t, l)
assert max(abs(x - y) for t in range(len(m)) for x, y in zip(a[t], b[t])) > 5e-5, "heads 1 and 2 look the same"
PY
    then t_fail "per-head attention does not average to the mean"; ok=0; fi
    printf '%s\tman\t0,0,0.5,1\n' "$COCO/images/$photo" >"$T/boxes.tsv"
    if [ $ok = 1 ] && ! "$A" ground --boxes "$T/boxes.tsv" "${c[@]}" --head 2 --quiet >"$T/g" 2>"$T/err"; then
      t_fail "ground --head 2: $(cat "$T/err")"; ok=0
    fi
  fi
  [ $ok = 1 ] && t_ok
fi
t_end
