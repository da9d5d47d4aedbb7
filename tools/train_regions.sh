#!/usr/bin/env bash
# Trains the model that attends to detected objects (regions.h; models/README.md "Regions"): the
# detections of every training photo (`attncap detect`), then fine-tuning from the grid-only model on
# the same photos and caption text, each photo's detected objects beside its grid, each text caption's
# object words as pseudo-regions. Resumes after an interruption: rerun the same command.
# Usage: tools/train_regions.sh [RUN_DIR (default runs/m)] [extra `attncap train` flags]
# INIT (the starting model, default models/attncap.safetensors), NAME (RUN_DIR/NAME.safetensors), LR, EPOCHS.
# Needs RUN_DIR/flickr8k/features (tools/train_flickr8k.sh, tools/train_model.sh make them) and
# RUN_DIR/coco_train.tsv (tools/coco_split.py).
set -euo pipefail
cd "$(dirname "$0")/.."
run=${1:-runs/m}; shift || true
shared=${ATTNCAP_DATA:-../shared}
data=$shared/data
init=${INIT:-models/attncap.safetensors}
name=${NAME:-regions}     # the model: RUN_DIR/NAME.safetensors
A=${ATTNCAP:-./attncap}
ATTNCAP="$A" bash tools/detect_training_photos.sh "$run"
text="$data/text/flickr30k_captions.tsv,$data/text/coco_captions.tsv"
C=$run/coco_train.tsv F=$data/flickr30k/captions.tsv
resume=; [ -f "$run/$name.safetensors.ckpt" ] && resume=--resume
"$A" train --data "$data/flickr8k" --extra-data "$C,$C,$C,$C,$C,$C,$F,$F" --text "$text" --text-ratio 1 \
  --features "$run/flickr8k/features" --detections "$run/det/f8k.jsonl,$run/det/coco.jsonl,$run/det/f30k.jsonl" \
  --batch 64 --embed 256 --hidden 512 --att 256 --dropout 0.5 --lambda 1 --min-count 5 --ema 0.999 --beam 3 \
  --checkpoint-every 100 --fp16 --patience 5 --init "$init" --lr ${LR:-2e-4} --epochs ${EPOCHS:-2} --seed 3 \
  --val-metric loss --out "$run/$name.safetensors" --log "$run/$name.csv" $resume "$@"
