#!/usr/bin/env bash
# Photos squashed to a square against photos that keep their aspect ratio (issue #19 item 2), on dev
# photos: the COCO dev photos of tools/coco_split.py (150, of which 105 are not square: mostly 640x480
# and 640x427 originals) and the first N Flickr8k dev photos (224x224 in ../shared: both recipes see
# the same pixels there, so those scores show what the change costs where shape cannot help).
# Each model captions the photos with the plain beam search (--tags off) and as shipped (tags), and
# `attncap eval` scores them; one line per model and setting.
# Usage: tools/aspect_vs_squash.sh [RUN_DIR (runs/aspect)] [SQUASH_MODEL (models/attncap.safetensors)] [ASPECT_MODEL]
#   ASPECT_MODEL absent: trained first, the shipped recipe with aspect-kept photos
#     (RESIZE=aspect tools/train_model.sh RUN_DIR/model: the Flickr8k model, then the joint stages; the
#     shipped recipe's recorded times, models/README.md: 28 + 91 min, then 15 + 42 + 34 min on 2 cores);
#   ASPECT_MODEL "relabel": no training: the squash model's own weights, photos kept at their aspect
#     ratio at caption time only (its encoder identity rewritten; what a squash-trained model makes of
#     the masked grids).
#   ASPECT_MODEL "finetune": both arms trained alike from the squash model's weights, one epoch of the
#     recipe's last stage (tools/train_model.sh: Flickr8k, COCO 6x, Flickr30k 2x, the text; lr 1e-4),
#     one on squashed photos and one on photos at their aspect ratio (its start relabelled); each gets
#     the squash model's naming, confidence and presence head (~35 min per arm on 2 cores, 2 x 7,518
#     photos' features at 448 first). MAX_STEPS (environment) stops each arm early (a smoke run).
# N_FLICKR8K=300 (environment) sets N; 0 skips Flickr8k.
set -euo pipefail
cd "$(dirname "$0")/.."
run=${1:-runs/aspect} squash=${2:-models/attncap.safetensors} aspect=${3:-}
data=${ATTNCAP_DATA:-../shared}/data
nf=${N_FLICKR8K:-300}
mkdir -p "$run"
# rewrite_meta IN OUT [FROM]: a copy of the safetensors file IN (a model or a presence head), the
# weights untouched: without FROM, its encoder identity says "aspect kept" (AC_ENCODER_ASPECT_TEXT);
# with FROM, FROM's naming and confidence records replace its own.
rewrite_meta() {
  python3 - "$@" <<'PY'
import json, struct, sys
def read(p):
    b = open(p, "rb").read(); n = struct.unpack("<Q", b[:8])[0]
    return json.loads(b[8:8 + n]), b[8 + n:]
h, body = read(sys.argv[1]); meta = h["__metadata__"]
if len(sys.argv) > 3:
    src = read(sys.argv[3])[0]["__metadata__"]
    meta.update({k: src[k] for k in ("naming", "confidence") if k in src})
else:
    enc = json.loads(meta["encoder"])
    enc["resize"] = "aspect kept, antialiased bilinear, long side at size, grid padded"  # AC_ENCODER_ASPECT_TEXT
    meta["encoder"] = json.dumps(enc, separators=(",", ":"))
hb = json.dumps(h, separators=(",", ":")).encode()
hb += b" " * ((8 - len(hb) % 8) % 8)
open(sys.argv[2], "wb").write(struct.pack("<Q", len(hb)) + hb + body)
PY
}
if [ -z "$aspect" ]; then
  RESIZE=aspect bash tools/train_model.sh "$run/model"
  aspect=$run/model/model.safetensors
elif [ "$aspect" = relabel ]; then
  aspect=$run/relabelled.safetensors
  rewrite_meta "$squash" "$aspect"
