#!/usr/bin/env bash
# The detections of every photo the regions models train or choose settings on (`attncap detect
# --min-score 0.1`, regions.h): RUN/det/f8k.jsonl (Flickr8k train and dev), coco.jsonl (the COCO photos
# of RUN/coco_train.tsv, tools/coco_split.py) and f30k.jsonl (the 110 Flickr30k photos). About 6
# minutes for 7,518 photos on one thread; a finished file is kept, an interrupted one redone.
# Usage: tools/detect_training_photos.sh RUN_DIR
set -euo pipefail
cd "$(dirname "$0")/.."
run=$1
data=${ATTNCAP_DATA:-../shared}/data
A=${ATTNCAP:-./attncap}
mkdir -p "$run/det"
detect() { # NAME: the photos listed in $run/det/NAME_photos.txt
  [ -f "$run/det/$1.jsonl" ] && return 0
  "$A" detect --min-score 0.1 - < "$run/det/$1_photos.txt" > "$run/det/$1.jsonl.tmp"
  mv "$run/det/$1.jsonl.tmp" "$run/det/$1.jsonl"
}
sed "s#^#$data/flickr8k/images/#" "$data/flickr8k/Flickr_8k.trainImages.txt" "$data/flickr8k/Flickr_8k.devImages.txt" \
  > "$run/det/f8k_photos.txt"
cut -f1 "$run/coco_train.tsv" | sort -u | while read -r n; do ls "$data"/coco*/images/"$n"; done > "$run/det/coco_photos.txt"
ls -d "$data"/flickr30k/images/* > "$run/det/f30k_photos.txt"
for s in f8k coco f30k; do detect $s; done
