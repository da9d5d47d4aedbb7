#!/usr/bin/env bash
# Photos that keep their aspect ratio (attncap features --resize aspect; decoder.h, masks): a model
# trains on a cache of per-photo grids (the fixture's: 2x2, 2x1 and 1x2 cells of a 2x2 grid) and
# reproduces its val captions from the cache; hostile grids are refused in one line; on real photos
# (../shared's COCO photos through the small encoder) the policy is recorded in the cache and the
# model, and `attncap caption` prepares a non-square photo the same way: its attention and overlays
# cover the photo's own grid, drawn over the whole photo at its own shape.
. "$(dirname "$0")/lib.sh"
FX=$(dirname "$0")/fixtures/train
tiny=(--embed 32 --hidden 32 --att 16 --min-count 1 --batch 5 --lr 0.01 --dropout 0 --lambda 0.1 --quiet
      --checkpoint-every 0)
py=$(command -v python3 || true)
ASPECT="aspect kept, antialiased bilinear, long side at size, grid padded"

t_begin fixture_trains_on_own_grids
m="$T/fx.safetensors"
if ! "$A" train --data "$FX/captions.json" --features "$FX/features_aspect" --out "$m" "${tiny[@]}" --epochs 60 \
     --patience 100 --log "$T/log.csv" >/dev/null 2>"$T/err"; then
  t_fail "train: $(head -2 "$T/err")"
else
  b4=$(tail -1 "$T/log.csv" | cut -d, -f5)
  e=$("$A" eval --model "$m" --data "$FX/captions.json" --split val --features "$FX/features_aspect" --no-meteor \
        --json --quiet 2>"$T/err" | tr -d '\t\n ')
  eb4=$(echo "$e" | grep -o '"BLEU-4":[0-9.e-]*' | cut -d: -f2)
  if ! "$A" info "$m" | grep -qF "\"resize\": \"$ASPECT\""; then t_fail "the model does not record the policy"
  elif ! awk -v a="$b4" -v b="$eb4" 'BEGIN{exit !(a > 0.999 && b > 0.999)}'; then
    t_fail "val BLEU-4 $b4 in training, $eb4 from eval (expected 1) $(head -2 "$T/err")"
  else t_ok; fi
fi

t_begin decoders_on_own_grids
# hard attention trains on per-photo grids (masked: a padded cell is never sampled), and so does the
# transformer (masked cross-attention); each evaluates from the cache
ok=1
for d in "hard --attention-mode hard" "tf --att 32 --decoder transformer"; do
  set -- $d; name=$1; shift
  if ! "$A" train --data "$FX/captions.json" --features "$FX/features_aspect" --out "$T/$name.st" "${tiny[@]}" \
       "$@" --epochs 2 >/dev/null 2>"$T/err"; then
    t_fail "$name: $(head -2 "$T/err")"; ok=0; break
  fi
  if ! "$A" eval --model "$T/$name.st" --data "$FX/captions.json" --split val --features "$FX/features_aspect" \
       --no-meteor --quiet >/dev/null 2>"$T/err"; then
    t_fail "$name: eval: $(head -2 "$T/err")"; ok=0; break
  fi
done
[ $ok = 1 ] && t_ok

t_begin hostile_grids_refused
if [ -z "$py" ]; then t_skip "needs python3 to write the hostile cache"
else
  ok=1
  for g in "0 2" "2 0" "3 2" "-1 -4"; do
    mkdir -p "$T/bad"
    "$py" - "$FX/features_aspect/shard-00000.safetensors" "$T/bad/shard-00000.safetensors" $g <<'PY'
import json, struct, sys
b = bytearray(open(sys.argv[1], "rb").read())
n = struct.unpack("<Q", b[:8])[0]
off = json.loads(b[8:8 + n])["grids"]["data_offsets"][0] + 8 + n
b[off:off + 8] = struct.pack("<ii", int(sys.argv[3]), int(sys.argv[4]))  # the first photo's grid
open(sys.argv[2], "wb").write(b)
PY
    expect_error "grid $g" "$A" train --data "$FX/captions.json" --features "$T/bad" --out "$T/x.st" "${tiny[@]}" \
      --epochs 1 || { ok=0; break; }
    grep -q "photo00.jpg' has a grid of ${g/ /x} cells" "$T/err" || { t_fail "grid $g: $(cat "$T/err")"; ok=0; break; }
  done
  [ $ok = 1 ] && expect_error "unknown policy" "$A" features --resize sideways --out "$T/f" "$FX/captions.json" || ok=0
  [ $ok = 1 ] && ! grep -q "sideways" "$T/err" && { t_fail "message: $(cat "$T/err")"; ok=0; }
  if [ $ok = 1 ] && ls "$T"/x.st* >/dev/null 2>&1; then t_fail "output left behind by a failed run"; ok=0; fi
  [ $ok = 1 ] && t_ok
