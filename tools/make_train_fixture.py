#!/usr/bin/python3
"""Writes the tiny training fixture used by tests/train_*.sh and tests/test_train.c:

  tests/fixtures/train/captions.json            Karpathy-format dataset: 20 train photos, 4 val photos
  tests/fixtures/train/features/shard-00000.safetensors
                                                 fake 2x2x16 annotations for every photo and its "#flip"
  tests/fixtures/train/features_f16/...          the same rounded to float16, stored F16
  tests/fixtures/train/features_f16_as_f32/...   ... and stored F32
  tests/fixtures/train/features_aspect/...       as if the photos kept their aspect ratio: photo i owns
                                                 the first 2x2, 2x1 or 1x2 (i % 3) cells of its grid,
                                                 the rest zero padding, each photo's grid in "grids"

Each train photo has one caption, so a decoder can overfit them to near-zero loss; the val photos
reuse train photos' features and captions. Flipped features swap the grid's columns; captions
mention "left"/"right" so the trainer's word swap is exercised.
Regenerate: /usr/bin/python3 tools/make_train_fixture.py   (deterministic, numpy only)"""
import json, os, struct
import numpy as np

root = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests", "fixtures", "train")
rng = np.random.default_rng(1234)
colors = ["red", "blue", "green", "black", "white"]
animals = ["dog", "cat", "horse", "bird"]
verbs = ["runs", "sits", "jumps", "sleeps", "plays"]
places = ["grass", "beach", "road", "snow"]
sides = ["left", "right"]
GH, GW, D = 2, 2, 16
images, keys, feats = [], [], []
for i in range(24):
    src = i if i < 20 else i - 20  # val photos 20..23 reuse train photos 0..3
    r = np.random.default_rng(100 + src)
    f = r.standard_normal((GH, GW, D)).astype(np.float32)
    c = np.random.default_rng(200 + src)
    words = ["a", colors[src % 5], animals[src % 4], verbs[(src // 2) % 5], "on", "the",
             places[(src // 3) % 4], "to", "the", sides[src % 2]][: 6 + src % 5]
    if src % 5 == 4:
        words = words + ["near", "the", "water"]
    cap = " ".join(words).capitalize() + " ."
    name = "photo%02d.jpg" % i
    images.append({"filepath": "", "filename": name, "split": "train" if i < 20 else "val",
                   "sentences": [{"raw": cap}]})
    keys += [name, name + "#flip"]
    feats += [f.reshape(GH * GW, D), f[:, ::-1, :].reshape(GH * GW, D)]
with open(os.path.join(root, "captions.json"), "w") as fp:
    json.dump({"images": images, "dataset": "fixture"}, fp, indent=0)
data = np.stack(feats).astype(np.float32)
enc = {"file": "fake.tflite", "sha256": "0" * 64, "layer": "fake", "size": 64, "grid_h": GH, "grid_w": GW,
       "dim": D, "norm_mean": 0.0, "norm_scale": 1.0, "resize": "bilinear"}
def write_shard(folder, array, dtype, enc=enc, grids=None):
    hdr = {"features": {"dtype": dtype, "shape": list(array.shape), "data_offsets": [0, array.nbytes]},
           "__metadata__": {"images": json.dumps(keys), "encoder": json.dumps(enc)}}
    blob = array.tobytes()
    if grids is not None:
        hdr["grids"] = {"dtype": "I32", "shape": list(grids.shape), "data_offsets": [len(blob), len(blob) + grids.nbytes]}
        blob += grids.tobytes()
    h = json.dumps(hdr).encode()
    h += b" " * ((8 - len(h) % 8) % 8)
    os.makedirs(os.path.join(root, folder), exist_ok=True)
    with open(os.path.join(root, folder, "shard-00000.safetensors"), "wb") as fp:
        fp.write(struct.pack("<Q", len(h)) + h + blob)


write_shard("features", data, "F32")
# The same values rounded to float16, stored as F16 and as F32: training must give the same model
# from both (the trainer keeps an F16 cache as F16 in memory and converts a batch at a time).
write_shard("features_f16", data.astype(np.float16), "F16")
write_shard("features_f16_as_f32", data.astype(np.float16).astype(np.float32), "F32")
# Aspect kept: each photo's own grid (the top-left gh x gw of its 2x2, row-major) first, zeros after.
shapes = [(2, 2), (2, 1), (1, 2)]
own, grids = np.zeros_like(data), []
for k in range(len(keys)):
    src = k // 2 if k // 2 < 20 else k // 2 - 20
    gh, gw = shapes[src % 3]
    cells = data[k].reshape(GH, GW, D)[:gh, :gw, :].reshape(gh * gw, D)
    own[k, :gh * gw] = cells
    grids.append((gh, gw))
aspect = dict(enc, resize="aspect kept, antialiased bilinear, long side at size, grid padded")  # encoder.h
write_shard("features_aspect", own, "F32", aspect, np.array(grids, dtype=np.int32))
print("wrote", root)
