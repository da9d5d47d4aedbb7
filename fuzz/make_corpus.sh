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
# images stb 2.27 decodes from uninitialised memory (src/image/image.c refuses or pads them) and a valid restart-marker JPEG
/usr/bin/python3 fuzz/make_stb_cases.py
# WebP and TIFF (libwebp, libtiff), whole and truncated, and a JPEG large enough for every reduced-decode
# factor (fuzz_image.c's hint comes from the last byte)
/usr/bin/python3 - <<'PY'
import io
from PIL import Image
im = Image.radial_gradient("L").resize((24, 16)).convert("RGB")
im.putpixel((3, 3), (255, 0, 0))
def save(name, img, **kw):
    b = io.BytesIO(); img.save(b, **kw); open("fuzz/corpus/image/" + name, "wb").write(b.getvalue()); return b.getvalue()
save("webp-lossy.webp", im, format="WEBP", quality=70)
w = save("webp-lossless.webp", im, format="WEBP", lossless=True)
save("webp-alpha.webp", im.convert("RGBA"), format="WEBP", lossless=True)
open("fuzz/corpus/image/webp-truncated.webp", "wb").write(w[: len(w) // 2])
save("tiff-raw.tif", im, format="TIFF")
t = save("tiff-lzw.tif", im, format="TIFF", compression="tiff_lzw")
save("tiff-gray-deflate.tif", im.convert("L"), format="TIFF", compression="tiff_adobe_deflate")
save("tiff-rgba.tif", im.convert("RGBA"), format="TIFF")
open("fuzz/corpus/image/tiff-truncated.tif", "wb").write(t[: len(t) * 2 // 3])
save("jpeg-64x48-reduced.jpg", im.resize((64, 48)), format="JPEG", quality=80)
PY
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
# tokenize, dataset, results, model seeds (helper F). Datasets: first byte picks the reader (see
# fuzz/fuzz_dataset.c); results: first byte 0 = results JSON vs fuzz_results.c's refs, 1 = --pairs.
mkdir -p fuzz/corpus/tokenize fuzz/corpus/dataset fuzz/corpus/results fuzz/corpus/model
printf 'A man riding a wave on top of a surfboard.' >fuzz/corpus/tokenize/plain
printf "Two dogs aren't playing (in) the \"snow\" -- can't you see? It's 5:30, y'all... \xc3\xa9t\xc3\xa9 caf\xc3\xa9 'n 'em '90s" >fuzz/corpus/tokenize/ptb
printf '["<pad>","<start>","<end>","<unk>","a","dog"]' >fuzz/corpus/tokenize/vocab.json
{ printf '\x00'; printf '{"images":[{"id":1,"file_name":"a.jpg"},{"id":"x","file_name":"sub/b.png"}],"annotations":[{"image_id":1,"caption":"A dog."},{"image_id":"x","caption":"two cats"}]}'; } >fuzz/corpus/dataset/coco
{ printf '\x00'; cat tests/fixtures/train/captions.json; } >fuzz/corpus/dataset/karpathy
{ printf '\x00'; printf '{"images":[{"filepath":"val2014","filename":"c.jpg","split":"restval","cocoid":7,"sentences":[{"raw":"a b"},{"raw":"c d","tokens":["c","d"]}]}]}'; } >fuzz/corpus/dataset/karpathy2
{ printf '\x01'; printf 'a.jpg\tA dog runs.\nb.jpg\tTwo cats\n\na.jpg\tanother one\n'; } >fuzz/corpus/dataset/tsv
{ printf '\x02'; printf 'image,caption\na.jpg,"A dog, running"\nb.jpg,"say ""hi"""\n'; } >fuzz/corpus/dataset/csv
{ printf '\x03'; printf '1000268201_693b08cb0e.jpg#0\tA child in a pink dress .\n1000268201_693b08cb0e.jpg#1\tA girl going into a building .\n'; } >fuzz/corpus/dataset/flickr8k
{ printf '\x04'; printf 'a.jpg#0\tA dog .\nb.jpg#0\tA cat .\n\x00a.jpg\n'; } >fuzz/corpus/dataset/flickr8k_split
{ printf '\x00'; printf '[{"image_id": 1, "caption": "a dog running on grass"}, {"image_id": "2", "caption": "people on a bench"}, {"image_id": 42, "caption": "a cat"}]'; } >fuzz/corpus/results/results
{ printf '\x00'; printf '[{"image_id": "c.jpg", "caption": "a cat"}, {"image_id": "b", "caption": "x"}]'; } >fuzz/corpus/results/results_names
{ printf '\x01'; printf '[{"captions": ["A dog runs.", "a brown dog"], "prediction": "a dog", "image_id": 5}, {"captions": ["two cats"], "prediction": "cats", "image_name": "q.jpg"}, {"captions": ["x y z"], "prediction": "x"}]'; } >fuzz/corpus/results/pairs
# model: tiny F32 and F16 decoder models written by ac_model_save (needs `make` first)
cat >build-fuzz/make_model_seed.c <<'C'
#include <stdlib.h>
#include <string.h>
#include "attncap/decoder.h"
#include "attncap/vocab.h"
int main(int argc, char **argv) {
    (void)argc;
    ac_model m;
    memset(&m, 0, sizeof m);
    const char *w[] = {"a", "dog", "runs"};
    ac_tokens t = {3, (char **)w};
    ac_err err;
    if (ac_vocab_build(&t, 1, 1, &m.vocab, &err)) return 1;
    ac_decoder_config c = {.vocab = ac_vocab_size(m.vocab), .embed = 3, .hidden = 2, .att = 2, .dim = 2, .n_ann = 2,
                           .grid_h = 1, .grid_w = 2, .dropout = 0.5f, .lambda = 1.0f};
    if (ac_decoder_init(&m.dec, &c, 5, &err)) return 1;
    m.encoder_json = strdup("{\"file\":\"x.tflite\",\"sha256\":\"ab\",\"layer\":\"L\",\"size\":32,\"grid_h\":1,\"grid_w\":2,\"dim\":2}");
    const char *extra[] = {"training", "{\"epochs\":1}", NULL};
    if (ac_model_save(&m, argv[1], 0, extra, &err) || ac_model_save(&m, argv[2], 1, NULL, &err)) return 1;
    ac_model_free(&m);
    return 0;
}
C
cc -std=c11 -D_GNU_SOURCE -Iinclude build-fuzz/make_model_seed.c build/libattncap.a -lcjson -lopenblas -lstemmer -lpng -lstb -lpthread -lm -o build-fuzz/make_model_seed
build-fuzz/make_model_seed fuzz/corpus/model/f32.safetensors fuzz/corpus/model/f16.safetensors
ls fuzz/corpus/*
