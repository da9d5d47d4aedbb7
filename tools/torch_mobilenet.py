"""torch_mobilenet.py: float32 PyTorch reference of the shared TFLite encoders, for tests/test_cnn.c.

Regenerate (needs ../shared and Debian's python3-torch):
    /usr/bin/python3 tools/torch_mobilenet.py ../shared tests/fixtures/cnn

The .tflite files are parsed by tools/tflite_py.py (independent of src/formats/tflite.c), weights dequantized,
and the graph run with torch ops (tools/torch_ref.py). Photos are decoded with PIL (BMPs only: lossless,
so every decoder agrees) and resized with torch's plain bilinear (align_corners=False, no antialias) in
float; the C test repeats that resize itself, so only the networks are compared.

Per photo, tests/fixtures/cnn/ref_<photo>.bin holds float32 arrays, in order:
  for each model in MODELS: top-5 class indices (as floats) and their probabilities at the native size
  MobileNetV2 quant, layer MobilenetV2/Conv_1/Relu6, at 224 then 448:
      the mean over the grid (1280 values) and every STRIDE-th value of the NHWC grid (SAMPLES values)

tests/fixtures/cnn/ref_v1_sizes.bin: MobileNetV1 0.25 cut at its last conv (V1_LAYER, 256 channels) on
V1_PHOTO at each of V1_SIZES (sizes the model was not built for, odd ones too, where the engine fuses
its pointwise and depthwise convs): the number of sizes, then per size the size, the grid's height
and width, the mean over the grid (256 values) and every STRIDE-th value of the grid (V1_SAMPLES).
"""
import os
import sys

import numpy as np
import torch
import torch.nn.functional as F
from PIL import Image

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from tflite_py import read_model  # noqa: E402
from torch_ref import TorchGraph  # noqa: E402

MODELS = ["mobilenet_v2_1.0_224_quant", "tf2_mobilenet_v2_1.0_224_ptq", "mobilenet_v1_0.25_128_quant",
          "mobilenet_v1_0.5_160_quant"]
PHOTOS = ["grace_hopper.bmp", "cat.bmp"]
LAYER = "MobilenetV2/Conv_1/Relu6"
SAMPLES = 8960
V1_MODEL = "mobilenet_v1_0.25_128_quant"
V1_LAYER = "MobilenetV1/MobilenetV1/Conv2d_13_pointwise/Relu6"
V1_PHOTO = "grace_hopper.bmp"
V1_SIZES = (256, 384, 416, 448, 450, 512)
V1_SAMPLES = 2048


def input_norm(m):
    t = m["tensors"][m["inputs"][0]]
    if t["scale"]:
        return t["zero_point"][0] + (128 if t["type"] == 9 else 0), t["scale"][0]
    return 127.5, 1 / 127.5


def prepare(px, size, norm):
    x = torch.from_numpy(px.astype(np.float32)).permute(2, 0, 1)[None]
    x = F.interpolate(x, size=(size, size), mode="bilinear", align_corners=False)
    x = (x - norm[0]) * norm[1]
    return x.permute(0, 2, 3, 1).contiguous().numpy()


def main():
    shared, out = sys.argv[1], sys.argv[2]
    os.makedirs(out, exist_ok=True)
    torch.set_num_threads(1)
    models = {n: read_model(open(os.path.join(shared, "encoders", n + ".tflite"), "rb").read()) for n in MODELS}
    for photo in PHOTOS:
        px = np.asarray(Image.open(os.path.join(shared, "images", photo)).convert("RGB"))
        arrs = []
        with torch.no_grad():
            for n in MODELS:
                m = models[n]
                size = m["tensors"][m["inputs"][0]]["shape"][1]
                p = TorchGraph(m)(prepare(px, size, input_norm(m)))[m["outputs"][0]].reshape(-1)
                top = np.argsort(-p, kind="stable")[:5]
                arrs += [top.astype(np.float32), p[top].astype(np.float32)]
                print(photo, n, top.tolist(), np.round(p[top], 4).tolist())
            m = models[MODELS[0]]
            layer = [i for i, t in enumerate(m["tensors"]) if t["name"].split(";")[0] == LAYER][0]
            g = TorchGraph(m, upto=layer)
            for size in (224, 448):
                grid = g(prepare(px, size, input_norm(m)))[layer]
                flat = grid.reshape(-1)
                stride = flat.size // SAMPLES
                arrs += [grid.reshape(-1, grid.shape[-1]).mean(0), flat[::stride][:SAMPLES]]
                print(photo, size, grid.shape, "stride", stride)
        np.concatenate(arrs).astype("<f4").tofile(os.path.join(out, "ref_" + photo.split(".")[0] + ".bin"))
    v1_sizes(shared, out, models[V1_MODEL])


def v1_sizes(shared, out, m):
    px = np.asarray(Image.open(os.path.join(shared, "images", V1_PHOTO)).convert("RGB"))
    layer = [i for i, t in enumerate(m["tensors"]) if t["name"].split(";")[0] == V1_LAYER][0]
    g = TorchGraph(m, upto=layer)
    arrs = [np.array([len(V1_SIZES)], np.float32)]
    with torch.no_grad():
        for size in V1_SIZES:
            grid = g(prepare(px, size, input_norm(m)))[layer]
            flat = grid.reshape(-1)
            stride = flat.size // V1_SAMPLES
            arrs += [np.array([size, grid.shape[1], grid.shape[2]], np.float32),
                     grid.reshape(-1, grid.shape[-1]).mean(0), flat[::stride][:V1_SAMPLES]]
            print(V1_PHOTO, V1_MODEL, size, grid.shape, "stride", stride)
    np.concatenate(arrs).astype("<f4").tofile(os.path.join(out, "ref_v1_sizes.bin"))


if __name__ == "__main__":
    main()
