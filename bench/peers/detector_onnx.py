"""detector_onnx.py: a float TFLite graph of the detector's kind (YOLOX: convs, LOGISTIC, MUL, PAD, STRIDED_SLICE,
CONCATENATION, MAX_POOL_2D, RESIZE_NEAREST_NEIGHBOR, TRANSPOSE, RESHAPE, BROADCAST_TO, SCATTER_ND, EXP, ADD, SUB),
the whole of it, as the ONNX model ONNX Runtime runs for bench/detector_peers.py (ort_cnn.js).

Operator for operator with the flatbuffer's own weights (tools/tflite_py.py reads them), in the
flatbuffer's NHWC layout: the model's input is NCHW (what ort_cnn.js feeds) and is transposed once to
NHWC; each Conv and MaxPool, which ONNX defines on NCHW, sits between a Transpose to NCHW and one back,
pairs that ONNX Runtime's transpose optimizer cancels through the elementwise operators between two
convs (so it runs the convs back to back in its own layout). The output [1, A, K] is given as
[1, K, A, 1], which ort_cnn.js turns back to NHWC: the same floats in the same order as ours.
Dev tool: /usr/bin/python3 with python3-onnx.
"""
import os
import sys

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "tools"))
from tflite_py import read_model  # noqa: E402

I64_MAX = 2 ** 62
NAMES = {0: "ADD", 2: "CONCATENATION", 3: "CONV_2D", 4: "DEPTHWISE_CONV_2D", 14: "LOGISTIC", 17: "MAX_POOL_2D", 18: "MUL",
         22: "RESHAPE", 34: "PAD", 39: "TRANSPOSE", 41: "SUB", 45: "STRIDED_SLICE", 47: "EXP", 97: "RESIZE_NEAREST_NEIGHBOR",
         122: "SCATTER_ND", 130: "BROADCAST_TO"}  # TFLite builtin operator codes


