#!/usr/bin/env bash
# Regenerates the seed corpora fuzz/corpus/TARGET/ from the test fixtures (small valid files we made
# ourselves: tools/make_safetensors_fixture.py, tools/make_image_fixtures.py) plus a few hand-made
# edge cases. usage: fuzz/make_corpus.sh
set -eu
cd "$(dirname "$0")/.."
mkdir -p fuzz/corpus/safetensors fuzz/corpus/image
cp tests/fixtures/st_python.safetensors fuzz/corpus/safetensors/python.safetensors
printf '\x02\x00\x00\x00\x00\x00\x00\x00{}' >fuzz/corpus/safetensors/empty.safetensors
h='{"__metadata__":{"k":"v"},"a":{"dtype":"F16","shape":[2,2],"data_offsets":[0,8]},"b":{"dtype":"U8","shape":[3],"data_offsets":[8,11]}}'
{ printf "$(printf '\\x%02x' ${#h})\\x00\\x00\\x00\\x00\\x00\\x00\\x00"; printf '%s' "$h"; printf '\x00\x3c\x00\x40\x00\xc0\x00\x00\x01\x02\x03'; } >fuzz/corpus/safetensors/small.safetensors
for f in rgb.png gray.png rgba.png gray_alpha.png palette.png rgb16.png rgba16.png gray16.png rgb.bmp gray.bmp palette.gif smooth.jpg exif3.jpg exif6.jpg exif8.jpg; do
  cp "tests/fixtures/img/$f" "fuzz/corpus/image/$f"
done
# features: small valid shards (F16 with a #flip key, F32), written by hand with python3's json/struct
mkdir -p fuzz/corpus/features
/usr/bin/python3 - <<'PY'
import json, struct
def shard(path, dtype, n, data):
    enc = {"file": "x.tflite", "sha256": "ab", "layer": "L", "size": 4, "grid_h": 1, "grid_w": 2, "dim": 2}
    keys = ["a.jpg", "b.jpg#flip", "c.png"][:n]
    h = {"__metadata__": {"images": json.dumps(keys), "encoder": json.dumps(enc)},
         "features": {"dtype": dtype, "shape": [n, 2, 2], "data_offsets": [0, len(data)]}}
    hb = json.dumps(h).encode()
    hb += b" " * (-len(hb) % 8)
    open(path, "wb").write(struct.pack("<Q", len(hb)) + hb + data)
shard("fuzz/corpus/features/f16.safetensors", "F16", 2, struct.pack("<8e", 0, 1, 2, -2, 0.5, 3, 4, 65504))
shard("fuzz/corpus/features/f32.safetensors", "F32", 3, struct.pack("<12f", *range(12)))
PY
ls fuzz/corpus/*
