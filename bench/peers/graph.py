"""graph.py: a MobileNet-style TFLite graph (up to one layer) as a list of layers, for the Python
peers of bench/cnn_peers.py: the ONNX model ONNX Runtime runs (to_onnx) and the PyTorch module run
eager or frozen (TorchNet). Weights are dequantized by tools/tflite_py.py with our engine's formula
((q - zero_point) * scale in double, then float32), so every peer computes with the same numbers.

Layers: dict(kind="conv", x, y, w [O][I/groups][kh][kw], b, stride, pads (top, left, bottom,
right), groups, act) and dict(kind="add", x, x2, y, act); x, y are TFLite tensor indices. Only the
operators MobileNets use before their last conv are supported (others raise ValueError).
Dev tool: /usr/bin/python3.
"""
import os
import sys

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "tools"))
from tflite_py import read_model  # noqa: E402


def find_layer(m, layer):
    for i, t in enumerate(m["tensors"]):
        if t["name"] == layer or t["name"].split(";")[0] == layer:
            return i
    raise ValueError("no tensor named " + layer)


def same_pads(n, k, s):
    """TensorFlow SAME: output ceil(n / s), the odd pixel of padding after."""
    out = (n + s - 1) // s
    total = max((out - 1) * s + k - n, 0)
    return out, total // 2, total - total // 2


def layers(model_path, layer, size):
    """-> (layers, input tensor index, output tensor index, output shape (h, w, c))."""
    m = read_model(open(model_path, "rb").read())
    ts, target = m["tensors"], find_layer(m, layer)
    x0 = m["inputs"][0]
    shape = {x0: (size, size, ts[x0]["shape"][3])}
    alias, out = {x0: x0}, []
    for o in m["ops"]:
        name, ins, p, y = o["opname"], o["inputs"], o["opt"], o["outputs"][0]
        x = alias.get(ins[0])
        if x is None:
            raise ValueError("operator %s reads a tensor that is not computed" % name)
        if name in ("QUANTIZE", "DEQUANTIZE"):
            alias[y], shape[y] = x, shape[x]
        elif name == "ADD":
            x2 = alias[ins[1]]
            out.append(dict(kind="add", x=x, x2=x2, y=y, act=p.get("act", 0)))
            alias[y], shape[y] = y, shape[x]
        elif name in ("CONV_2D", "DEPTHWISE_CONV_2D"):
            w = ts[ins[1]]["data"]
            dw = name == "DEPTHWISE_CONV_2D"
            if p.get("dil_h", 1) != 1 or p.get("dil_w", 1) != 1 or (dw and w.shape[3] != shape[x][2]):
                raise ValueError("unsupported convolution")
            kh, kw = w.shape[1], w.shape[2]
            sh, sw = p["stride_h"], p["stride_w"]
            if p["padding"] == 0:
                oh, pt, pb = same_pads(shape[x][0], kh, sh)
                ow, pl, pr = same_pads(shape[x][1], kw, sw)
            else:
                oh, ow, pt, pb, pl, pr = (shape[x][0] - kh) // sh + 1, (shape[x][1] - kw) // sw + 1, 0, 0, 0, 0
            wt = w.transpose(3, 0, 1, 2) if dw else w.transpose(0, 3, 1, 2)
            b = ts[ins[2]]["data"] if len(ins) > 2 and ins[2] >= 0 else np.zeros(wt.shape[0], np.float32)
            out.append(dict(kind="conv", x=x, y=y, w=np.ascontiguousarray(wt), b=b, stride=(sh, sw),
                            pads=(pt, pl, pb, pr), groups=shape[x][2] if dw else 1, act=p["act"]))
            alias[y], shape[y] = y, (oh, ow, wt.shape[0])
        else:
            raise ValueError("unsupported operator " + name)
        if y == target:
            return out, x0, y, shape[y]
    raise ValueError("layer not reached")


