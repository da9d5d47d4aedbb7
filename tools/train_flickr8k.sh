#!/usr/bin/env bash
# Redoes the shipped English model from ../shared/data/flickr8k: features of the 6,000 train and
# 1,000 dev photos (MobileNetV2's last conv at 448x448: a 14x14 grid; plus mirrored copies for
# augmentation), `attncap train` on train with early stopping on dev (beam-3 CIDEr-D of the weight
# average), `attncap tune` for the beam width and length normalisation on dev, then dev scores.
# Every step resumes after an interruption: rerun the same command.
# Usage: tools/train_flickr8k.sh [RUN_DIR (default runs/flickr8k)] [extra `attncap train` flags]
# RESIZE=aspect: the photos keep their aspect ratio (`attncap features --resize aspect`; Flickr8k's photos
# are square already, so only the recorded policy changes). EPOCHS: at most this many (16).
# PRECISION=int8: the encoder's features from its integer path (`attncap features --precision int8`).
set -euo pipefail
cd "$(dirname "$0")/.."
run=${1:-runs/flickr8k}; shift || true
data=${ATTNCAP_DATA:-../shared}/data/flickr8k
enc=models/mobilenet_v2_1.0_224_quant.tflite
[ -d "$data" ] || { echo "train_flickr8k: $data not found (set ATTNCAP_DATA)" >&2; exit 1; }
[ -f "$enc" ] || bash tools/get_encoder.sh
mkdir -p "$run"
cat "$data/Flickr_8k.trainImages.txt" "$data/Flickr_8k.devImages.txt" > "$run/photos.txt"
# 14,000 encodings at 448 (~30 min here); 6.6 GB on disk, 7 GB in memory while training.
./attncap features --encoder "$enc" --size 448 ${RESIZE:+--resize "$RESIZE"} ${PRECISION:+--precision "$PRECISION"} --fp16 --flip --out "$run/features" \
  --list "$run/photos.txt" --root "$data/images"
resume=; [ -f "$run/model.safetensors.ckpt" ] && resume=--resume
# The shipped configuration (models/README.md): E=256, H=512, A=256 keeps the F16 file under 16 MiB.
./attncap train --data "$data" --features "$run/features" --out "$run/model.safetensors" \
  --batch 64 --embed 256 --hidden 512 --att 256 --dropout 0.5 --lambda 1 --min-count 5 --lr 4e-4 \
  --ema 0.999 --val-metric cider --beam 3 --epochs ${EPOCHS:-16} --patience 4 --fp16 \
  --log "$run/train.csv" --plot "$run/train.png" $resume "$@"
[ -z "${TRAIN_ONLY:-}" ] || exit 0 # a stage of a longer recipe (tools/train_pointer_model.sh): no tune, no scores
./attncap tune --model "$run/model.safetensors" --data "$data" --features "$run/features" \
  --beams 1,3,5 --alphas 0.75,1,1.25 --metric bleu4+meteor --write | tee "$run/tune.txt"
for beam in 1 3; do
  ./attncap eval --model "$run/model.safetensors" --data "$data" --split val --features "$run/features" \
    --beam $beam --json > "$run/dev_beam$beam.json"
  echo "dev, beam $beam:"; cat "$run/dev_beam$beam.json"
done
