#!/usr/bin/env bash
# install_models.sh DEST: installs the shipped model and everything it needs into DEST (make install:
# $(PREFIX)/share/attncap, where the installed attncap looks for its model; see src/base/locate.c).
#   MODEL_FILES: committed in models/; a missing one is an error (the model would caption differently).
#   LICENSED: third-party files, from models/ (tools/get_encoder.sh puts the encoder there) or
#     $ATTNCAP_DATA/encoders or ../shared/encoders, installed only when present and only with their
#     licence's text beside them (from where the file is, else Debian's /usr/share/common-licenses).
#     A new companion is one more line in these lists.
set -euo pipefail
cd "$(dirname "$0")/.."
dest=${1:?usage: install_models.sh DEST}
MODEL_FILES=(attncap.safetensors imagenet_words.tsv presence.safetensors)
# file:licence (the licence under which we may redistribute it)
LICENSED=(
  mobilenet_v2_1.0_224_quant.tflite:LICENSE-Apache-2.0 # the encoder (TensorFlow hosted models)
  yolox_nano.tflite:LICENSE-Apache-2.0                 # the detector (YOLOX, Megvii)
  coco_labels.txt:LICENSE-Apache-2.0                   # the detector's class names
)
install -d "$dest"
for f in "${MODEL_FILES[@]}"; do
  [ -f "models/$f" ] || { echo "install_models: models/$f is missing" >&2; exit 1; }
  install -m 644 "models/$f" "$dest/$f"
done
# where a third-party file is: models/ first, then the shared data's encoders/
find_file() {
  local d
  for d in models "${ATTNCAP_DATA:-}/encoders" ../shared/encoders; do
    [ "$d" != /encoders ] && [ -f "$d/$1" ] && { echo "$d/$1"; return 0; }
  done
  return 1
}
for entry in "${LICENSED[@]}"; do
  f=${entry%%:*} lic=${entry#*:}
  if ! src=$(find_file "$f"); then echo "install_models: $f not found (models/ or ../shared/encoders): not installed" >&2; continue; fi
  deb=/usr/share/common-licenses/${lic#LICENSE-}
  if ! licsrc=$( [ -f "$(dirname "$src")/$lic" ] && echo "$(dirname "$src")/$lic" || find_file "$lic" ||
                 { [ -f "$deb" ] && echo "$deb"; }); then
    echo "install_models: $f: no $lic beside it: not installed" >&2; continue
  fi
  install -m 644 "$src" "$dest/$f"
  install -m 644 "$licsrc" "$dest/$lic"
done
