"""tflite_py.py: a small TFLite flatbuffer reader and writer in pure Python (struct + numpy).

An implementation independent of src/formats/tflite.c, written from the public schema.fbs, used by the
reference tools (tools/torch_*.py) and the CNN benchmark peers (bench/peers/graph.py):
  read_model(bytes) -> dict with 'tensors' (name, type, shape, quant, data as float32 numpy or None),
                       'ops' (opcode, opname, inputs, outputs, options dict), 'inputs', 'outputs'
  write_model(tensors, ops, inputs, outputs) -> bytes (for tiny test models)
Dev tool only; run with /usr/bin/python3 (numpy).
"""
import struct

import numpy as np

OPS = {0: "ADD", 1: "AVERAGE_POOL_2D", 2: "CONCATENATION", 3: "CONV_2D", 4: "DEPTHWISE_CONV_2D",
       6: "DEQUANTIZE", 9: "FULLY_CONNECTED", 17: "MAX_POOL_2D", 18: "MUL", 22: "RESHAPE", 25: "SOFTMAX",
       34: "PAD", 40: "MEAN", 114: "QUANTIZE", 11: "L2_NORMALIZATION"}
CODES = {v: k for k, v in OPS.items()}
# TensorType -> numpy dtype
DT = {0: "<f4", 1: "<f2", 2: "<i4", 3: "u1", 4: "<i8", 9: "i1"}
TYPES = {"float32": 0, "float16": 1, "int32": 2, "uint8": 3, "int64": 4, "int8": 9}


class _Reader:
    def __init__(self, b):
        self.b = b

    def u32(self, p): return struct.unpack_from("<I", self.b, p)[0]

    def table(self, p):
        vt = p - struct.unpack_from("<i", self.b, p)[0]
        vsize = struct.unpack_from("<H", self.b, vt)[0]
        return (p, vt, vsize)

    def field(self, t, i):
        p, vt, vsize = t
        slot = 4 + 2 * i
        if slot + 2 > vsize:
            return None
        off = struct.unpack_from("<H", self.b, vt + slot)[0]
        return p + off if off else None

    def scalar(self, t, i, fmt, default=0):
        f = self.field(t, i)
        return default if f is None else struct.unpack_from("<" + fmt, self.b, f)[0]

    def ref(self, t, i):
        f = self.field(t, i)
        return None if f is None else f + self.u32(f)

    def vector(self, t, i, fmt):
        p = self.ref(t, i)
        if p is None:
            return []
        n = self.u32(p)
        return list(struct.unpack_from("<%d%s" % (n, fmt), self.b, p + 4))

    def vector_raw(self, t, i):
        p = self.ref(t, i)
        if p is None:
            return b""
        n = self.u32(p)
        return self.b[p + 4:p + 4 + n]

    def tables(self, t, i):
        p = self.ref(t, i)
        if p is None:
            return []
        n = self.u32(p)
        return [self.table(p + 4 + 4 * k + self.u32(p + 4 + 4 * k)) for k in range(n)]

    def string(self, t, i):
        return bytes(self.vector_raw(t, i)).decode("utf-8", "replace")


