#!/usr/bin/env bash
# Puts the COCO detector the shipped model attends to (YOLOX-nano, Megvii's Apache-2.0 weights as a
# float32 TFLite flatbuffer; ../shared/README.md says where it comes from) and its 80 class names at
# models/yolox_nano.tflite and models/coco_labels.txt: copied from $ATTNCAP_DATA/encoders or
# ../shared/encoders. Each file's SHA-256 must be the one below; a different file is refused, never
# used silently. (Not committed: see .gitignore.)
set -euo pipefail
cd "$(dirname "$0")/.."
. tools/shared_copy.sh
get() { # NAME SHA256
  local rc=0
  copy_from_shared detector "$1" "$2" || rc=$?
  [ $rc = 2 ] || return $rc
  echo "get_detector: $1 not found: put it (SHA-256 $2; YOLOX-nano converted to TFLite, from the public" \
       "SyedFarhan110/tflite-models repository) in $(pwd)/models/, or in \$ATTNCAP_DATA/encoders or ../shared/encoders" \
       "beside the repository, then run make models again" >&2
  return 1
}
get yolox_nano.tflite 38dc5c7897245f2a3e901950090e5e952c9e645ba82a1c50bff2def8c750716d
get coco_labels.txt bd17f1ee35d5f3c862a4894605855abbb9dda4b0621fdb0ac4c2c8c7bb7e730a
