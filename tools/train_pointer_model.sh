#!/usr/bin/env bash
# Redoes the shipped model (models/attncap.safetensors; models/README.md, "This model: how it was
# made"): the detections of the training photos; stage 1, the gated copy model from scratch on Flickr8k
# train with its photos' regions; stage 2, the pointer on every captioned photo we have and the captions
# without photos, from stage 1's weights; then, on Flickr8k dev, the words it may repeat, beam 3's
# length exponent, the absent objects' priors, and the confidence's calibration (with COCO dev).
# Every step resumes after an interruption: rerun the same command. About 2.5 hours on 2 cores
# (30 min of Flickr8k features, 6 of detections, 80 of stage 1, 15 of COCO and Flickr30k features,
# 26 of stage 2, 5 of settings).
# Usage: tools/train_pointer_model.sh [RUN_DIR (default runs/pointer)] [extra `attncap train` flags for both stages]
# STAGE1_EPOCHS (16, early stopping on dev CIDEr-D) and STAGE2_EPOCHS (4) shorten a trial run.
# PRECISION=int8 trains on the integer path's features (the model then captions with it by default).
set -euo pipefail
cd "$(dirname "$0")/.."
run=${1:-runs/pointer}; shift || true
shared=${ATTNCAP_DATA:-../shared}
data=$shared/data
enc=models/mobilenet_v2_1.0_224_quant.tflite
[ -d "$data/flickr8k" ] || { echo "train_pointer_model: $data/flickr8k not found (set ATTNCAP_DATA)" >&2; exit 1; }
[ -f "$enc" ] || bash tools/get_encoder.sh
[ -f models/yolox_nano.tflite ] || bash tools/get_detector.sh
mkdir -p "$run"
# 1. The COCO split (150 dev photos by file, 258 train) and every training photo's detections.
python3 tools/coco_split.py "$data" "$run"
bash tools/detect_training_photos.sh "$run"
# 2. Stage 1: Flickr8k's features, then the gated copy model (copy 1) from scratch with the regions.
[ -f "$run/flickr8k/model.safetensors" ] && [ ! -f "$run/flickr8k/model.safetensors.ckpt" ] ||
  TRAIN_ONLY=1 EPOCHS=${STAGE1_EPOCHS:-16} bash tools/train_flickr8k.sh "$run/flickr8k" \
    --detections "$run/det/f8k.jsonl" --copy "$@"
# 3. The COCO and Flickr30k photos' features, then stage 2: the pointer (copy 2) from stage 1.
{ cat "$run/coco_photos.txt"; ls -d "$data"/flickr30k/images/*; } > "$run/extra_photos.txt"
./attncap features --encoder "$enc" --size 448 ${PRECISION:+--precision "$PRECISION"} --fp16 --flip --out "$run/flickr8k/features" \
  --list "$run/extra_photos.txt"
[ -f "$run/model.safetensors" ] && [ ! -f "$run/model.safetensors.ckpt" ] ||
  INIT="$run/flickr8k/model.safetensors" NAME=model LR=3e-4 EPOCHS=${STAGE2_EPOCHS:-4} \
    bash tools/train_regions.sh "$run" --pointer --val-metric cider "$@"
# 4. On Flickr8k dev (models/README.md): the words a caption may say twice (from the training captions),
#    beam 3's length exponent, the absent objects' priors; then the confidence, calibrated on the
#    captions of Flickr8k dev and COCO dev.
m=$run/model.safetensors det=$run/det/f8k.jsonl feat=$run/flickr8k/features
./attncap tune --model "$m" \
  --repeats "$data/flickr8k,$run/coco_train.tsv,$data/flickr30k/captions.tsv,$data/text/flickr30k_captions.tsv,$data/text/coco_captions.tsv"
./attncap tune --model "$m" --data "$data/flickr8k" --features "$feat" --detections "$det" \
  --beams 3 --alphas 0.4,0.6,0.75,1 --metric bleu4 --write | tee "$run/tune.txt"
./attncap tune --absent --write --model "$m" --data "$data/flickr8k" --features "$feat" --detections "$det" |
  tee "$run/absent.txt"
sed "s#^#$data/flickr8k/images/#" "$data/flickr8k/Flickr_8k.devImages.txt" |
  ./attncap caption --model "$m" --json --quiet - > "$run/calib.f8k.jsonl"
python3 -c 'import json, sys; print("\n".join(i["file_name"] for i in json.load(open(sys.argv[1]))["images"]))' \
  "$run/coco_dev.json" | while read -r n; do ls "$data"/coco*/images/"$n"; done |
  ./attncap caption --model "$m" --json --quiet - > "$run/calib.coco.jsonl"
./attncap calibrate --refs "$run/coco_dev.json" --results "$run/calib.coco.jsonl" \
  --refs "$data/flickr8k" --results "$run/calib.f8k.jsonl" --write "$m" | tee "$run/calibrate.txt"
echo "train_pointer_model: $m (copy it to models/attncap.safetensors to ship it)"