def read_model(b):
    r = _Reader(b)
    root = r.table(r.u32(0))
    codes = []
    for ct in r.tables(root, 1):
        dep = r.scalar(ct, 0, "b")
        full = r.scalar(ct, 3, "i")
        codes.append(max(dep, full))
    buffers = [bytes(r.vector_raw(bt, 0)) for bt in r.tables(root, 4)]
    sg = r.tables(root, 2)[0]
    tensors = []
    for tt in r.tables(sg, 0):
        shape = r.vector(tt, 0, "i")
        ttype = r.scalar(tt, 1, "b")
        buf = r.scalar(tt, 2, "I")
        name = r.string(tt, 3)
        q = r.ref(tt, 4)
        scale, zp, qdim = [], [], 0
        if q is not None:
            qt = r.table(q)
            scale = r.vector(qt, 2, "f")
            zp = r.vector(qt, 3, "q")
            qdim = r.scalar(qt, 6, "i")
        data = None
        raw = buffers[buf] if buf < len(buffers) else b""
        if raw and ttype in DT:
            a = np.frombuffer(raw, dtype=DT[ttype]).astype(np.float64).reshape(shape)
            if scale and ttype not in (0, 1):
                s = np.array(scale, dtype=np.float64)
                z = np.array(zp if zp else [0] * len(scale), dtype=np.float64)
                if len(scale) > 1:
                    bshape = [1] * len(shape)
                    bshape[qdim] = len(scale)
                    s, z = s.reshape(bshape), z.reshape(bshape)
                a = (a - z) * s
            data = a.astype(np.float32)
        tensors.append(dict(name=name, type=ttype, shape=shape, scale=scale, zero_point=zp, quant_dim=qdim, data=data))
    ops = []
    for ot in r.tables(sg, 3):
        code = codes[r.scalar(ot, 0, "I")]
        o = dict(opcode=code, opname=OPS.get(code, "OP_%d" % code), inputs=r.vector(ot, 1, "i"),
                 outputs=r.vector(ot, 2, "i"), opt={})
        ob = r.ref(ot, 4)
        if ob is not None:
            t = r.table(ob)
            if code == 3:
                o["opt"] = dict(padding=r.scalar(t, 0, "b"), stride_w=r.scalar(t, 1, "i"), stride_h=r.scalar(t, 2, "i"),
                                act=r.scalar(t, 3, "b"), dil_w=r.scalar(t, 4, "i", 1), dil_h=r.scalar(t, 5, "i", 1))
            elif code == 4:
                o["opt"] = dict(padding=r.scalar(t, 0, "b"), stride_w=r.scalar(t, 1, "i"), stride_h=r.scalar(t, 2, "i"),
                                mult=r.scalar(t, 3, "i"), act=r.scalar(t, 4, "b"), dil_w=r.scalar(t, 5, "i", 1),
                                dil_h=r.scalar(t, 6, "i", 1))
            elif code in (1, 17):
                o["opt"] = dict(padding=r.scalar(t, 0, "b"), stride_w=r.scalar(t, 1, "i"), stride_h=r.scalar(t, 2, "i"),
                                filter_w=r.scalar(t, 3, "i"), filter_h=r.scalar(t, 4, "i"), act=r.scalar(t, 5, "b"))
            elif code in (0, 18, 9):
                o["opt"] = dict(act=r.scalar(t, 0, "b"))
            elif code == 2:
                o["opt"] = dict(axis=r.scalar(t, 0, "i"), act=r.scalar(t, 1, "b"))
            elif code == 25:
                o["opt"] = dict(beta=r.scalar(t, 0, "f"))
            elif code == 22:
                o["opt"] = dict(new_shape=r.vector(t, 0, "i"))
            elif code == 40:
                o["opt"] = dict(keep_dims=r.scalar(t, 0, "B"))
            elif code == 41:
                o["opt"] = dict(act=r.scalar(t, 0, "b"))
            elif code == 45:
                o["opt"] = dict(begin_mask=r.scalar(t, 0, "i"), end_mask=r.scalar(t, 1, "i"),
                                ellipsis_mask=r.scalar(t, 2, "i"), new_axis_mask=r.scalar(t, 3, "i"),
                                shrink_axis_mask=r.scalar(t, 4, "i"), offset=r.scalar(t, 5, "B"))
            elif code == 97:
                o["opt"] = dict(align_corners=r.scalar(t, 0, "B"), half_pixel_centers=r.scalar(t, 1, "B"))
        ops.append(o)
    return dict(tensors=tensors, ops=ops, inputs=r.vector(sg, 1, "i"), outputs=r.vector(sg, 2, "i"))


# ---- writer ----
# A value tree: Table([(fmt, value) or None per field]), Vec(fmt, values), VecT([Table...]), Str(s), Bytes(b).
class Table:
    def __init__(self, fields): self.fields = fields


class Vec:
    def __init__(self, fmt, vals): self.fmt, self.vals = fmt, list(vals)


class VecT:
    def __init__(self, tables): self.tables = tables


class Str:
    def __init__(self, s): self.s = s.encode()


class _Writer:
    """Lays objects out front to back, so every uoffset points forward as the format requires."""

    def __init__(self):
        self.b = bytearray(8)

    def align(self, n):
        while len(self.b) % n:
            self.b.append(0)

    def obj(self, v):
        """Writes v (and its children) at the end; returns the position to point at."""
        if isinstance(v, Table):
            return self.table(v)
        if isinstance(v, Str):
            self.align(4)
            p = len(self.b)
            self.b += struct.pack("<I", len(v.s)) + v.s + b"\0"
            return p
        if isinstance(v, Vec):
            size = struct.calcsize("<" + v.fmt)
            self.align(max(4, size))
            if size == 8 and len(self.b) % 8 == 0:
                self.b += b"\0" * 4  # so the elements after the length are 8-aligned
            p = len(self.b)
            self.b += struct.pack("<I", len(v.vals))
            self.b += struct.pack("<%d%s" % (len(v.vals), v.fmt), *v.vals)
            return p
        if isinstance(v, bytes):
            self.align(16)
            self.b += b"\0" * 12
            p = len(self.b)
            self.b += struct.pack("<I", len(v)) + v
            return p
        if isinstance(v, VecT):
            self.align(4)
            p = len(self.b)
            self.b += struct.pack("<I", len(v.tables)) + b"\0" * (4 * len(v.tables))
            for k, t in enumerate(v.tables):
                q = self.obj(t)
                at = p + 4 + 4 * k
                struct.pack_into("<I", self.b, at, q - at)
            return p
        raise TypeError(v)

    def table(self, t):
        # vtable, then the table; scalars inline, references patched after the children are written
        self.align(2)
        vt = len(self.b)
        n = len(t.fields)
        layout, off = [], 4
        for f in t.fields:
            if f is None:
                layout.append(0)
                continue
            fmt = "I" if not isinstance(f[0], str) or f[0] == "off" else f[0]
            size = struct.calcsize("<" + fmt)
            off = (off + size - 1) // size * size
            layout.append(off)
            off += size
        tsize = (off + 3) // 4 * 4
        self.b += struct.pack("<HH", 4 + 2 * n, tsize) + struct.pack("<%dH" % n, *layout)
        self.align(8)
        p = len(self.b)
        self.b += b"\0" * tsize
        struct.pack_into("<i", self.b, p, p - vt)
        for f, o in zip(t.fields, layout):
            if f is not None and f[0] != "off":
                struct.pack_into("<" + f[0], self.b, p + o, f[1])
        for f, o in zip(t.fields, layout):
            if f is not None and f[0] == "off":
                q = self.obj(f[1])
                struct.pack_into("<I", self.b, p + o, q - (p + o))
        return p


