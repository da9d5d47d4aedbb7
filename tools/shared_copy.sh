# shared_copy.sh: sourced by tools/get_encoder.sh and tools/get_detector.sh (run from the checkout).
# copy_from_shared KIND NAME SHA256: models/NAME when it is there with that SHA-256, else copied from
# $ATTNCAP_DATA/encoders or ../shared/encoders (temp file + rename). Returns 0 when models/NAME is the
# file, 1 when a copy found has another SHA-256 (refused, one line on stderr), 2 when none is found.
copy_from_shared() {
  local kind=$1 name=$2 want=$3 dest=models/$2 dir
  mkdir -p models
  if [ -f "$dest" ] && [ "$(sha256sum "$dest" | cut -d' ' -f1)" = "$want" ]; then echo "$kind: $dest (SHA-256 ok)"; return 0; fi
  for dir in "${ATTNCAP_DATA:-}" ../shared; do
    [ -n "$dir" ] && [ -f "$dir/encoders/$name" ] || continue
    if [ "$(sha256sum "$dir/encoders/$name" | cut -d' ' -f1)" = "$want" ]; then
      cp "$dir/encoders/$name" "$dest.tmp" && mv "$dest.tmp" "$dest"
      echo "$kind: $dest (copied from $dir/encoders, SHA-256 ok)"; return 0
    fi
    echo "get_$kind: $dir/encoders/$name has the wrong SHA-256; refusing it" >&2; return 1
  done
  return 2
}
