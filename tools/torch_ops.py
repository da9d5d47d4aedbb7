"""torch_ops.py: tiny TFLite models (one op or a short chain each) and their PyTorch outputs, for
tests/test_cnn.c (test_ops) and tests/test_tflite.c.

Regenerate:  /usr/bin/python3 tools/torch_ops.py tests/fixtures/cnn

Each case writes op_<name>.tflite (built with tools/tflite_py.py's writer) and op_<name>.bin:
int32 ndim, int32 dims..., float32 input (NHWC); int32 ndim, int32 dims..., float32 expected output.
Expected outputs come from torch ops (tools/torch_ref.py: F.conv2d with explicit F.pad for
TensorFlow's SAME padding, etc.) on the weights as tools/tflite_py.py dequantizes them.
"""
import os
import struct
import sys
import zlib

import numpy as np
import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from tflite_py import read_model, write_model  # noqa: E402
from torch_ref import TorchGraph  # noqa: E402

SAME, VALID = 0, 1
NONE, RELU, RELU_N1, RELU6 = 0, 1, 2, 3


class B:
    def __init__(self, seed):
        self.rng = np.random.default_rng(seed)
        self.tensors, self.ops = [], []

    def tensor(self, shape, **kw):
        t = dict(name="t%d" % len(self.tensors), shape=list(shape), type="float32", data=None)
        t.update(kw)
        self.tensors.append(t)
        return len(self.tensors) - 1

    def input(self, shape):
        self.in_shape = shape
        return self.tensor(shape, name="input")

    def const(self, shape, lo=-1.0, hi=1.0):
        return self.tensor(shape, data=self.rng.uniform(lo, hi, size=shape).astype(np.float32))

    def op(self, name, inputs, **opt):
        o = self.tensor([1], name="out%d" % len(self.ops))
        self.ops.append(dict(op=name, inputs=list(inputs), outputs=[o], opt=opt))
        return o

    def conv(self, x, cin, cout, kh, kw, bias=True, **opt):
        w = self.const([cout, kh, kw, cin])
        b = self.const([cout], -0.5, 0.5) if bias else -1
        return self.op("CONV_2D", [x, w, b], **opt)

    def dw(self, x, cin, mult, kh, kw, **opt):
        w = self.const([1, kh, kw, cin * mult])
        b = self.const([cin * mult], -0.5, 0.5)
        return self.op("DEPTHWISE_CONV_2D", [x, w, b], mult=mult, **opt)

    def save(self, out_dir, name, out):
        data = write_model(self.tensors, self.ops, [0], [out])
        with open(os.path.join(out_dir, "op_%s.tflite" % name), "wb") as f:
            f.write(data)
        m = read_model(data)
        x = self.rng.uniform(-1, 1, size=self.in_shape).astype(np.float32)
        y = TorchGraph(m)(x)[out].astype(np.float32)
        with open(os.path.join(out_dir, "op_%s.bin" % name), "wb") as f:
            f.write(struct.pack("<%di" % (1 + x.ndim), x.ndim, *x.shape) + x.astype("<f4").tobytes())
            f.write(struct.pack("<%di" % (1 + y.ndim), y.ndim, *y.shape) + y.astype("<f4").tobytes())
        print(name, list(x.shape), "->", list(y.shape))


