#!/usr/bin/env bash
# Puts the COCO detector the shipped model attends to (YOLOX-nano, Megvii's Apache-2.0 weights as a
# float32 TFLite flatbuffer; ../shared/README.md says where it comes from) and its 80 class names at
# models/yolox_nano.tflite and models/coco_labels.txt: copied from $ATTNCAP_DATA/encoders or
# ../shared/encoders. Each file's SHA-256 must be the one below; a different file is refused, never
# used silently. (Not committed: see .gitignore.)
set -euo pipefail
cd "$(dirname "$0")/.."
mkdir -p models
get() { # NAME SHA256
  local name=$1 want=$2 dest=models/$1 dir
  check() { [ "$(sha256sum "$1" | cut -d' ' -f1)" = "$want" ]; }
  if [ -f "$dest" ] && check "$dest"; then echo "detector: $dest (SHA-256 ok)"; return 0; fi
  for dir in "${ATTNCAP_DATA:-}" ../shared; do
    [ -n "$dir" ] && [ -f "$dir/encoders/$name" ] || continue
    if check "$dir/encoders/$name"; then
      cp "$dir/encoders/$name" "$dest.tmp" && mv "$dest.tmp" "$dest"
      echo "detector: $dest (copied from $dir/encoders, SHA-256 ok)"; return 0
    fi
    echo "get_detector: $dir/encoders/$name has the wrong SHA-256; refusing it" >&2; return 1
  done
  echo "get_detector: $name not found: put it (SHA-256 $want; YOLOX-nano converted to TFLite, from the public" \
       "SyedFarhan110/tflite-models repository) in $(pwd)/models/, or in \$ATTNCAP_DATA/encoders or ../shared/encoders" \
       "beside the repository, then run make models again" >&2
  return 1
}
get yolox_nano.tflite 38dc5c7897245f2a3e901950090e5e952c9e645ba82a1c50bff2def8c750716d
get coco_labels.txt bd17f1ee35d5f3c862a4894605855abbb9dda4b0621fdb0ac4c2c8c7bb7e730a
