#!/usr/bin/python3
"""Writes tests/fixtures/st_python.safetensors by hand (json + struct + numpy), independently of
our C writer, so tests/test_safetensors.c can check the reader against another implementation.

Regenerate:  /usr/bin/python3 tools/make_safetensors_fixture.py
The tensors are deterministic (no RNG); test_safetensors.c recomputes the same values in C.
"""
import json
import os
import struct

import numpy as np

out = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests", "fixtures", "st_python.safetensors")

# name -> array. Values are formulas the C test recomputes.
tensors = {
    "weight": (np.arange(2 * 3 * 4, dtype=np.float32).reshape(2, 3, 4) * 0.25 - 1.5),
    "half": np.array([0.0, 1.0, -2.5, 65504.0, 6.103515625e-05, 1e-7, -0.0, 3.140625], dtype=np.float16),
    "ids": np.array([[-7, 0, 2147483647], [-2147483648, 1, 42]], dtype=np.int32),
    "bytes": np.arange(5, dtype=np.uint8) * 50,
    "big": np.array([1 << 40, -(1 << 50), 3], dtype=np.int64),
    "empty": np.zeros((0, 4), dtype=np.float32),
    "scalar": np.array(2.5, dtype=np.float32),
}
dt = {np.float32: "F32", np.float16: "F16", np.int32: "I32", np.uint8: "U8", np.int64: "I64"}

# Lay the data out in reverse name order (not the header order) to make sure the reader follows
# data_offsets rather than assuming anything about ordering.
header = {"__metadata__": {"format": "pt", "note": "written by hand: \u00e9\u00e8 \"quoted\" \\ tab\t"}}
data = b""
for name in sorted(tensors, reverse=True):
    a = tensors[name]
    b = a.astype(a.dtype.newbyteorder("<")).tobytes()
    header[name] = {"dtype": dt[a.dtype.type], "shape": list(a.shape), "data_offsets": [len(data), len(data) + len(b)]}
    data += b
h = json.dumps(header, ensure_ascii=False).encode("utf-8")
h += b" " * ((8 - len(h) % 8) % 8)
with open(out, "wb") as f:
    f.write(struct.pack("<Q", len(h)))
    f.write(h)
    f.write(data)
print(out, os.path.getsize(out), "bytes")
