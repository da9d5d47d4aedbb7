#!/usr/bin/env bash
# Redoes the shipped model (models/attncap.safetensors, models/README.md): the Flickr8k model of
# tools/train_flickr8k.sh, then joint training from it on every captioned photo we have (Flickr8k
# train, 258 of the 408 COCO photos, the 110 Flickr30k photos) and on the 199,014 captions without
# photos in ../shared/data/text; then, on dev photos, the decoding setting, the naming setting and
# the confidence's calibration; and the presence head beside it.
# Every step resumes after an interruption: rerun the same command.
# Usage: tools/train_model.sh [RUN_DIR (default runs/model)] [extra `attncap train` flags]
# RESIZE=aspect: every photo keeps its aspect ratio (`attncap features --resize aspect`), here and in the
# Flickr8k step: tools/aspect_vs_squash.sh compares such a model with the squashed recipe.
set -euo pipefail
cd "$(dirname "$0")/.."
run=${1:-runs/model}; shift || true
shared=${ATTNCAP_DATA:-../shared}
data=$shared/data
enc=models/mobilenet_v2_1.0_224_quant.tflite
[ -d "$data/flickr8k" ] || { echo "train_model: $data/flickr8k not found (set ATTNCAP_DATA)" >&2; exit 1; }
[ -f "$enc" ] || bash tools/get_encoder.sh
mkdir -p "$run"
# 1. The Flickr8k model (its features cache is reused below).
[ -f "$run/flickr8k/model.safetensors" ] && [ ! -f "$run/flickr8k/model.safetensors.ckpt" -o -f "$run/flickr8k/tune.txt" ] ||
  bash tools/train_flickr8k.sh "$run/flickr8k"
