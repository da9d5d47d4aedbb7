#!/usr/bin/env bash
# attncap train --attention [--heads]: every score function trains, saves (the score in the model's config),
# loads and captions through the unchanged commands. On the tiny fixture each must overfit its 20
# captions so that the beam search (the inference step, not the training forward) reproduces the val
# captions exactly, in training's validation and in `attncap eval`; on real photos (../shared's COCO
# photos through the small encoder) each model captions, draws overlays and follows --given. SCORE:N
# is the score with N attention heads; --head J shows head J.
. "$(dirname "$0")/lib.sh"
FX=$(dirname "$0")/fixtures/train
SCORES="additive dot scaled-dot general cosine scaled-dot:2 additive:4"
# score_flags SCORE[:HEADS]: the train flags
score_flags() { echo "--attention ${1%%:*}"; [[ $1 == *:* ]] && echo "--heads ${1##*:}"; }
tiny=(--embed 32 --hidden 32 --att 16 --min-count 1 --batch 5 --lr 0.01 --dropout 0 --lambda 0.1 --quiet
      --checkpoint-every 0)
py=$(command -v python3 || true)
field() { grep -o "\"$1\":[0-9.e-]*" | head -1 | cut -d: -f2; }

t_begin every_score_overfits_and_captions_its_val_photos
ok=1
for s in $SCORES; do
  m="$T/fx_$s.safetensors"
  if ! "$A" train --data "$FX/captions.json" --features "$FX/features" --out "$m" "${tiny[@]}" $(score_flags "$s") \
       --epochs 60 --patience 100 --log "$T/log_$s.csv" >/dev/null 2>"$T/err"; then
    t_fail "$s: train failed: $(head -2 "$T/err")"; ok=0; break
  fi
  cfg=$("$A" info --ops "$m" | grep '^  config')
  if [ "$s" = additive ]; then
    grep -q 'attention\|heads' <<<"$cfg" && { t_fail "additive config names a score: $cfg"; ok=0; break; }
  elif [ "${s%%:*}" != additive ] && ! grep -qF "\"attention\":\"${s%%:*}\"" <<<"$cfg"; then
    t_fail "$s: config $cfg"; ok=0; break
  elif [[ $s == *:* ]] && ! grep -qF "\"heads\":${s##*:}" <<<"$cfg"; then t_fail "$s: config $cfg"; ok=0; break; fi
  b4=$(tail -1 "$T/log_$s.csv" | cut -d, -f5)
  e=$("$A" eval --model "$m" --data "$FX/captions.json" --split val --features "$FX/features" --no-meteor --json \
        --quiet 2>"$T/err" | tr -d '\t\n ')
  eb4=$(echo "$e" | field BLEU-4)
  if ! awk -v a="$b4" -v b="$eb4" 'BEGIN{exit !(a > 0.999 && b > 0.999)}'; then
    t_fail "$s: val BLEU-4 $b4 in training, $eb4 from eval (expected 1) $(head -2 "$T/err")"; ok=0; break
  fi
done
[ $ok = 1 ] && t_ok

t_begin score_errors
ok=1
expect_error "3 heads of 16 columns" "$A" train --data "$FX/captions.json" --features "$FX/features" --out "$T/x.st" \
  "${tiny[@]}" --heads 3 || ok=0
[ $ok = 1 ] && ! grep -q "3 heads do not divide the attention width 16" "$T/err" && { t_fail "message: $(cat "$T/err")"; ok=0; }
[ $ok = 1 ] && expect_error "unknown score" "$A" train --data "$FX/captions.json" --features "$FX/features" --out "$T/x.st" \
  "${tiny[@]}" --attention bilinear || ok=0
[ $ok = 1 ] && ! grep -q "additive, dot, scaled-dot, general, cosine" "$T/err" && { t_fail "message: $(cat "$T/err")"; ok=0; }
# --init from a model of another score: its attention tensors are not this run's
if [ $ok = 1 ] && [ -s "$T/fx_dot.safetensors" ]; then
  expect_error "init from another score" "$A" train --data "$FX/captions.json" --features "$FX/features" \
    --out "$T/x.st" "${tiny[@]}" --epochs 1 --init "$T/fx_dot.safetensors" --attention cosine || ok=0
  [ $ok = 1 ] && ! grep -q "attention (dot, heads 1) differs from this run's (cosine, heads 1)" "$T/err" &&
    { t_fail "message: $(cat "$T/err")"; ok=0; }
fi
# --resume with another score than the checkpoint's is named like any changed flag; the same one is fine
"$A" train --data "$FX/captions.json" --features "$FX/features" --out "$T/r.st" "${tiny[@]}" --attention general \
  --epochs 20 --max-steps 3 >/dev/null 2>"$T/err0"