def write_model(tensors, ops, inputs, outputs):
    """tensors: list of dict(name, shape, type (str), data (numpy or None), scale, zero_point, quant_dim).
    ops: list of dict(op (name), inputs, outputs, opt (dict)). Returns the .tflite bytes."""
    codes = sorted({CODES[o["op"]] for o in ops})
    buffers = [Table([])]
    ttables = []
    for t in tensors:
        bi = 0
        if t.get("data") is not None:
            buffers.append(Table([("off", np.ascontiguousarray(t["data"]).astype(DT[TYPES[t["type"]]]).tobytes())]))
            bi = len(buffers) - 1
        q = None
        if t.get("scale") is not None:
            q = ("off", Table([None, None, ("off", Vec("f", t["scale"])), ("off", Vec("q", t.get("zero_point", [0] * len(t["scale"])))),
                               None, None, ("i", t.get("quant_dim", 0))]))
        bi = t.get("buffer_index", bi)
        ttables.append(Table([("off", Vec("i", t["shape"])), ("b", TYPES[t["type"]]), ("I", bi), ("off", Str(t["name"])), q]))
    otables = []
    for o in ops:
        code = CODES[o["op"]]
        p = o.get("opt", {})
        opt = None
        if code == 3:
            opt = (1, [("b", p.get("padding", 0)), ("i", p.get("stride_w", 1)), ("i", p.get("stride_h", 1)),
                       ("b", p.get("act", 0)), ("i", p.get("dil_w", 1)), ("i", p.get("dil_h", 1))])
        elif code == 4:
            opt = (2, [("b", p.get("padding", 0)), ("i", p.get("stride_w", 1)), ("i", p.get("stride_h", 1)),
                       ("i", p.get("mult", 1)), ("b", p.get("act", 0)), ("i", p.get("dil_w", 1)), ("i", p.get("dil_h", 1))])
        elif code in (1, 17):
            opt = (5, [("b", p.get("padding", 0)), ("i", p.get("stride_w", 1)), ("i", p.get("stride_h", 1)),
                       ("i", p["filter_w"]), ("i", p["filter_h"]), ("b", p.get("act", 0))])
        elif code == 9:
            opt = (8, [("b", p.get("act", 0))])
        elif code == 25:
            opt = (9, [("f", p.get("beta", 1.0))])
        elif code == 2:
            opt = (10, [("i", p.get("axis", 0)), ("b", p.get("act", 0))])
        elif code == 0:
            opt = (11, [("b", p.get("act", 0))])
        elif code == 18:
            opt = (21, [("b", p.get("act", 0))])
        elif code == 22 and "new_shape" in p:
            opt = (17, [("off", Vec("i", p["new_shape"]))])
        elif code == 40:
            opt = (27, [("B", p.get("keep_dims", 0))])
        opt = o.get("raw_opt", opt)  # (options type, [fields]) for an operator the table above does not know
        fields = [("I", o.get("opcode_index", codes.index(code))), ("off", Vec("i", o["inputs"])), ("off", Vec("i", o["outputs"]))]
        if opt:
            fields += [("B", opt[0]), ("off", Table(opt[1]))]
        otables.append(Table(fields))
    sg = Table([("off", VecT(ttables)), ("off", Vec("i", inputs)), ("off", Vec("i", outputs)), ("off", VecT(otables)),
                ("off", Str("main"))])
    opcodes = [Table([("b", c if c < 127 else 127), None, ("i", 1), ("i", c)]) for c in codes]
    model = Table([("I", 3), ("off", VecT(opcodes)), ("off", VecT([sg])), ("off", Str("attncap test")), ("off", VecT(buffers))])
    w = _Writer()
    root = w.table(model)
    struct.pack_into("<I", w.b, 0, root)
    w.b[4:8] = b"TFL3"
    return bytes(w.b)