# 2. The COCO split (150 dev photos by file, 258 train) and the features of the COCO and Flickr30k photos.
python3 tools/coco_split.py "$data" "$run"
{ cat "$run/coco_photos.txt"; ls -d "$data"/flickr30k/images/*; } > "$run/extra_photos.txt"
./attncap features --encoder "$enc" --size 448 ${RESIZE:+--resize "$RESIZE"} --fp16 --flip --out "$run/flickr8k/features" \
  --list "$run/extra_photos.txt"
# 3. Joint training from the Flickr8k model, in two stages (models/README.md): the caption text next to
#    the photos (2 epochs, kept by dev loss), then the COCO photos weighted 6x and Flickr30k 2x (2 epochs).
text="$data/text/flickr30k_captions.tsv,$data/text/coco_captions.tsv"
common=(--data "$data/flickr8k" --text "$text" --text-ratio 1 --features "$run/flickr8k/features" --batch 64
        --embed 256 --hidden 512 --att 256 --dropout 0.5 --lambda 1 --min-count 5 --ema 0.999 --beam 3
        --checkpoint-every 100 --fp16 --patience 5)
resume=; [ -f "$run/text.safetensors.ckpt" ] && resume=--resume
[ -f "$run/text.safetensors" ] && [ ! -f "$run/text.safetensors.ckpt" ] ||
  ./attncap train "${common[@]}" --extra-data "$run/coco_train.tsv,$data/flickr30k/captions.tsv" \
    --init "$run/flickr8k/model.safetensors" --lr 3e-4 --epochs 2 --val-metric loss \
    --out "$run/text.safetensors" --log "$run/text.csv" $resume "$@"
C=$run/coco_train.tsv F=$data/flickr30k/captions.tsv
resume=; [ -f "$run/model.safetensors.ckpt" ] && resume=--resume
./attncap train "${common[@]}" --extra-data "$C,$C,$C,$C,$C,$C,$F,$F" --init "$run/text.safetensors" --lr 2e-4 \
  --epochs 2 --seed 2 --val-metric cider --out "$run/model.safetensors" --log "$run/train.csv" $resume "$@"
# The words a caption may say twice: those people repeat (>= 5 % of the captions using them) and the
# objects' (models/README.md, "Words said twice"); then the beam and length exponent with that rule.
./attncap tune --model "$run/model.safetensors" \
  --repeats "$data/flickr8k,$run/coco_train.tsv,$data/flickr30k/captions.tsv,$data/text/flickr30k_captions.tsv,$data/text/coco_captions.tsv"
./attncap tune --model "$run/model.safetensors" --data "$data/flickr8k" --features "$run/flickr8k/features" \
  --beams 3 --alphas 0.4,0.6,0.75,1 --metric bleu4 --write | tee "$run/tune.txt"
# 4. How tags become constraints, on dev photos (COCO dev + 300 Flickr8k dev): the grid is printed for
#    the record; the setting chosen from it (models/README.md) is written into the model.
# 4a. The presence head (presence.h) beside the model, fitted on the training photos' features: Flickr8k
#     train and the COCO and Flickr30k photos we train on (their captions marked train).
{ awk -F'\t' '{print $1"\t"$2"\ttrain"}' "$run/coco_train.tsv"; awk -F'\t' '{print $1"\t"$2"\ttrain"}' "$data/flickr30k/captions.tsv"; } \
  > "$run/presence_train.tsv"
./attncap presence --features "$run/flickr8k/features" --data "$data/flickr8k" --data "$run/presence_train.tsv" \
  --out "$run/presence.safetensors" --quiet | tee "$run/presence.txt"
cp models/imagenet_words.tsv "$run/" # the tag table beside the model, where caption looks for it
# 4b. Each tag word's precision (tag_precision.h), from the tags of the training photos (the encoder
#     never trained on them): Flickr8k train, the COCO photos we train on, the Flickr30k photos.
{ sed "s#^#$data/flickr8k/images/#" "$data/flickr8k/Flickr_8k.trainImages.txt"
  cut -f1 "$run/coco_train.tsv" | sort -u | while read -r name; do ls "$data"/coco*/images/"$name"; done
  ls -d "$data"/flickr30k/images/*; } > "$run/train_photos.txt"
[ -f "$run/train_tags.jsonl" ] && [ "$(wc -l < "$run/train_tags.jsonl")" = "$(wc -l < "$run/train_photos.txt")" ] ||
  ./attncap caption --model "$run/model.safetensors" --json --quiet - < "$run/train_photos.txt" > "$run/train_tags.jsonl"
./attncap calibrate --tags --refs "$data/flickr8k" --results "$run/train_tags.jsonl" --refs "$run/coco_train.tsv" \
  --results "$run/train_tags.jsonl" --refs "$data/flickr30k/captions.tsv" --results "$run/train_tags.jsonl" \
  --write "$run/model.safetensors" | tee "$run/tag_precision.txt"
THRESHOLDS=${THRESHOLDS:-"0.2 0.3 0.4 0.5"} DROPS=${DROPS:-"1.0 1.5 2.5"} bash tools/tune_naming.sh "$run/model.safetensors" "$run" 300 |
  tee "$run/naming.txt"
./attncap tune --model "$run/model.safetensors" --naming "${NAMING:-{\"threshold\":0.2,\"max_tags\":2,\"max_drop\":1.0,\"absent\":0.2,\"absent_object\":0.01,\"trust_logprob\":-1.035,\"presence_absent\":0.1,\"presence_ratio\":1,\"trust_seen\":300,\"rare_max_drop\":1.5,\"tag_objects_only\":1,\"tag_min_precision\":0.15}}"
# 5. The confidence, calibrated on the same dev photos captioned with that setting.
./attncap caption --model "$run/model.safetensors" --json --quiet - < "$run/naming/coco_dev.txt" > "$run/calib.coco.jsonl"
./attncap caption --model "$run/model.safetensors" --json --quiet - < "$run/naming/f8k_dev.txt" > "$run/calib.f8k.jsonl"
./attncap calibrate --refs "$run/coco_dev.json" --results "$run/calib.coco.jsonl" \
  --refs "$data/flickr8k" --results "$run/calib.f8k.jsonl" --write "$run/model.safetensors" | tee "$run/calibrate.txt"
