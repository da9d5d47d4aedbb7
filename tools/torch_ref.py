"""torch_ref.py: runs a TFLite graph (as parsed by tflite_py.read_model, weights dequantized to float32)
with PyTorch float32 ops: the independent reference for tests/test_cnn.c and the peer in bench/.

Activations are kept NCHW (PyTorch's native layout); ops whose meaning depends on the layout (reshape,
mean axes, pad, concat axis, softmax, fully connected) translate from TFLite's NHWC. TensorFlow's SAME
padding (the odd pixel goes after) is applied explicitly with F.pad. Dev tool: /usr/bin/python3.
"""
import numpy as np
import torch
import torch.nn.functional as F

NHWC2NCHW = [0, 3, 1, 2]


def same_pad(n, k, s, d):
    out = (n + s - 1) // s
    total = max((out - 1) * s + (k - 1) * d + 1 - n, 0)
    return total // 2, total - total // 2


def act(x, a):
    if a == 1:
        return F.relu(x)
    if a == 2:
        return torch.clamp(x, -1.0, 1.0)
    if a == 3:
        return torch.clamp(x, 0.0, 6.0)
    if a != 0:
        raise ValueError("activation %d" % a)
    return x


class TorchGraph:
    def __init__(self, model, upto=None):
        self.m = model
        ts = model["tensors"]
        target = model["outputs"][0] if upto is None else upto
        # keep the ops the target depends on
        need, keep = {target}, []
        for k in range(len(model["ops"]) - 1, -1, -1):
            o = model["ops"][k]
            if any(i in need for i in o["outputs"]):
                keep.append(k)
                need.update(i for i in o["inputs"] if i >= 0 and ts[i]["data"] is None)
        self.ops = [model["ops"][k] for k in sorted(keep)]
        self.target = target
        self.w = {}  # prepared weights per op index in self.ops
        for j, o in enumerate(self.ops):
            name, ins = o["opname"], o["inputs"]
            if name not in ("CONV_2D", "DEPTHWISE_CONV_2D", "FULLY_CONNECTED"):
                continue
            bias = torch.from_numpy(ts[ins[2]]["data"].copy()) if len(ins) > 2 and ins[2] >= 0 else None
            if name == "CONV_2D":
                self.w[j] = (torch.from_numpy(ts[ins[1]]["data"].transpose(0, 3, 1, 2).copy()), bias)
            elif name == "DEPTHWISE_CONV_2D":
                self.w[j] = (torch.from_numpy(ts[ins[1]]["data"].transpose(3, 0, 1, 2).copy()), bias)
            elif name == "FULLY_CONNECTED":
                self.w[j] = (torch.from_numpy(ts[ins[1]]["data"].copy()), bias)

    def const(self, i, like_ndim4=False):
        d = self.m["tensors"][i]["data"]
        t = torch.from_numpy(d.copy())
        if like_ndim4:
            if t.dim() == 4:
                t = t.permute(*NHWC2NCHW)
            elif t.dim() == 1:
                t = t.reshape(1, -1, 1, 1)
        return t

    def __call__(self, x_nhwc, keep=()):
        """x_nhwc: float32 numpy [1,H,W,C]. Returns {tensor index: NHWC numpy} for the target and `keep`."""
        ts = self.m["tensors"]
        v = {self.m["inputs"][0]: torch.from_numpy(np.ascontiguousarray(x_nhwc)).permute(*NHWC2NCHW)}
        for j, o in enumerate(self.ops):
            v[o["outputs"][0]] = self.step(j, o, v)
        out = {}
        for i in (self.target,) + tuple(keep):
            t = v[i]
            out[i] = (t.permute(0, 2, 3, 1) if t.dim() == 4 else t).contiguous().numpy()
        return out

    def get(self, v, i, four=False):
        if i in v:
            return v[i]
        return self.const(i, four)

    def step(self, j, o, v):
        name, ins, p = o["opname"], o["inputs"], o["opt"]
        ts = self.m["tensors"]
        x = self.get(v, ins[0])
        if name in ("CONV_2D", "DEPTHWISE_CONV_2D"):
            w, b = self.w[j]
            kh, kw = w.shape[2], w.shape[3]
            sh, sw, dh, dw = p["stride_h"], p["stride_w"], p.get("dil_h", 1), p.get("dil_w", 1)
            if p["padding"] == 0:
                t, bt = same_pad(x.shape[2], kh, sh, dh)
                l, r = same_pad(x.shape[3], kw, sw, dw)
                x = F.pad(x, (l, r, t, bt))
            groups = x.shape[1] if name == "DEPTHWISE_CONV_2D" else 1
            return act(F.conv2d(x, w, b, stride=(sh, sw), dilation=(dh, dw), groups=groups), p["act"])
        if name in ("AVERAGE_POOL_2D", "MAX_POOL_2D"):
            kh, kw, sh, sw = p["filter_h"], p["filter_w"], p["stride_h"], p["stride_w"]
            pads = (0, 0, 0, 0)
            if p["padding"] == 0:
                t, bt = same_pad(x.shape[2], kh, sh, 1)
                l, r = same_pad(x.shape[3], kw, sw, 1)
                pads = (l, r, t, bt)
            if name == "MAX_POOL_2D":
                y = F.max_pool2d(F.pad(x, pads, value=-float("inf")), (kh, kw), (sh, sw))
            else:  # TFLite divides by the number of window pixels inside the image
                s = F.avg_pool2d(F.pad(x, pads), (kh, kw), (sh, sw), divisor_override=1)
                ones = F.pad(torch.ones(1, 1, x.shape[2], x.shape[3]), pads)
                y = s / F.avg_pool2d(ones, (kh, kw), (sh, sw), divisor_override=1)
            return act(y, p.get("act", 0))
        if name in ("ADD", "MUL"):
            a = self.get(v, ins[0], True)
            b = self.get(v, ins[1], True)
            return act(a + b if name == "ADD" else a * b, p.get("act", 0))
        if name in ("QUANTIZE", "DEQUANTIZE"):
            return x
        nhwc = x.permute(0, 2, 3, 1) if x.dim() == 4 else x
        if name == "RESHAPE":
            shape = ts[ins[1]]["data"].astype(int).tolist() if len(ins) > 1 and ins[1] >= 0 else p["new_shape"]
            y = nhwc.reshape(shape)
        elif name == "SOFTMAX":
            y = torch.softmax(nhwc * p.get("beta", 1.0), dim=-1)
        elif name == "MEAN":
            axes = [int(a) % nhwc.dim() for a in ts[ins[1]]["data"].reshape(-1)]
            y = nhwc.mean(dim=axes, keepdim=bool(p.get("keep_dims", 0)))
        elif name == "PAD":
            pd = ts[ins[1]]["data"].astype(int)
            flat = []
            for d in range(nhwc.dim() - 1, -1, -1):
                flat += [pd[d][0], pd[d][1]]
            y = F.pad(nhwc, flat)
        elif name == "CONCATENATION":
            parts = [self.get(v, i) for i in ins]
            parts = [t.permute(0, 2, 3, 1) if t.dim() == 4 else t for t in parts]
            y = act(torch.cat(parts, dim=p["axis"]), p.get("act", 0))
        elif name == "FULLY_CONNECTED":
            w, b = self.w[j]
            y = act(F.linear(nhwc.reshape(-1, w.shape[1]), w, b), p.get("act", 0))
        else:
            raise ValueError("unsupported op " + name)
        return y.permute(0, 3, 1, 2) if y.dim() == 4 else y