elif [ "$aspect" = finetune ]; then
  python3 tools/coco_split.py "$data" "$run" >/dev/null
  { cat "$run/coco_photos.txt"; ls -d "$data"/flickr30k/images/* "$data"/flickr8k/images/*; } > "$run/photos.txt"
  C=$run/coco_train.tsv F=$data/flickr30k/captions.tsv
  for r in squash aspect; do
    ./attncap features --encoder "$(dirname "$squash")/mobilenet_v2_1.0_224_quant.tflite" --size 448 --resize $r --fp16 \
      --quiet --out "$run/feat_$r" --list "$run/photos.txt"
    d=$run/ft_$r; mkdir -p "$d"
    init=$squash; [ $r = aspect ] && { init=$run/relabelled.safetensors; rewrite_meta "$squash" "$init"; }
    if [ ! -f "$d/model.safetensors" ] || [ -f "$d/model.safetensors.ckpt" ]; then
      resume=; [ -f "$d/model.safetensors.ckpt" ] && resume=--resume
      ./attncap train --data "$data/flickr8k" --text "$data/text/flickr30k_captions.tsv,$data/text/coco_captions.tsv" \
        --text-ratio 1 --features "$run/feat_$r" --batch 64 --embed 256 --hidden 512 --att 256 --dropout 0.5 --lambda 1 \
        --min-count 5 --ema 0.999 --beam 3 --checkpoint-every 100 --fp16 --patience 5 \
        --extra-data "$C,$C,$C,$C,$C,$C,$F,$F" --init "$init" --lr 1e-4 --epochs 1 --seed 3 --val-metric cider \
        ${MAX_STEPS:+--max-steps $MAX_STEPS} --quiet --out "$d/model.safetensors" --log "$d/train.csv" $resume
      rm -f "$d/model.safetensors.ckpt"
    fi
    # the squash model's naming and confidence, its presence head (relabelled for the aspect arm) beside
    rewrite_meta "$d/model.safetensors" "$d/attncap.safetensors" "$squash"
    head=$(dirname "$squash")/presence.safetensors
    if [ -f "$head" ]; then if [ $r = aspect ]; then rewrite_meta "$head" "$d/presence.safetensors"; else cp "$head" "$d/"; fi; fi
  done
  squash=$run/ft_squash/attncap.safetensors aspect=$run/ft_aspect/attncap.safetensors
fi
for m in "$squash" "$aspect"; do # the tags' table, beside each model
  [ -f "$(dirname "$m")/imagenet_words.tsv" ] || cp models/imagenet_words.tsv "$(dirname "$m")/"
done
python3 tools/coco_split.py "$data" "$run" >/dev/null
python3 -c "import json; d=json.load(open('$run/coco_dev.json')); print('\n'.join(im['file_name'] for im in d['images']))" |
  while read -r f; do for s in coco coco_extra; do [ -f "$data/$s/images/$f" ] && echo "$data/$s/images/$f"; done; done \
  > "$run/coco_dev.txt"
head -n "$nf" "$data/flickr8k/Flickr_8k.devImages.txt" | sed "s|^|$data/flickr8k/images/|" > "$run/f8k_dev.txt"
for m in squash aspect; do
  model=$squash; [ $m = aspect ] && model=$aspect
  for tags in off auto; do
    p=$run/$m.$tags
    [ -s "$p.coco.jsonl" ] || ./attncap caption --model "$model" --json --quiet --tags $tags - < "$run/coco_dev.txt" > "$p.coco.jsonl"
    ./attncap eval --refs "$run/coco_dev.json" --results "$p.coco.jsonl" --json --novel-from "$data/flickr8k" > "$p.coco.json"
    if [ "$nf" -gt 0 ]; then
      [ -s "$p.f8k.jsonl" ] || ./attncap caption --model "$model" --json --quiet --tags $tags - < "$run/f8k_dev.txt" > "$p.f8k.jsonl"
      ./attncap eval --refs "$data/flickr8k" --results "$p.f8k.jsonl" --json > "$p.f8k.json"
    fi
    python3 - "$p" "$m" "$tags" "$nf" <<'PY'
import json, os, sys
p, m, tags, nf = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])
c = json.load(open(p + ".coco.json")); o = c["objects"]
line = "%-6s tags %-4s COCO dev BLEU-4 %.3f METEOR %.3f CIDEr-D %.3f objects F1 %.3f CHAIR-i %.3f" % (
    m, tags, c["BLEU-4"], c["METEOR"], c["CIDEr-D"], o["F1"], o["CHAIR-i"])
if nf > 0:
    f = json.load(open(p + ".f8k.json"))
    line += " | Flickr8k dev (%d) BLEU-4 %.3f METEOR %.3f CIDEr-D %.3f" % (nf, f["BLEU-4"], f["METEOR"], f["CIDEr-D"])
print(line)
PY
  done
done
