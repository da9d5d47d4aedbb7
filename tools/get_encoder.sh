#!/usr/bin/env bash
# Puts the default encoder (MobileNetV2 1.0 224 uint8, TensorFlow's hosted model) at
# models/mobilenet_v2_1.0_224_quant.tflite: copied from $ATTNCAP_DATA/encoders or ../shared/encoders
# when present, else downloaded from TensorFlow's official archive. Either way its SHA-256 must be
# the one below; a different file is refused, never used silently. (Not committed: see .gitignore.)
set -euo pipefail
cd "$(dirname "$0")/.."
name=mobilenet_v2_1.0_224_quant.tflite
want=7aad0c74c5e3c06e5eb3c827e13304fdd68a83da6087d92ee169c24ff9fd4776
url=https://storage.googleapis.com/download.tensorflow.org/models/tflite_11_05_08/mobilenet_v2_1.0_224_quant.tgz
. tools/shared_copy.sh
dest=models/$name
check() { [ "$(sha256sum "$1" | cut -d' ' -f1)" = "$want" ]; }
rc=0; copy_from_shared encoder "$name" "$want" || rc=$?
[ $rc = 2 ] || exit $rc
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
# offline, or no downloader: say where the file goes instead of a bare network error
where="put $name (SHA-256 $want, from $url) in $(pwd)/models/, or in \$ATTNCAP_DATA/encoders or ../shared/encoders beside the repository, then run make models again"
echo "encoder: downloading $url"
if command -v curl >/dev/null; then ok=1; curl -fsSL --connect-timeout 20 "$url" -o "$tmp/m.tgz" 2>"$tmp/log" || ok=0
elif command -v wget >/dev/null; then ok=1; wget -q --timeout=20 "$url" -O "$tmp/m.tgz" 2>"$tmp/log" || ok=0
else echo "get_encoder: neither curl nor wget is installed (make deps installs curl): $where" >&2; exit 1; fi
if [ $ok = 0 ]; then
  echo "get_encoder: cannot download the encoder ($(tr '\n' ' ' <"$tmp/log" | sed 's/ *$//')): $where" >&2; exit 1
fi
tar -xzf "$tmp/m.tgz" -C "$tmp"
f=$(find "$tmp" -name "$name" | head -1)
[ -n "$f" ] || { echo "get_encoder: $name not found in the downloaded archive" >&2; exit 1; }
check "$f" || { echo "get_encoder: downloaded $name has SHA-256 $(sha256sum "$f" | cut -d' ' -f1), expected $want; refusing it" >&2; exit 1; }
mv "$f" "$dest"; echo "encoder: $dest (downloaded, SHA-256 ok)"
