#!/usr/bin/python3
"""Hand-made images that Debian's stb_image 2.27 decodes from uninitialised memory without failing
(src/image/image.c: jpeg_frame, pad_palette). usage: /usr/bin/python3 fuzz/make_stb_cases.py
(called by fuzz/make_corpus.sh). Every block is flat mid-grey: a one-code DC table (category 0,
diff 0) and a one-code AC table (EOB), so a block is the two bits '00' and a correct decoder gives
128 everywhere. Writes the valid restart-marker case to fuzz/corpus/image/ and the corrupt ones
(checked by name in tests/test_fuzz_regress.c) to fuzz/crashes/image/.
The palette cases: a 4x2 BMP and PNG whose pixels are indices 0, 1, 200 (BMP) / 5 (PNG), 1 into a
2-colour palette (red, green); the index past the end must decode as black, as libpng does."""
import struct
import zlib

def seg(marker, payload):
    return b"\xff" + bytes([marker]) + struct.pack(">H", len(payload) + 2) + payload

def jpeg(ncomp=1, tq=0, dri=None, scans=((1,),), rst=True):
    out = b"\xff\xd8" + seg(0xDB, b"\x00" + b"\x01" * 64)
    comps = b"".join(bytes([c + 1, 0x11, tq if c else 0]) for c in range(ncomp))
    out += seg(0xC0, b"\x08" + struct.pack(">HH", 8, 16) + bytes([ncomp]) + comps)
    out += seg(0xC4, b"\x00" + b"\x01" + b"\x00" * 15 + b"\x00")  # DC table 0: one code, category 0
    out += seg(0xC4, b"\x10" + b"\x01" + b"\x00" * 15 + b"\x00")  # AC table 0: one code, EOB
    if dri:
        out += seg(0xDD, struct.pack(">H", dri))
    for ids in scans:
        out += seg(0xDA, bytes([len(ids)]) + b"".join(bytes([i, 0x00]) for i in ids) + b"\x00\x3f\x00")
        blocks = 2 * len(ids)  # two blocks (16x8) per component, 1x1 sampling
        if dri:  # one MCU per interval: '00' padded with ones, then RSTn
            data = b"".join(b"\x3f" + (bytes([0xFF, 0xD0 + k % 8]) if rst and k < 1 else b"") for k in range(2))
        else:
            bits = "00" * blocks
            bits += "1" * (-len(bits) % 8)
            data = bytes(int(bits[i:i + 8], 2) for i in range(0, len(bits), 8))
        out += data
    return out + b"\xff\xd9"

def bmp_palette():
    pal = b"\x00\x00\xff\x00" + b"\x00\xff\x00\x00"  # BGRx: red, green
    rows = bytes([0, 1, 200, 1]) * 2
    off = 14 + 40 + len(pal)
    return (b"BM" + struct.pack("<IHHI", off + len(rows), 0, 0, off)
            + struct.pack("<IiiHHIIiiII", 40, 4, 2, 1, 8, 0, len(rows), 0, 0, 2, 0) + pal + rows)

def bmp_no_palette():  # 1-bit pixels starting 1 byte before the palette could: stb reads none
    rows = b"\x55\x00\x00\x00" * 2
    off = 14 + 40 - 1
    return (b"BM" + struct.pack("<IHHI", off + len(rows), 0, 0, off)
            + struct.pack("<IiiHHIIiiII", 40, 4, 2, 1, 1, 0, len(rows), 0, 0, 2, 0)[:-1] + rows)

def bmp_os2_palette():  # OS/2 v1 header, 1-bit, 2-colour palette: stb counts -2 entries
    pal = b"\x00\x00\xff" + b"\x00\xff\x00"  # BGR: red, green
    rows = b"\x50\x00\x00\x00" * 2  # 0 1 0 1
    off = 14 + 12 + len(pal)
    return b"BM" + struct.pack("<IHHI", off + len(rows), 0, 0, off) + struct.pack("<IHHHH", 12, 4, 2, 1, 1) + pal + rows

def png_palette():
    def chunk(t, d):
        return struct.pack(">I", len(d)) + t + d + struct.pack(">I", zlib.crc32(t + d))
    raw = b"".join(b"\x00" + bytes([0, 1, 5, 1]) for _ in range(2))
    return (b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", struct.pack(">IIBBBBB", 4, 2, 8, 3, 0, 0, 0))
            + chunk(b"PLTE", b"\xff\x00\x00\x00\xff\x00") + chunk(b"IDAT", zlib.compress(raw)) + chunk(b"IEND", b""))

cases = {
    "corpus/image/jpeg-restart-markers.jpg": jpeg(dri=1),
    "crashes/image/jpeg-restart-missing": jpeg(dri=1, rst=False),
    "crashes/image/jpeg-undefined-dqt": jpeg(ncomp=3, tq=1, scans=((1, 2, 3),)),
    "crashes/image/jpeg-component-never-coded": jpeg(ncomp=3, scans=((1,),)),
    "crashes/image/bmp-palette-index-past-end": bmp_palette(),
    "crashes/image/png-palette-index-past-end": png_palette(),
    "crashes/image/bmp-palette-missing": bmp_no_palette(),
    "crashes/image/bmp-os2-small-palette": bmp_os2_palette(),
}
for name, data in cases.items():
    open("fuzz/" + name, "wb").write(data)