def to_onnx(model_path, layer, size, path):
    """Writes the ONNX model (NCHW, float32, opset 13) of the graph up to `layer` at `size`."""
    import onnx
    from onnx import TensorProto, helper, numpy_helper
    ls, x0, y, (oh, ow, oc) = layers(model_path, layer, size)
    nodes, inits = [], []
    bounds = {1: (0.0, None), 2: (-1.0, 1.0), 3: (0.0, 6.0)}
    for k, L in enumerate(ls):
        raw = "r%d" % L["y"] if L["act"] else "t%d" % L["y"]
        if L["kind"] == "conv":
            inits += [numpy_helper.from_array(L["w"], "w%d" % k), numpy_helper.from_array(L["b"], "b%d" % k)]
            pt, pl, pb, pr = L["pads"]
            nodes.append(helper.make_node("Conv", ["t%d" % L["x"], "w%d" % k, "b%d" % k], [raw],
                                          kernel_shape=list(L["w"].shape[2:]), strides=list(L["stride"]),
                                          pads=[pt, pl, pb, pr], group=L["groups"]))
        else:
            nodes.append(helper.make_node("Add", ["t%d" % L["x"], "t%d" % L["x2"]], [raw]))
        if L["act"] == 1:
            nodes.append(helper.make_node("Relu", [raw], ["t%d" % L["y"]]))
        elif L["act"]:
            lo, hi = bounds[L["act"]]
            inits += [numpy_helper.from_array(np.float32(lo), "lo%d" % k), numpy_helper.from_array(np.float32(hi), "hi%d" % k)]
            nodes.append(helper.make_node("Clip", [raw, "lo%d" % k, "hi%d" % k], ["t%d" % L["y"]]))
    c = read_model(open(model_path, "rb").read())["tensors"][x0]["shape"][3]
    g = helper.make_graph(nodes, "attncap_cnn", [helper.make_tensor_value_info("t%d" % x0, TensorProto.FLOAT, [1, c, size, size])],
                          [helper.make_tensor_value_info("t%d" % y, TensorProto.FLOAT, [1, oc, oh, ow])], inits)
    mod = helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)])
    onnx.checker.check_model(mod)
    onnx.save(mod, path)


def torch_net(model_path, layer, size):
    """The graph as a torch.nn.Module on NCHW input. A stride-2 3x3 conv with TensorFlow's padding
    (none before, one pixel after) becomes a 4x4 conv whose first row and column of weights are zero,
    with one pixel of padding all round: the same sums (plus exact zeros) as a conv PyTorch and
    oneDNN run fused, where an explicit F.pad would be a separate pass."""
    import torch
    import torch.nn.functional as F
    ls, x0, y, _ = layers(model_path, layer, size)

    class TorchNet(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.convs = torch.nn.ModuleList()
            self.plan = []  # (kind, x, x2, y, act, conv index, explicit pad or None)
            for L in ls:
                if L["kind"] == "add":
                    self.plan.append(("add", L["x"], L["x2"], L["y"], L["act"], -1, None))
                    continue
                w, (pt, pl, pb, pr) = L["w"], L["pads"]
                pad, explicit = (pt, pl), None
                if pt == pb and pl == pr:
                    pass
                elif pt == 0 and pl == 0 and pb == 1 and pr == 1:
                    w = np.pad(w, ((0, 0), (0, 0), (1, 0), (1, 0)))
                    pad = (1, 1)
                else:
                    pad, explicit = (0, 0), (pl, pr, pt, pb)
                conv = torch.nn.Conv2d(w.shape[1] * L["groups"], w.shape[0], w.shape[2:], L["stride"], pad,
                                       groups=L["groups"], bias=True)
                with torch.no_grad():
                    conv.weight.copy_(torch.from_numpy(np.ascontiguousarray(w)))
                    conv.bias.copy_(torch.from_numpy(L["b"]))
                self.plan.append(("conv", L["x"], -1, L["y"], L["act"], len(self.convs), explicit))
                self.convs.append(conv)

        def forward(self, x):
            v = {x0: x}
            for kind, a, b, out, act, ci, explicit in self.plan:
                if kind == "add":
                    t = v[a] + v[b]
                else:
                    t = v[a] if explicit is None else F.pad(v[a], explicit)
                    t = self.convs[ci](t)
                if act == 1:
                    t = F.relu(t)
                elif act == 2:
                    t = F.hardtanh(t, -1.0, 1.0)
                elif act == 3:
                    t = F.relu6(t)
                v[out] = t
            return v[y]

    return TorchNet().eval()
