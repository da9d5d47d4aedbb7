#!/usr/bin/env bash
# The attention family side by side (issue #19, item 6) on a budget two CPU cores afford: every
# variant trained by the same `attncap train` recipe on the same Flickr8k subset and features, then
# scored on the same dev photos (BLEU-4, METEOR, CIDEr-D), grounded against our hand-drawn boxes on
# 28 dev photos (`attncap ground --data`: reference captions fed word by word; hit and mass), with
# its training wall time. A variant whose flags this build does not know is skipped with a line.
# Every step resumes: a variant whose model and scores exist is not redone.
# Usage: bash bench/variants.sh RUN_DIR [N_TRAIN (2000)] [N_DEV (250)] [EPOCHS (5)]
# Environment: VARIANTS="name=flags;..." to run others, THREADS (2).
set -euo pipefail
cd "$(dirname "$0")/.."
run=${1:?usage: bench/variants.sh RUN_DIR [N_TRAIN] [N_DEV] [EPOCHS]}
ntr=${2:-2000} ndev=${3:-250} epochs=${4:-5} threads=${THREADS:-2}
data=${ATTNCAP_DATA:-../shared}/data/flickr8k
A=./attncap
mkdir -p "$run"
# The subset as a TSV with a split column, and its photos' features at 224 (a 7x7 grid).
if [ ! -s "$run/subset.tsv" ]; then
  head -n "$ntr" "$data/Flickr_8k.trainImages.txt" | sed 's/$/\ttrain/' > "$run/names.tmp"
  head -n "$ndev" "$data/Flickr_8k.devImages.txt" | sed 's/$/\tval/' >> "$run/names.tmp"
  awk -F'\t' 'NR == FNR {split_of[$1] = $2; next}
              {name = $1; sub(/#[0-9]+$/, "", name); if (name in split_of) print name "\t" $2 "\t" split_of[name]}' \
      "$run/names.tmp" "$data/Flickr8k.token.txt" > "$run/subset.tsv.tmp"
  mv "$run/subset.tsv.tmp" "$run/subset.tsv"; rm -f "$run/names.tmp"
fi
cut -f1 "$run/subset.tsv" | sort -u | sed "s|^|$data/images/|" > "$run/photos.txt"
$A features --size 224 --fp16 --quiet --threads "$threads" --out "$run/features" --list "$run/photos.txt"
default_variants="additive=--attention additive;dot=--attention dot;scaled-dot=--attention scaled-dot;general=--attention general;cosine=--attention cosine;additive x4 heads=--heads 4;scaled-dot x4 heads=--attention scaled-dot --heads 4;hard (argmax)=--attention-mode hard;transformer=--decoder transformer"
train_help=$($A train --help 2>&1)
# A variant's directory name under RUN_DIR: its name with anything but letters, digits and - as _.
dir_name() { echo "$1" | tr -c 'a-zA-Z0-9\n-' '_'; }
IFS=';' read -r -a variants <<< "${VARIANTS:-$default_variants}"
printf '| variant | flags | BLEU-4 | METEOR | CIDEr-D | ground hit | mass | others | train wall s |\n| --- | --- | --- | --- | --- | --- | --- | --- | --- |\n'
for v in "${variants[@]}"; do
  name=${v%%=*} flags=${v#*=}
  tag=$(dir_name "$name")
  dir="$run/$tag"; mkdir -p "$dir"
  read -r -a fl <<< "$flags"
  if ! grep -q -- "${fl[0]}" <<< "$train_help"; then echo "| $name | \`$flags\` | this build has no ${fl[0]} | | | | | | |"; continue; fi
  if [ ! -s "$dir/time.txt" ]; then
    start=$(date +%s)
    $A train --data "$run/subset.tsv" --images "$data/images" --features "$run/features" "${fl[@]}" \
      --embed 128 --hidden 256 --att 128 --batch 64 --lr 1e-3 --ema 0.99 --epochs "$epochs" --patience 10 \
      --max-val "$ndev" --val-metric cider --beam 3 --checkpoint-every 0 --threads "$threads" --seed 1 \
      --out "$dir/model.safetensors" --log "$dir/train.csv" > "$dir/train.log" 2>&1
    echo $(( $(date +%s) - start )) > "$dir/time.txt"
  fi
  [ -s "$dir/eval.json" ] || $A eval --model "$dir/model.safetensors" --data "$run/subset.tsv" --images "$data/images" \
      --split val --features "$run/features" --beam 3 --json > "$dir/eval.json" 2> "$dir/eval.err"
  [ -s "$dir/ground.txt" ] || $A ground --model "$dir/model.safetensors" --boxes tests/fixtures/grounding/flickr8k_dev.tsv \
      --root "$data/images" --data "$data" --json --quiet > "$dir/ground.txt" 2> "$dir/ground.err" || true
  python3 - "$dir" "$name" "$flags" <<'PY'
import json, sys, os
d, name, flags = sys.argv[1:4]
e = json.load(open(os.path.join(d, "eval.json")))
g = {}
for line in open(os.path.join(d, "ground.txt")):
    try:
        o = json.loads(line)
    except ValueError:
        continue
    if o.get("object") == "all":  # the reference captions fed word by word: every model scores the same words
        g = {k: "%.2f" % o["references"][k] for k in ("hit", "mass", "others")}
t = open(os.path.join(d, "time.txt")).read().strip()
print("| %s | `%s` | %.1f | %.1f | %.1f | %s | %s | %s | %s |" % (name, flags, 100 * e["BLEU-4"], 100 * e["METEOR"],
      100 * e["CIDEr-D"], g.get("hit", "-"), g.get("mass", "-"), g.get("others", "-"), t))
PY
done
# The second table: what each model makes of weights forced all equal or all but one 0 (`--fix-attention`;
# the LSTM's only), and its decoder time per photo at caption time (`attncap caption --verbose` on the
# samples, beam 3, tags off; rounds interleaved across the variants so load hits them alike: median of
# ROUNDS (5), best-worst); and one contact sheet per variant of the same photo ($run/sheets/).
rounds=${ROUNDS:-5}
mkdir -p "$run/sheets"
printf '\n| variant | CIDEr-D own | all equal | all but one 0 | decoder ms per photo, median (best-worst) |\n| --- | --- | --- | --- | --- |\n'
tags=()
for v in "${variants[@]}"; do
  tag=$(dir_name "${v%%=*}")
  [ -s "$run/$tag/model.safetensors" ] && tags+=("$tag")
done
for r in $(seq "$rounds"); do
  for tag in "${tags[@]}"; do
    $A caption --model "$run/$tag/model.safetensors" --tags off --verbose --threads 1 samples/*.jpg 2>&1 >/dev/null |
      sed -n 's/.*decoder (beam [0-9]*) \([0-9.]*\) ms.*/\1/p' >> "$run/$tag/latency.txt.$r"
  done
done
for v in "${variants[@]}"; do
  name=${v%%=*}
  tag=$(dir_name "$name") dir="$run/$tag"
  [ -s "$dir/model.safetensors" ] || continue
  for f in uniform peak; do
    [ -s "$dir/eval_$f.json" ] || $A eval --model "$dir/model.safetensors" --data "$run/subset.tsv" --images "$data/images" \
        --split val --features "$run/features" --beam 3 --json --no-meteor --fix-attention $f > "$dir/eval_$f.json" 2> /dev/null || true
  done
  [ -s "$run/sheets/${tag}_dog.png" ] || { $A caption --model "$dir/model.safetensors" --tags off --quiet --sheet-only --size 512 \
      --overlays "$run/sheets/$tag" samples/dog.jpg > /dev/null && mv "$run/sheets/$tag/dog/sheet.png" "$run/sheets/${tag}_dog.png" &&
      rm -rf "$run/sheets/$tag"; }
  python3 - "$dir" "$name" "$rounds" <<'PY'
import glob, json, os, statistics, sys
d, name, rounds = sys.argv[1], sys.argv[2], int(sys.argv[3])
def cider(f):
    try:
        return "%.1f" % (100 * json.load(open(os.path.join(d, f)))["CIDEr-D"])
    except (OSError, ValueError, KeyError):
        return "-"
per_round = []
for r in range(1, rounds + 1):
    try:
        xs = [float(x) for x in open(os.path.join(d, "latency.txt.%d" % r))]
    except OSError:
        continue
    if xs:
        per_round.append(statistics.mean(xs))
lat = "%.1f (%.1f-%.1f)" % (statistics.median(per_round), min(per_round), max(per_round)) if per_round else "-"
print("| %s | %s | %s | %s | %s |" % (name, cider("eval.json"), cider("eval_uniform.json"), cider("eval_peak.json"), lat))
PY
done
rm -f "$run"/*/latency.txt.*