def same_pads(n, k, s, d=1):
    out = -(-n // s)
    total = max((out - 1) * s + (k - 1) * d + 1 - n, 0)
    return total // 2, total - total // 2


def to_onnx(model_path, size, path):
    """Writes the ONNX model of the whole graph at input size x size; ValueError for an operator it lacks."""
    import onnx
    from onnx import TensorProto, helper, numpy_helper
    m = read_model(open(model_path, "rb").read())
    T = m["tensors"]
    nodes, inits, shape = [], [], {}
    count = [0]

    def fresh(stem):
        count[0] += 1
        return "%s%d" % (stem, count[0])

    def const(arr, stem="c"):
        name = fresh(stem)
        inits.append(numpy_helper.from_array(np.asarray(arr), name))
        return name

    def name_of(i):
        if T[i]["data"] is not None and i not in shape:
            return const(T[i]["data"].astype(np.float32), "k")
        return "t%d" % i

    def node(op, ins, outs, **kw):
        nodes.append(helper.make_node(op, ins, outs, **kw))

    def act(y_raw, y, a):
        if a == 0:
            node("Identity", [y_raw], [y])
        elif a == 1:
            node("Relu", [y_raw], [y])
        else:
            lo, hi = {2: (-1.0, 1.0), 3: (0.0, 6.0)}[a]
            node("Clip", [y_raw, const(np.float32(lo)), const(np.float32(hi))], [y])

    x0 = m["inputs"][0]
    C = T[x0]["shape"][3]
    node("Transpose", ["input"], ["t%d" % x0], perm=[0, 2, 3, 1])
    shape[x0] = (1, size, size, C)
    for op in m["ops"]:
        name, ins, o, y = NAMES.get(op["opcode"], op["opname"]), op["inputs"], op["opt"], op["outputs"][0]
        X = name_of(ins[0]) if ins[0] >= 0 else None
        xs = shape.get(ins[0])
        Y = "t%d" % y
        if name in ("CONV_2D", "DEPTHWISE_CONV_2D", "MAX_POOL_2D"):
            if name == "MAX_POOL_2D":
                kh, kw = o["filter_h"], o["filter_w"]
            else:
                w = T[ins[1]]["data"].astype(np.float32)
                kh, kw = w.shape[1], w.shape[2]
            sh, sw, dh, dw = o["stride_h"], o["stride_w"], o.get("dil_h", 1), o.get("dil_w", 1)
            if o["padding"] == 0:
                (pt, pb), (pl, pr) = same_pads(xs[1], kh, sh, dh), same_pads(xs[2], kw, sw, dw)
            else:
                pt = pb = pl = pr = 0
            oh = (xs[1] + pt + pb - (kh - 1) * dh - 1) // sh + 1
            ow = (xs[2] + pl + pr - (kw - 1) * dw - 1) // sw + 1
            nchw, raw = fresh("n"), fresh("r")
            node("Transpose", [X], [nchw], perm=[0, 3, 1, 2])
            if name == "MAX_POOL_2D":
                node("MaxPool", [nchw], [raw], kernel_shape=[kh, kw], strides=[sh, sw], pads=[pt, pl, pb, pr])
                oc = xs[3]
            else:
                dwise = name == "DEPTHWISE_CONV_2D"
                if dwise and w.shape[3] != xs[3]:
                    raise ValueError("depthwise multiplier other than 1")
                wt = w.transpose(3, 0, 1, 2) if dwise else w.transpose(0, 3, 1, 2)  # [O][I/g][kh][kw]
                oc = wt.shape[0]
                b = T[ins[2]]["data"].astype(np.float32) if len(ins) > 2 and ins[2] >= 0 else np.zeros(oc, np.float32)
                node("Conv", [nchw, const(np.ascontiguousarray(wt), "w"), const(b, "b")], [raw], kernel_shape=[kh, kw],
                     strides=[sh, sw], dilations=[dh, dw], pads=[pt, pl, pb, pr], group=xs[3] if dwise else 1)
            acted = fresh("a")
            act(raw, acted, o.get("act", 0))
            node("Transpose", [acted], [Y], perm=[0, 2, 3, 1])
            shape[y] = (1, oh, ow, oc)
        elif name in ("ADD", "SUB", "MUL"):
            raw = fresh("r")
            node({"ADD": "Add", "SUB": "Sub", "MUL": "Mul"}[name], [X, name_of(ins[1])], [raw])
            act(raw, Y, o.get("act", 0))
            a, b = xs if xs else T[ins[0]]["shape"], shape.get(ins[1], T[ins[1]]["shape"])
            shape[y] = tuple(np.broadcast_shapes(tuple(a), tuple(b)))
        elif name in ("LOGISTIC", "EXP"):
            node("Sigmoid" if name == "LOGISTIC" else "Exp", [X], [Y])
            shape[y] = xs
        elif name == "PAD":
            p = T[ins[1]]["data"].astype(np.int64)
            node("Pad", [X, const(np.concatenate([p[:, 0], p[:, 1]]))], [Y], mode="constant")
            shape[y] = tuple(int(n + a + b) for n, (a, b) in zip(xs, p))
        elif name == "CONCATENATION":
            raw = fresh("r")
            node("Concat", [name_of(i) for i in ins], [raw], axis=o["axis"])
            act(raw, Y, o.get("act", 0))
            s = list(shape[ins[0]])
            ax = o["axis"] % len(s)
            s[ax] = sum(shape[i][ax] for i in ins)
            shape[y] = tuple(s)
        elif name == "STRIDED_SLICE":
            begin, end, stride = (T[i]["data"].astype(np.int64) for i in ins[1:4])
            if o.get("ellipsis_mask") or o.get("new_axis_mask") or o.get("offset"):
                raise ValueError("STRIDED_SLICE with ellipsis, new axis or offset")
            starts, ends, steps, shrink, out = [], [], [], [], []
            for d in range(len(xs)):
                b, e, s = int(begin[d]), int(end[d]), int(stride[d])
                if o.get("shrink_axis_mask", 0) >> d & 1:
                    b = b % xs[d]
                    e, s = b + 1, 1
                    shrink.append(d)
                else:
                    if o.get("begin_mask", 0) >> d & 1:
                        b = 0 if s > 0 else I64_MAX
                    if o.get("end_mask", 0) >> d & 1:
                        e = I64_MAX if s > 0 else -I64_MAX
                starts.append(b), ends.append(e), steps.append(s)
                out.append(len(range(*slice(b, e, s).indices(xs[d]))))
            sl = fresh("s") if shrink else Y
            node("Slice", [X, const(np.array(starts)), const(np.array(ends)), const(np.arange(len(xs), dtype=np.int64)),
                           const(np.array(steps))], [sl])
            if shrink:
                node("Squeeze", [sl, const(np.array(shrink, np.int64))], [Y])
            shape[y] = tuple(n for d, n in enumerate(out) if d not in shrink)
        elif name == "RESHAPE":
            s = tuple(T[y]["shape"])
            node("Reshape", [X, const(np.array(s, np.int64))], [Y])
            shape[y] = s
        elif name == "TRANSPOSE":
            perm = [int(v) for v in T[ins[1]]["data"]]
            node("Transpose", [X], [Y], perm=perm)
            shape[y] = tuple(xs[p] for p in perm)
        elif name == "BROADCAST_TO":
            s = tuple(int(v) for v in T[ins[1]]["data"])
            node("Expand", [X, const(np.array(s, np.int64))], [Y])
            shape[y] = s
        elif name == "SCATTER_ND":
            s = tuple(int(v) for v in T[ins[2]]["data"])
            idx = T[ins[0]]["data"].astype(np.int64)
            flat = idx.reshape(-1, idx.shape[-1])
            if len({tuple(r) for r in flat}) != len(flat):
                raise ValueError("SCATTER_ND with repeated indices (ONNX's ScatterND would not add them)")
            node("ScatterND", [const(np.zeros(s, np.float32)), const(idx), name_of(ins[1])], [Y])
            shape[y] = s
        elif name == "RESIZE_NEAREST_NEIGHBOR":
            oh, ow = (int(v) for v in T[ins[1]]["data"])
            if o.get("align_corners") or o.get("half_pixel_centers"):
                raise ValueError("RESIZE_NEAREST_NEIGHBOR with align_corners or half_pixel_centers")
            node("Resize", [X, "", "", const(np.array([1, oh, ow, xs[3]], np.int64))], [Y], mode="nearest",
                 coordinate_transformation_mode="asymmetric", nearest_mode="floor")
            shape[y] = (1, oh, ow, xs[3])
        else:
            raise ValueError("operator %s not converted" % name)
    out = m["outputs"][0]
    s = shape[out]
    if len(s) != 3:
        raise ValueError("output of rank %d (3 expected)" % len(s))
    node("Reshape", ["t%d" % out, const(np.array([1, s[1], 1, s[2]], np.int64))], ["o4"])
    node("Transpose", ["o4"], ["output"], perm=[0, 3, 1, 2])
    g = helper.make_graph(nodes, "detector", [helper.make_tensor_value_info("input", TensorProto.FLOAT, [1, C, size, size])],
                          [helper.make_tensor_value_info("output", TensorProto.FLOAT, [1, s[2], s[1], 1])], inits)
    mod = helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)])
    mod.ir_version = 8
    onnx.checker.check_model(mod)
    onnx.save(mod, path)