if [ $ok = 1 ] && [ ! -f "$T/r.st.ckpt" ]; then t_fail "no checkpoint: $(head -2 "$T/err0")"; ok=0; fi
if [ $ok = 1 ]; then
  expect_error "resume with another score" "$A" train --data "$FX/captions.json" --features "$FX/features" \
    --out "$T/r.st" "${tiny[@]}" --epochs 20 --max-steps 6 --attention dot --resume || ok=0
  [ $ok = 1 ] && ! grep -q "attention dot (checkpoint: general)" "$T/err" && { t_fail "message: $(cat "$T/err")"; ok=0; }
  [ $ok = 1 ] && ! "$A" train --data "$FX/captions.json" --features "$FX/features" --out "$T/r.st" "${tiny[@]}" \
    --epochs 20 --max-steps 6 --attention general --resume >/dev/null 2>"$T/err" &&
    { t_fail "resume with the same score: $(cat "$T/err")"; ok=0; }
fi
if [ $ok = 1 ]; then
  if ls "$T"/x.st* >/dev/null 2>&1; then t_fail "output left behind by a failed run"; else t_ok; fi
fi

t_begin every_score_captions_photos
if need_data encoders/mobilenet_v1_0.25_128_quant.tflite && need_data data/coco/captions.json; then
  ok=1
  coco_features || ok=0
  for s in $SCORES; do
    [ $ok = 1 ] || break
    m="$T/coco_$s.safetensors"
    # shellcheck disable=SC2046 # score_flags gives several words
    coco_train "$m" --embed 16 --hidden 24 --att 16 $(score_flags "$s") || { ok=0; break; }
    # one command, two photos: a free caption (with overlays) and a given one (all words fed)
    if ! "$A" caption --model "$m" --encoder "$ENC" --json --overlays "$T/ov_$s" --size 64 \
         "$COCO/images/$photo" >"$T/cap.json" 2>"$T/err" ||
       ! "$A" caption --model "$m" --encoder "$ENC" --json --given "a man on a street" "$COCO/images/$photo" \
         >"$T/given.json" 2>>"$T/err"; then
      t_fail "$s: caption: $(head -2 "$T/err")"; ok=0; break
    fi
    stem=${photo%.*}
    if ! grep -q '"caption":"[a-z]' "$T/cap.json" || [ ! -s "$T/ov_$s/$stem/sheet.png" ]; then
      t_fail "$s: no caption or overlay sheet: $(head -c 200 "$T/cap.json")"; ok=0
    elif ! grep -q '"caption":"a man on a street"' "$T/given.json"; then
      t_fail "$s: --given: $(head -c 200 "$T/given.json")"; ok=0
    fi
  done
  [ $ok = 1 ] && t_ok
fi

t_begin heads_shown_one_by_one
# --head J shows head J's attention: the heads' attentions average to the default one (their mean),
# differ from each other, and leave the words alone; ground scores a head; a head the model lacks
# is refused in one line.
m="$T/coco_additive:4.safetensors"
if [ -z "$py" ]; then t_skip "needs python3 to read the JSON"
elif [ ! -s "$m" ]; then t_skip "needs the COCO model of every_score_captions_photos"
else
  ok=1
  g=(--model "$m" --encoder "$ENC" --json --attention --given "a man on a street" "$COCO/images/$photo")
  for j in 0 1 2 3 4; do
    hj=(); [ $j = 0 ] || hj=(--head $j)
    "$A" caption "${g[@]}" "${hj[@]}" >"$T/head$j.json" 2>"$T/err" || { t_fail "--head $j: $(cat "$T/err")"; ok=0; break; }
  done
  if [ $ok = 1 ] && ! "$py" - "$T"/head{0,1,2,3,4}.json <<'PY'
import json, sys
rows = [json.load(open(p)) for p in sys.argv[1:]]
mean, heads = rows[0]["attention"], [r["attention"] for r in rows[1:]]
assert all(r["logprob"] == rows[0]["logprob"] for r in rows), "the words' log-probability changed"
for t in range(len(mean)):
    for l in range(len(mean[t])):
        avg = sum(h[t][l] for h in heads) / len(heads)
        assert abs(avg - mean[t][l]) < 1e-5, (t, l, avg, mean[t][l])  # the JSON has 4 digits: 5e-6 each
diff = max(abs(a - b) for t in range(len(mean)) for a, b in zip(heads[0][t], heads[1][t]))
assert diff > 5e-5, "heads 1 and 2 look the same (%g)" % diff
PY
  then t_fail "per-head attention does not average to the mean"; ok=0; fi
  printf '%s\tman\t0,0,0.5,1\n' "$COCO/images/$photo" >"$T/boxes.tsv"
  if [ $ok = 1 ] && ! "$A" ground --boxes "$T/boxes.tsv" --model "$m" --encoder "$ENC" --head 3 --quiet >"$T/g" 2>"$T/err"; then
    t_fail "ground --head 3: $(cat "$T/err")"; ok=0
  fi
  [ $ok = 1 ] && { expect_error "head 5 of 4" "$A" caption "${g[@]}" --head 5 || ok=0; }
  [ $ok = 1 ] && ! grep -q "attention head 5: the model has 4 heads" "$T/err" && { t_fail "message: $(cat "$T/err")"; ok=0; }
  [ $ok = 1 ] && t_ok
fi
t_end
