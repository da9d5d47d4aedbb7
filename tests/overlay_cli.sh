#!/usr/bin/env bash
# attncap caption's overlay flags as a user types them (issue #16 item 6): --sheet-only writes the
# sheet alone; --size enlarges a small photo too; --base colour keeps the photo's colours under the
# heat map (grey by default); a bad --base is one line of error.
. "$(dirname "$0")/lib.sh"
MK="$(dirname "$A")/tests/test_captioner"
S=${ATTNCAP_ROOT:-$(cd "$(dirname "$0")/.." && pwd)}/samples

setup() {
  need_data encoders/mobilenet_v1_0.25_128_quant.tflite || return 1
  [ -x "$MK" ] || { t_skip "needs $MK (make tests)"; return 1; }
  [ -f "$T/tiny.safetensors" ] || "$MK" --make-model "$T/tiny.safetensors" || { t_fail "cannot make the tiny model"; return 1; }
  M="--model $T/tiny.safetensors"
}
# WxH of a PNG from its IHDR chunk.
png_size() { od -An -tu1 -j16 -N8 "$1" | awk '{printf "%dx%d", $1*16777216+$2*65536+$3*256+$4, $5*16777216+$6*65536+$7*256+$8}'; }

t_begin sheet_only
if setup; then
  "$A" caption $M --quiet --sheet-only --overlays "$T/so" "$S/dog.jpg" >/dev/null 2>"$T/err"; rc=$?
  if [ $rc -ne 0 ]; then t_fail "exit $rc: $(cat "$T/err")"
  elif [ "$(ls "$T/so/dog" | tr '\n' ' ')" != "caption.json sheet.png " ]; then t_fail "wrote: $(ls "$T/so/dog" | head -3 | tr '\n' ' ')"
  else t_ok; fi
fi

t_begin size_enlarges_small_photos
if setup; then
  # person.jpg is 640x424: --size 1000 makes its overlays 1000 wide (662 rows of photo, then the label)
  "$A" caption $M --quiet --size 1000 --overlays "$T/big" "$S/person.jpg" >/dev/null 2>"$T/err"; rc=$?
  "$A" caption $M --quiet --overlays "$T/plain" "$S/person.jpg" >/dev/null 2>>"$T/err"
  f=$(ls "$T/big/person"/01_*.png 2>/dev/null | head -1); g=$(ls "$T/plain/person"/01_*.png 2>/dev/null | head -1)
  if [ $rc -ne 0 ] || [ -z "$f" ] || [ -z "$g" ]; then t_fail "exit $rc: $(cat "$T/err")"
  else
    big=$(png_size "$f"); plain=$(png_size "$g")
    if [ "${big%x*}" -ne 1000 ] || [ "${big#*x}" -le 662 ]; then t_fail "--size 1000 gave $big"
    elif [ "${plain%x*}" -ne 640 ]; then t_fail "without --size: $plain (the photo's own size expected)"
    else t_ok; fi
  fi
fi

t_begin base_colour_keeps_the_photo_colours
if setup && command -v python3 >/dev/null; then
  "$A" caption $M --quiet --base colour --overlays "$T/col" "$S/dog.jpg" >/dev/null 2>"$T/err" &&
  "$A" caption $M --quiet --overlays "$T/grey" "$S/dog.jpg" >/dev/null 2>>"$T/err"; rc=$?
  if [ $rc -ne 0 ]; then t_fail "exit $rc: $(cat "$T/err")"
  # mean saturation (max - min channel) of the photo part: the grey base has colour only where the map
  # is; the colour base keeps the red bike and the yellow railing everywhere
  elif ! python3 - "$(ls "$T/col/dog"/01_*.png)" "$(ls "$T/grey/dog"/01_*.png)" <<'PY' 2>"$T/err"
import struct, sys, zlib
def rgb_rows(path):
    d = open(path, "rb").read(); w, h = struct.unpack(">II", d[16:24]); i, idat = 8, b""
    while i < len(d):
        n = struct.unpack(">I", d[i:i + 4])[0]; t = d[i + 4:i + 8]
        if t == b"IDAT": idat += d[i + 8:i + 8 + n]
        i += 12 + n
    raw, rows, prev, bpp, st = zlib.decompress(idat), [], bytearray(w * 3), 3, w * 3 + 1
    for y in range(h):
        f, line = raw[y * st], bytearray(raw[y * st + 1:(y + 1) * st])
        for x in range(len(line)):
            a = line[x - bpp] if x >= bpp else 0; b = prev[x]; c = prev[x - bpp] if x >= bpp else 0
            p = a + b - c; pa, pb, pc = abs(p - a), abs(p - b), abs(p - c)
            line[x] = (line[x] + [0, a, b, (a + b) // 2, a if pa <= pb and pa <= pc else b if pb <= pc else c][f]) & 255
        rows.append(line); prev = line
    return w, h, rows
def saturation(path):
    w, h, rows = rgb_rows(path)
    rows = rows[:int(w * 576 / 768)]  # the photo, not the label band
    return sum(max(r[x:x + 3]) - min(r[x:x + 3]) for r in rows for x in range(0, w * 3, 3)) / (w * len(rows))
col, grey = saturation(sys.argv[1]), saturation(sys.argv[2])
assert col > grey * 1.5 and col > 30, (col, grey)
PY
  then t_fail "$(tail -2 "$T/err")"
  else t_ok; fi
fi

t_begin bad_base_one_line
if setup; then
  expect_error "--base sepia" "$A" caption $M --base sepia --overlays "$T/bad" "$S/dog.jpg" &&
    { grep -q 'grey or colour' "$T/err" && [ ! -e "$T/bad" ] && t_ok || t_fail "$(cat "$T/err")"; }
fi

t_end
