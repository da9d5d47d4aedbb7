#!/usr/bin/env bash
# Chooses how tags become constraints (naming.h) for a model on dev photos: captions the COCO dev
# photos (tools/coco_split.py) and the first N Flickr8k dev photos with each setting of the grid,
# scores them (CIDEr-D, BLEU-4, object F1 and hallucination), and prints one line per setting.
# Usage: tools/tune_naming.sh MODEL RUN_DIR [N_FLICKR8K (default 300)]
# Grid: THRESHOLDS="0.3 0.5 0.7" DROPS="0.4 0.8" (environment). Each setting is laid over the model's
# "naming" record through ATTNCAP_NAMING (tag_flags.h; the CLI has no flags for the numbers); the chosen
# one is recorded with attncap tune --model MODEL --naming JSON.
set -euo pipefail
cd "$(dirname "$0")/.."
model=$1 run=$2 nf=${3:-300}
data=${ATTNCAP_DATA:-../shared}/data
mkdir -p "$run/naming"
head -n "$nf" "$data/flickr8k/Flickr_8k.devImages.txt" | sed "s|^|$data/flickr8k/images/|" > "$run/naming/f8k_dev.txt"
python3 -c "import json,sys; d=json.load(open('$run/coco_dev.json')); print('\n'.join(im['file_name'] for im in d['images']))" |
  while read -r f; do for s in coco coco_extra; do [ -f "$data/$s/images/$f" ] && echo "$data/$s/images/$f"; done; done > "$run/naming/coco_dev.txt"
score() { # $1 results prefix
  ./attncap eval --refs "$run/coco_dev.json" --results "$1.coco.jsonl" --no-meteor --json --novel-from "$data/flickr8k" > "$1.coco.json"
  ./attncap eval --refs "$data/flickr8k" --results "$1.f8k.jsonl" --no-meteor --json > "$1.f8k.json"
  python3 - "$1" <<'PY'
import json, sys
c = json.load(open(sys.argv[1] + ".coco.json")); f = json.load(open(sys.argv[1] + ".f8k.json"))
o = c["objects"]
print("coco CIDEr-D %.3f BLEU-4 %.3f obj P %.3f R %.3f F1 %.3f halluc %.3f novel R %.3f | f8k CIDEr-D %.3f BLEU-4 %.3f"
      % (c["CIDEr-D"], c["BLEU-4"], o["precision"], o["recall"], o["F1"], o["CHAIR-i"], o.get("novel", {}).get("recall", float("nan")),
         f["CIDEr-D"], f["BLEU-4"]))
PY
}
run_one() { # name, naming record laid over the model's (ATTNCAP_NAMING), caption flags...
  local name=$1 naming=$2; shift 2
  local p="$run/naming/$name"
  [ -s "$p.coco.jsonl" ] || ATTNCAP_NAMING=$naming ./attncap caption --model "$model" --json --quiet "$@" - < "$run/naming/coco_dev.txt" > "$p.coco.jsonl"
  [ -s "$p.f8k.jsonl" ] || ATTNCAP_NAMING=$naming ./attncap caption --model "$model" --json --quiet "$@" - < "$run/naming/f8k_dev.txt" > "$p.f8k.jsonl"
  printf '%-22s ' "$name"; score "$p"
}
run_one off '' --tags off
for t in ${THRESHOLDS:-0.3 0.5 0.7}; do
  for d in ${DROPS:-0.4 0.8}; do
    run_one "t${t}_d${d}" "{\"threshold\":$t,\"max_drop\":$d}" --tags auto
  done
done
