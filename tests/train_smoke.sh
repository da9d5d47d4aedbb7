#!/usr/bin/env bash
# attncap train end to end on the tiny fixture (tools/make_train_fixture.py): it must overfit 20
# captions to near-zero loss in seconds, write the model, CSV and PNG, and refuse bad input cleanly.
. "$(dirname "$0")/lib.sh"
FX=$(dirname "$0")/fixtures/train
tiny=(--embed 32 --hidden 32 --att 16 --min-count 1 --batch 5 --lr 0.01 --dropout 0 --lambda 0.1 --quiet --checkpoint-every 0)

t_begin train_overfits_20_captions
if "$A" train --data "$FX/captions.json" --features "$FX/features" --out "$T/m.safetensors" "${tiny[@]}" \
     --epochs 60 --patience 100 --log "$T/log.csv" --plot "$T/plot.png" >"$T/out" 2>"$T/err"; then
  last=$(tail -1 "$T/log.csv")
  tl=$(echo "$last" | cut -d, -f3); vl=$(echo "$last" | cut -d, -f4)
  if awk -v a="$tl" -v b="$vl" 'BEGIN{exit !(a < 0.1 && b < 0.05)}'; then
    if [ -s "$T/m.safetensors" ] && head -c 8 "$T/plot.png" | grep -q PNG; then t_ok; else t_fail "model or plot missing"; fi
  else t_fail "did not overfit: train loss $tl, val loss $vl"; fi
else t_fail "train failed: $(head -3 "$T/err")"; fi

t_begin train_captions_val_photos_exactly
# The val photos reuse train photos: greedy captions (beam.c) of the trained model must reproduce
# their captions, i.e. validation BLEU-4 = 1 in the log, and the model must be a decoder model file.
b4=$(tail -1 "$T/log.csv" | cut -d, -f5)
if awk -v b="$b4" 'BEGIN{exit !(b > 0.999)}' && grep -q attncap-decoder-1 "$T/m.safetensors"; then t_ok
else t_fail "val BLEU-4 $b4 (expected 1)"; fi

t_begin train_errors
ok=1
expect_error "missing --out" "$A" train --data "$FX/captions.json" --features "$FX/features" || ok=0
expect_error "missing data" "$A" train --data "$T/nope.json" --features "$FX/features" --out "$T/x.st" || ok=0
expect_error "missing cache" "$A" train --data "$FX/captions.json" --features "$T/nope" --out "$T/x.st" || ok=0
expect_error "bad number" "$A" train --data "$FX/captions.json" --features "$FX/features" --out "$T/x.st" --lr abc || ok=0
expect_error "unwritable model directory" "$A" train --data "$FX/captions.json" --features "$FX/features" \
  --out /proc/attncap-no/m.safetensors "${tiny[@]}" --epochs 1 || ok=0
# a missing directory is created up front (not discovered at the first checkpoint)
"$A" train --data "$FX/captions.json" --features "$FX/features" --out "$T/new/dir/m.safetensors" "${tiny[@]}" \
  --epochs 1 >/dev/null 2>&1 && [ -s "$T/new/dir/m.safetensors" ] || { t_fail "training into a new directory"; ok=0; }
expect_error "bad metric" "$A" train --data "$FX/captions.json" --features "$FX/features" --out "$T/x.st" --val-metric foo || ok=0
expect_error "resume without checkpoint" "$A" train --data "$FX/captions.json" --features "$FX/features" --out "$T/none.st" --resume || ok=0
if [ $ok = 1 ]; then
  if ls "$T"/x.st* >/dev/null 2>&1; then t_fail "output left behind by a failed run"; else t_ok; fi
fi
t_end
