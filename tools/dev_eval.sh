#!/usr/bin/env bash
# The dev protocol (models/README.md): one model (and caption flags) scored on every dev set we have:
#   Flickr8k dev (1,000 photos), the 27 everyday photos of ../shared/data/everyday_dev (main object
#   named; named objects absent) and COCO dev (the 150 of models/coco_dev_photos.txt) are photos no
#   model trained on; the recipe's stage 2 trains on the 110 Flickr30k photos and the other 258 COCO
#   photos, so "flickr30k 110" and "coco 408" check fit, not generalisation (and the detector trained
#   on COCO 2017 train, which holds most COCO photos: they flatter it). Flickr8k dev chooses the
#   recipe's length exponent and absent priors.
# Usage: tools/dev_eval.sh OUT_DIR MODEL [caption flags...]   (prints one summary block; JSONL kept in OUT_DIR)
set -euo pipefail
cd "$(dirname "$0")/.."
out=$1 model=$2; shift 2
data=${ATTNCAP_DATA:-../shared}/data
mkdir -p "$out"
A=${ATTNCAP:-./attncap}
cap() { # NAME [flags] < photo list
  local name=$1; shift
  # already done (a rerun): read the list anyway, or the writer's SIGPIPE fails the pipeline
  if [ -s "$out/$name.jsonl" ]; then cat >/dev/null; return 0; fi
  "$A" caption --model "$model" --json --quiet "$@" - > "$out/$name.jsonl.tmp"
  mv "$out/$name.jsonl.tmp" "$out/$name.jsonl"
}
sed "s#^#$data/flickr8k/images/#" "$data/flickr8k/Flickr_8k.devImages.txt" | cap f8k_dev "$@"
ls -d "$data"/flickr30k/images/* | cap f30k "$@"
ls -d "$data"/everyday_dev/images/* | cap everyday "$@"
ls -d "$data"/coco/images/* "$data"/coco_extra/images/* | cap coco "$@"
[ -s "$out/coco408.tsv" ] || python3 - "$data" > "$out/coco408.tsv" <<'PY'
import json, sys
for sub in ("coco", "coco_extra"):
    d = json.load(open("%s/%s/captions.json" % (sys.argv[1], sub)))
    names = {i["id"]: i["file_name"] for i in d["images"]}
    for a in d["annotations"]:
        print("%s\t%s" % (names[a["image_id"]], " ".join(a["caption"].split())))
PY
scores() { grep -E '^(BLEU-4|CIDEr-D|objects|CHAIR-i|novel)' | sed -E 's/objects +precision ([0-9.]+) recall ([0-9.]+) F1 ([0-9.]+).*/objects P \1 R \2 F1 \3/; s/ \(.*//' | tr -s ' ' | paste -sd ';' ; }
echo "model $model ${*:-}"
echo "flickr8k dev:  $("$A" eval --refs "$data/flickr8k" --results "$out/f8k_dev.jsonl" | scores)"
echo "flickr30k 110: $("$A" eval --refs "$data/flickr30k/captions.tsv" --results "$out/f30k.jsonl" | scores)"
echo "coco 408:      $("$A" eval --refs "$out/coco408.tsv" --results "$out/coco.jsonl" --novel-from "$data/flickr8k" | scores)"
grep -F -f models/coco_dev_photos.txt "$out/coco.jsonl" > "$out/coco_dev.jsonl"
grep -F -f models/coco_dev_photos.txt "$out/coco408.tsv" > "$out/coco_dev.tsv"
echo "coco dev 150:  $("$A" eval --refs "$out/coco_dev.tsv" --results "$out/coco_dev.jsonl" --novel-from "$data/flickr8k" | scores)"
echo "everyday 27:   $("${EVERYDAY_EVAL:-build/tools/everyday_eval}" "$data/everyday_dev/labels.tsv" "$out/everyday.jsonl" | tail -1)"
