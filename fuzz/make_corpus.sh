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
ls fuzz/corpus/*
