#!/usr/bin/env bash
# Redoes the shipped English model from ../shared/data/flickr8k: features of the 6,000 train and
# 1,000 dev photos (MobileNetV2, 224x224 as the photos are, plus mirrored copies for augmentation),
# then `attncap train` on train with early stopping on dev, then dev scores for beam 1 and 3.
# Both steps resume after an interruption: rerun the same command.
# Usage: tools/train_flickr8k.sh [RUN_DIR (default runs/flickr8k)] [extra `attncap train` flags]
set -euo pipefail
cd "$(dirname "$0")/.."
run=${1:-runs/flickr8k}; shift || true
data=${ATTNCAP_DATA:-../shared}/data/flickr8k
enc=models/mobilenet_v2_1.0_224_quant.tflite
[ -d "$data" ] || { echo "train_flickr8k: $data not found (set ATTNCAP_DATA)" >&2; exit 1; }
[ -f "$enc" ] || bash tools/get_encoder.sh
mkdir -p "$run"
cat "$data/Flickr_8k.trainImages.txt" "$data/Flickr_8k.devImages.txt" > "$run/photos.txt"
./attncap features --encoder "$enc" --size 224 --fp16 --flip --out "$run/features" \
  --list "$run/photos.txt" --root "$data/images"
resume=; [ -f "$run/model.safetensors.ckpt" ] && resume=--resume
# The shipped configuration (models/README.md): E=256, H=512, A=256 keeps the F16 file under 16 MiB.
./attncap train --data "$data" --features "$run/features" --out "$run/model.safetensors" \
  --batch 64 --embed 256 --hidden 512 --att 256 --dropout 0.5 --lambda 1 --min-count 5 --lr 4e-4 \
  --val-metric cider --epochs ${EPOCHS:-30} --fp16 \
  --log "$run/train.csv" --plot "$run/train.png" $resume "$@"
for beam in 1 3; do
  ./attncap eval --model "$run/model.safetensors" --data "$data" --split val --features "$run/features" \
    --beam $beam --json > "$run/dev_beam$beam.json"
  echo "dev, beam $beam:"; cat "$run/dev_beam$beam.json"
done