fi

t_begin photos_captioned_on_their_own_grid
if need_data encoders/mobilenet_v1_0.25_128_quant.tflite && need_data data/coco/captions.json; then
  ENC="$DATA/encoders/mobilenet_v1_0.25_128_quant.tflite"
  COCO="$DATA/data/coco"
  ok=1
  for r in squash aspect; do
    if ! "$A" features --encoder "$ENC" --size 128 --resize $r --quiet --out "$T/feat_$r" "$COCO"/images/* \
         >/dev/null 2>"$T/err" ||
       ! "$A" train --data "$COCO/captions.json" --features "$T/feat_$r" --out "$T/coco_$r.st" --embed 16 --hidden 24 \
         --att 16 --min-count 3 --batch 20 --epochs 3 --lr 0.01 --max-val 4 --val-metric loss --quiet \
         --checkpoint-every 0 >/dev/null 2>"$T/err"; then
      t_fail "$r: features or train: $(head -2 "$T/err")"; ok=0; break
    fi
  done
  # a portrait photo (424x640: 96x128 at 128, a 4x3 grid) and the first landscape one
  portrait=$(for f in "$COCO"/images/*; do file -b "$f" | grep -q ' 424x640,' && { echo "$f"; break; }; done)
  if [ $ok = 1 ] && [ -z "$portrait" ]; then t_skip "no 424x640 photo in $COCO/images"; ok=2; fi
  if [ $ok = 1 ]; then
    "$A" info "$T/feat_aspect/shard-00000.safetensors" | grep -Eq "I32 +\[100,2\] grids" ||
      { t_fail "the cache holds no grids: $("$A" info "$T/feat_aspect/shard-00000.safetensors" | tail -3)"; ok=0; }
    "$A" info "$T/feat_squash/shard-00000.safetensors" | grep -q 'grids' && { t_fail "a squash cache with grids"; ok=0; }
  fi
  if [ $ok = 1 ]; then
    for r in squash aspect; do
      "$A" caption --model "$T/coco_$r.st" --encoder "$ENC" --json --attention --overlays "$T/ov_$r" "$portrait" \
        >"$T/cap_$r.json" 2>"$T/err" || { t_fail "$r: caption: $(head -2 "$T/err")"; ok=0; break; }
    done
  fi
  if [ $ok = 1 ] && [ -n "$py" ] && ! "$py" - "$T/cap_squash.json" "$T/cap_aspect.json" <<'PY'
import json, sys
sq, asp = (json.load(open(p)) for p in sys.argv[1:])
assert sq["grid"] == [4, 4], sq["grid"]
assert asp["grid"] == [4, 3], asp["grid"]  # the photo's own grid: 4 rows of 3
for d, n in ((sq, 16), (asp, 12)):
    assert all(len(row) == n and abs(sum(row) - 1) < 2e-3 for row in d["attention"]), (n, d["attention"][0])
PY
  then t_fail "grids or attention: $(head -c 300 "$T/cap_aspect.json")"; ok=0; fi
  stem=$(basename "${portrait%.*}")
  if [ $ok = 1 ]; then
    dims=$(file -b "$T/ov_aspect/$stem/01_"*.png | head -1 | grep -o '[0-9]* x [0-9]*')
    w=${dims%% x *} h=${dims##* x }
    # the photo at its own size above the word's band: 424 wide, 640 rows of photo
    if [ ! -s "$T/ov_aspect/$stem/sheet.png" ] || [ "${w:-0}" != 424 ] || [ "${h:-0}" -le 640 ]; then
      t_fail "overlays: ${dims:-none} $(ls "$T/ov_aspect/$stem" 2>&1 | head -3)"; ok=0
    fi
  fi
  if [ $ok = 1 ]; then # grounding and the cache's own evaluation go through the grids too
    printf '%s\tman\t0,0,0.5,1\n' "$portrait" >"$T/boxes.tsv"
    "$A" ground --boxes "$T/boxes.tsv" --model "$T/coco_aspect.st" --encoder "$ENC" --quiet >"$T/g" 2>"$T/err" ||
      { t_fail "ground: $(cat "$T/err")"; ok=0; }
    [ $ok = 1 ] && ! "$A" eval --model "$T/coco_aspect.st" --data "$COCO/captions.json" --features "$T/feat_aspect" \
      --no-meteor --quiet >/dev/null 2>"$T/err" && { t_fail "eval: $(cat "$T/err")"; ok=0; }
  fi
  [ $ok = 1 ] && t_ok
fi
t_end