def cases(out):
    def conv_case(name, h, w, cin, cout, kh, kw, **opt):
        b = B(zlib.crc32(name.encode()))
        x = b.input([1, h, w, cin])
        b.save(out, name, b.conv(x, cin, cout, kh, kw, **opt))

    conv_case("conv3x3_s1_same_odd", 7, 9, 3, 5, 3, 3, padding=SAME, stride_w=1, stride_h=1, act=RELU6)
    conv_case("conv3x3_s2_same_even", 8, 8, 3, 4, 3, 3, padding=SAME, stride_w=2, stride_h=2, act=NONE)  # pad 0 / 1
    conv_case("conv3x3_s2_same_odd", 7, 9, 4, 6, 3, 3, padding=SAME, stride_w=2, stride_h=2, act=RELU)
    conv_case("conv5x5_s2_same", 10, 11, 2, 3, 5, 5, padding=SAME, stride_w=2, stride_h=2, act=NONE)
    conv_case("conv3x3_s2_valid", 9, 10, 3, 4, 3, 3, padding=VALID, stride_w=2, stride_h=2, act=RELU_N1)
    conv_case("conv3x3_dil2_same", 9, 10, 3, 4, 3, 3, padding=SAME, stride_w=1, stride_h=1, dil_w=2, dil_h=2)
    conv_case("conv3x3_dil2_valid_s2", 11, 12, 2, 3, 3, 3, padding=VALID, stride_w=2, stride_h=2, dil_w=2, dil_h=3)
    conv_case("conv1x1", 6, 5, 17, 33, 1, 1, padding=SAME, stride_w=1, stride_h=1, act=RELU6, bias=False)
    conv_case("conv1x1_s2", 7, 6, 8, 9, 1, 1, padding=SAME, stride_w=2, stride_h=2)
    conv_case("conv2x3_s21_same", 7, 8, 3, 4, 2, 3, padding=SAME, stride_w=1, stride_h=2, act=RELU)
    conv_case("conv4x4_s3_same", 10, 11, 2, 2, 4, 4, padding=SAME, stride_w=3, stride_h=3)

    def dw_case(name, h, w, c, mult, k, **opt):
        b = B(zlib.crc32(name.encode()))
        x = b.input([1, h, w, c])
        b.save(out, name, b.dw(x, c, mult, k, k, **opt))

    dw_case("dw3x3_s1_same_c20", 6, 7, 20, 1, 3, padding=SAME, stride_w=1, stride_h=1, act=RELU6)
    dw_case("dw3x3_s2_same_c70", 8, 8, 70, 1, 3, padding=SAME, stride_w=2, stride_h=2, act=NONE)
    dw_case("dw3x3_s2_same_odd_c64", 9, 7, 64, 1, 3, padding=SAME, stride_w=2, stride_h=2, act=RELU)
    dw_case("dw5x5_s2_mult2", 9, 8, 3, 2, 5, padding=SAME, stride_w=2, stride_h=2, act=RELU6)
    dw_case("dw3x3_dil2_c33", 9, 9, 33, 1, 3, padding=SAME, stride_w=1, stride_h=1, dil_w=2, dil_h=2)
    dw_case("dw3x3_valid_s2_c5", 9, 10, 5, 1, 3, padding=VALID, stride_w=2, stride_h=2)
    dw_case("dw3x3_mult3_valid", 6, 6, 4, 3, 3, padding=VALID, stride_w=1, stride_h=1)
    dw_case("dw3x3_s1_same_c48_w11", 5, 11, 48, 1, 3, padding=SAME, stride_w=1, stride_h=1, act=RELU6)
    dw_case("dw3x3_s1_valid_c32", 4, 10, 32, 1, 3, padding=VALID, stride_w=1, stride_h=1)
    dw_case("dw3x3_s2_same_c16_w12", 5, 12, 16, 1, 3, padding=SAME, stride_w=2, stride_h=2)

    for name, op, k, s, pad, hw in [("avgpool3x3_s2_same", "AVERAGE_POOL_2D", 3, 2, SAME, (8, 7)),
                                    ("avgpool2x2_valid", "AVERAGE_POOL_2D", 2, 2, VALID, (7, 7)),
                                    ("avgpool7x7_valid", "AVERAGE_POOL_2D", 7, 2, VALID, (7, 7)),
                                    ("maxpool3x3_s2_same", "MAX_POOL_2D", 3, 2, SAME, (8, 9)),
                                    ("maxpool2x2_s1_same", "MAX_POOL_2D", 2, 1, SAME, (5, 6))]:
        b = B(zlib.crc32(name.encode()))
        x = b.input([1, hw[0], hw[1], 6])
        b.save(out, name, b.op(op, [x], padding=pad, stride_w=s, stride_h=s, filter_w=k, filter_h=k))

    for keep in (0, 1):
        b = B(7 + keep)
        x = b.input([1, 5, 6, 7])
        axes = b.tensor([2], type="int32", data=np.array([1, 2], dtype=np.int32))
        b.save(out, "mean_keep%d" % keep, b.op("MEAN", [x, axes], keep_dims=keep))

    b = B(11)  # PAD (asymmetric) then VALID conv: how some exporters write SAME padding
    x = b.input([1, 6, 7, 3])
    pads = b.tensor([4, 2], type="int32", data=np.array([[0, 0], [1, 2], [2, 1], [0, 0]], dtype=np.int32))
    p = b.op("PAD", [x, pads])
    b.save(out, "pad_conv", b.conv(p, 3, 4, 3, 3, padding=VALID, stride_w=2, stride_h=2))

    b = B(12)
    x = b.input([1, 5, 5, 3])
    y1 = b.conv(x, 3, 4, 3, 3, padding=SAME, stride_w=1, stride_h=1)
    y2 = b.dw(x, 3, 1, 3, 3, padding=SAME, stride_w=1, stride_h=1)
    b.save(out, "concat_axis3", b.op("CONCATENATION", [y1, y2, x], axis=-1, act=RELU))

    b = B(13)
    x = b.input([1, 4, 6, 5])
    y1 = b.conv(x, 5, 5, 1, 1, padding=SAME, stride_w=1, stride_h=1)
    s = b.op("ADD", [x, y1], act=RELU6)
    c = b.const([5])
    s2 = b.op("ADD", [s, c])
    b.save(out, "add_residual_bcast", b.op("MUL", [s2, b.const([1, 1, 1, 5])]))

    b = B(14)  # classifier head: pool, reshape, fully connected, softmax; QUANTIZE/DEQUANTIZE are copies
    x = b.input([1, 4, 4, 8])
    q = b.op("QUANTIZE", [x])
    pooled = b.op("AVERAGE_POOL_2D", [q], padding=VALID, stride_w=1, stride_h=1, filter_w=4, filter_h=4)
    shp = b.tensor([2], type="int32", data=np.array([1, 8], dtype=np.int32))
    flat = b.op("RESHAPE", [pooled, shp])
    w = b.const([10, 8], -3, 3)
    fc = b.op("FULLY_CONNECTED", [flat, w, b.const([10])], act=NONE)
    d = b.op("DEQUANTIZE", [fc])
    b.save(out, "head_fc_softmax", b.op("SOFTMAX", [d], beta=0.7))

    # stored types: uint8 per-tensor, int8 per-channel (with int32 bias at input*weight scale), float16
    b = B(15)
    x = b.input([1, 6, 6, 4])
    wq = b.rng.integers(0, 256, size=[5, 3, 3, 4]).astype(np.uint8)
    w = b.tensor([5, 3, 3, 4], type="uint8", data=wq, scale=[0.01], zero_point=[120])
    bias = b.tensor([5], type="int32", data=b.rng.integers(-500, 500, size=[5]).astype(np.int32),
                    scale=[0.0078125 * 0.01], zero_point=[0])
    y = b.op("CONV_2D", [x, w, bias], padding=SAME, stride_w=1, stride_h=1, act=RELU6)
    sc = list(b.rng.uniform(0.001, 0.02, size=5).astype(float))
    w2 = b.tensor([1, 3, 3, 5], type="int8", data=b.rng.integers(-127, 128, size=[1, 3, 3, 5]).astype(np.int8),
                  scale=sc, zero_point=[0] * 5, quant_dim=3)
    bias2 = b.tensor([5], type="int32", data=b.rng.integers(-3000, 3000, size=[5]).astype(np.int32),
                     scale=[s * 0.05 for s in sc], zero_point=[0] * 5, quant_dim=0)
    y2 = b.op("DEPTHWISE_CONV_2D", [y, w2, bias2], mult=1, padding=SAME, stride_w=2, stride_h=2)
    w3 = b.tensor([3, 1, 1, 5], type="float16", data=b.rng.uniform(-1, 1, size=[3, 1, 1, 5]).astype(np.float16))
    b.save(out, "quantized_weights", b.op("CONV_2D", [y2, w3, -1], padding=SAME, stride_w=1, stride_h=1))


def hostile(out):
    """bad_<name>.tflite: structurally valid flatbuffers with hostile content; bad_cases.txt lists
    name<TAB>stage (load or plan)<TAB>a substring the error message must contain."""
    rows = []

    def save(name, b, out_t, stage, msg):
        with open(os.path.join(out, "bad_%s.tflite" % name), "wb") as f:
            f.write(write_model(b.tensors, b.ops, [0], [out_t]))
        rows.append("%s\t%s\t%s" % (name, stage, msg))

    def base(in_shape=(1, 5, 5, 3)):
        b = B(99)
        return b, b.input(list(in_shape))

    b, x = base()
    b.tensors[x]["shape"] = [65536, 65536, 65536, 1]
    save("huge_shape", b, b.conv(x, 3, 2, 1, 1), "load", "more than")
    b, x = base()
    b.tensors[x]["shape"] = [1, -3, 4, 1]
    save("negative_dim", b, b.conv(x, 3, 2, 1, 1), "load", "negative dimension")
    b, x = base()
    b.tensors[x]["shape"] = [1, 1, 1, 1, 1, 1, 5, 3]
    save("too_many_dims", b, b.conv(x, 3, 2, 1, 1), "load", "dimensions")
    b, x = base()
    y = b.conv(x, 3, 2, 1, 1)
    b.ops[0]["inputs"][1] = 99
    save("bad_tensor_index", b, y, "load", "refers to tensor 99")
    b, x = base()
    y = b.conv(x, 3, 2, 1, 1)
    b.tensors[1]["buffer_index"] = 50
    save("bad_buffer_index", b, y, "load", "buffer that does not exist")
    b, x = base()
    y = b.conv(x, 3, 2, 1, 1)
    b.tensors[1]["data"] = b.tensors[1]["data"].reshape(-1)[:5]
    save("short_data", b, y, "load", "bytes of data")
    b, x = base()
    w = b.tensor([2, 1, 1, 3], type="int8", data=np.ones([2, 1, 1, 3], np.int8), scale=[0.1, 0.2, 0.3], zero_point=[0, 0, 0])
    save("scale_count", b, b.op("CONV_2D", [x, w, -1], padding=0, stride_w=1, stride_h=1), "load", "quantization scales")
    b, x = base()
    y = b.conv(x, 3, 2, 1, 1)
    b.ops[0]["opcode_index"] = 7
    save("bad_opcode_index", b, y, "load", "operator code that does not exist")
    b, x = base()
    save("unsupported_op", b, b.op("L2_NORMALIZATION", [x]), "plan", "unsupported operator L2_NORMALIZATION")
    b, x = base()
    save("filter_depth", b, b.conv(x, 4, 2, 3, 3, padding=0, stride_w=1, stride_h=1), "plan", "filter depth")
    b, x = base()
    y = b.conv(x, 3, 2, 1, 1, padding=0, stride_w=1, stride_h=1)
    b.tensors[1]["data"] = None
    save("weights_not_const", b, y, "plan", "must be a constant")
    b, x = base((1, 2, 2, 3))
    save("valid_too_small", b, b.conv(x, 3, 2, 3, 3, padding=1, stride_w=1, stride_h=1), "plan", "empty")
    b, x = base()
    save("zero_stride", b, b.conv(x, 3, 2, 3, 3, padding=0, stride_w=0, stride_h=1), "plan", "stride")
    with open(os.path.join(out, "bad_cases.txt"), "w") as f:
        f.write("\n".join(rows) + "\n")


if __name__ == "__main__":
    os.makedirs(sys.argv[1], exist_ok=True)
    torch.set_num_threads(1)
    cases(sys.argv[1])
    hostile(sys.argv[1])
