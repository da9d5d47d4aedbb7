#!/usr/bin/env bash
# The core API's detector (include/attncap/attncap.h, since 1.1; issue #31 part 5) from a program that
# knows only that header: tests/core_detect.c compiles as C99 and C++17 (-pedantic -Werror), links
# against $BUILD/libattncap.so, and finds in samples/*.jpg the boxes `attncap detect` prints (labels
# equal, scores and boxes within the JSON's rounding: 4 decimals, 1 decimal), from a file, from its
# bytes in memory and from pixels PIL decoded (against the CLI on the same pixels as a BMP); its drawings
# are the CLI's --draw byte for byte; the giraffe's boxes are those of the detector's steps run one by one
# (tools/detect_dump, checked against NumPy by detector_ref.sh); every error path answers with one
# line naming the problem.
. "$(dirname "$0")/lib.sh"
ROOT=${ATTNCAP_ROOT:-$(cd "$(dirname "$0")/.." && pwd)}
B=$(dirname "$A")
SO="$B/libattncap.so"
PY=/usr/bin/python3
P="$T/core_detect"
san=()
readelf -d "$SO" 2>/dev/null | grep -q 'libasan' && san=(-fsanitize=address,undefined)
export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1}

t_begin detect_compiles_as_c99_and_cxx17_against_the_header_alone
built=0
if [ ! -f "$SO" ]; then t_fail "no $SO (make BUILD=... tests builds it)"
elif grep -E '^#include' "$ROOT/tests/core_detect.c" | grep -v -E '<attncap/attncap.h>|<(stdio|stdlib|string)\.h>' | grep -q .; then
  t_fail "core_detect.c includes more than attncap.h and the C library"
else
  mkdir -p "$T/inc/attncap" && cp "$ROOT/include/attncap/attncap.h" "$T/inc/attncap/"
  if ! cc -std=c99 -pedantic -Wall -Wextra -Werror "${san[@]}" -I"$T/inc" "$ROOT/tests/core_detect.c" "$SO" \
       -Wl,-rpath,"$(cd "$B" && pwd)" -o "$P" 2>"$T/cc.err"; then t_fail "C99: $(head -5 "$T/cc.err")"
  elif ! c++ -std=c++17 -pedantic -Wall -Wextra -Werror "${san[@]}" -I"$T/inc" -x c++ "$ROOT/tests/core_detect.c" -x none "$SO" \
       -Wl,-rpath,"$(cd "$B" && pwd)" -o "$T/core_detect_cxx" 2>"$T/cc.err"; then t_fail "C++17: $(head -5 "$T/cc.err")"
  elif ! objdump -T "$P" | grep -qE '\(ATTNCAP_1\.1\)[[:space:]]+ac_detect_file$'; then
    t_fail "the program does not ask for ac_detect_file@ATTNCAP_1.1: $(objdump -T "$P" | grep ac_detect | head -2)"
  else built=1; t_ok; fi
fi

# The detector is yolox_nano.tflite (models/, or ../shared/encoders): without it these skip.
have_detector() {
  [ $built = 1 ] || { t_skip "core_detect did not build"; return 1; }
  (cd "$ROOT" && "$A" detect samples/dog.jpg >/dev/null 2>"$T/det.err") && return 0
  t_skip "no detector here ($(head -1 "$T/det.err")): ../shared/encoders/yolox_nano.tflite"; return 1
}

# compare CORE CLI MIN: core_detect's lines against attncap detect's JSON lines, photo by photo
compare() {
  "$PY" - "$1" "$2" "$3" <<'PY'
import json, sys
core, cli = open(sys.argv[1]).read().split('\n'), [json.loads(l) for l in open(sys.argv[2])]
i, boxes = 0, 0
for o in cli:
    name, w, h, n = core[i].split(' '); i += 1
    assert (int(w), int(h), int(n)) == (o['width'], o['height'], len(o['detections'])), (name, core[i - 1], o)
    for d in o['detections']:
        f = core[i].split(' '); i += 1
        label, score, box = f[0], float(f[1]), [float(x) for x in f[2:]]
        # the JSON rounds scores to 4 decimals and pixels to 1 (half up, from float32)
        assert label == d['label'] and abs(score - d['score']) <= 5e-5 + 1e-6, (name, f, d)
        assert all(abs(a - b) <= 0.05 + 1e-3 for a, b in zip(box, d['box'])), (name, f, d)
        boxes += 1
assert core[i:] == [''], core[i:]
assert boxes >= int(sys.argv[3]), boxes
print('%d photos, %d boxes' % (len(cli), boxes))
PY
}

t_begin detect_file_and_bytes_as_the_cli
if have_detector; then
  (cd "$ROOT" && "$A" detect samples/*.jpg >"$T/cli.json" 2>"$T/err")
  (cd "$ROOT" && "$P" file samples/*.jpg >"$T/core.txt" 2>>"$T/err"); rc=$?
  (cd "$ROOT" && "$T/core_detect_cxx" file samples/*.jpg >"$T/cxx.txt" 2>>"$T/err"); rcx=$?
  if [ $rc -eq 4 ] || [ $rcx -eq 4 ]; then t_fail "bytes in memory gave other boxes: $(head -2 "$T/err")"
  elif [ $rc -ne 0 ] || [ $rcx -ne 0 ]; then t_fail "exit $rc/$rcx: $(head -3 "$T/err")"
  elif ! cmp -s "$T/core.txt" "$T/cxx.txt"; then t_fail "C and C++ differ"
  elif ! compare "$T/core.txt" "$T/cli.json" 10 >"$T/cmp.out" 2>&1; then t_fail "$(tail -2 "$T/cmp.out")"
  else echo "# $(cat "$T/cmp.out")"; t_ok; fi
fi

t_begin detect_giraffe_as_the_steps_checked_against_numpy
# tools/detect_dump runs the detector's steps one by one (letterbox, graph, decoding), each checked
# against NumPy by tests/detector_ref.sh: the core API's boxes are those
DUMP="$B/tools/detect_dump"
if ! have_detector; then :
elif ! need_data encoders/yolox_nano.tflite; then :
elif [ ! -x "$DUMP" ]; then t_skip "needs $DUMP (make tests)"
else
  "$DUMP" "$DATA/encoders/yolox_nano.tflite" "$ROOT/samples/giraffe.jpg" "$T/in.f32" "$T/out.f32" >"$T/dump.txt" 2>"$T/err"
  (cd "$ROOT" && ATTNCAP_DETECTOR="$DATA/encoders/yolox_nano.tflite" "$P" file samples/giraffe.jpg >"$T/g.txt" 2>>"$T/err")
  if ! "$PY" - "$T/dump.txt" "$T/g.txt" "$DATA/encoders/coco_labels.txt" >"$T/cmp.out" 2>&1 <<'PY'; then t_fail "$(tail -2 "$T/cmp.out") $(head -1 "$T/err")"; else echo "# $(cat "$T/cmp.out")"; t_ok; fi
import sys
names = [l.strip() for l in open(sys.argv[3]) if l.strip()]
dump = [l.split() for l in open(sys.argv[1]) if not l.startswith(('scale', 'input'))]
core = [l.split() for l in open(sys.argv[2])][1:]
assert len(dump) == len(core) > 0, (len(dump), len(core))
for d, c in zip(dump, core):  # detect_dump prints 6 and 4 decimals
    assert names[int(d[0])] == c[0], (d, c)
    assert abs(float(d[1]) - float(c[1])) <= 1e-6, (d, c)
    assert all(abs(float(a) - float(b)) <= 1e-4 for a, b in zip(d[2:], c[2:])), (d, c)
print('%d boxes' % len(core))
PY
fi

t_begin detect_rgb_pixels_as_the_cli_on_the_same_pixels
if ! have_detector; then :
elif ! "$PY" -c 'import PIL' 2>/dev/null; then t_skip "needs /usr/bin/python3 with PIL (python3-pil)"
else
  "$PY" - "$ROOT/samples/giraffe.jpg" "$T/px" <<'PY'
import sys
from PIL import Image
im = Image.open(sys.argv[1]).convert('RGB')
im = im.resize((im.width * 2 // 3, im.height * 2 // 3))
open(sys.argv[2] + '.rgb', 'wb').write(im.tobytes())
im.save(sys.argv[2] + '.bmp')
open(sys.argv[2] + '.size', 'w').write('%d %d' % (im.height, im.width))
PY
  read -r H W <"$T/px.size"
  "$A" detect "$T/px.bmp" >"$T/px_cli.json" 2>"$T/err"
  "$P" rgb "$T/px.rgb" "$H" "$W" 2>>"$T/err" | sed "1s|^[^ ]*|$T/px.bmp|" >"$T/px_core.txt"
  if ! compare "$T/px_core.txt" "$T/px_cli.json" 1 >"$T/cmp.out" 2>&1; then t_fail "$(tail -2 "$T/cmp.out") $(head -1 "$T/err")"
  else echo "# pixels: $(cat "$T/cmp.out")"; t_ok; fi
fi

t_begin detect_drawings_as_the_cli_byte_for_byte
if have_detector; then
  (cd "$ROOT" && "$A" detect --draw "$T/draw_cli" samples/*.jpg >/dev/null 2>"$T/err") &&
    mkdir -p "$T/draw_core" && (cd "$ROOT" && "$P" draw "$T/draw_core" samples/*.jpg 2>>"$T/err"); rc=$?
  a=$(cd "$T/draw_cli" 2>/dev/null && ls); b=$(cd "$T/draw_core" 2>/dev/null && ls)
  bad=""
  for f in $a; do cmp -s "$T/draw_cli/$f" "$T/draw_core/$f" || bad="$bad $f"; done
  if [ $rc -ne 0 ]; then t_fail "exit $rc: $(head -3 "$T/err")"
  elif [ -z "$a" ] || [ "$a" != "$b" ]; then t_fail "files differ: CLI $(echo $a | wc -w), core $(echo $b | wc -w)"
  elif [ -n "$bad" ]; then t_fail "differ:$bad"
  else t_ok; fi
fi

t_begin detect_int8_near_float_and_the_same_for_any_thread_count
# --precision int8 (the convolutions' products on integers, cnn_q8.c: its arithmetic is
# tests/test_cnn_q8.c's): the same lines on 1 and 2 threads; every float box scored >= 0.5 found again
# (its label, IoU >= 0.8, score within 0.1), the demo's giraffe, horses and kites among them
if have_detector; then
  (cd "$ROOT" && "$A" detect --threads 1 samples/*.jpg >"$T/f32.json" &&
     "$A" detect --precision int8 --threads 1 samples/*.jpg >"$T/i8_1.json" &&
     "$A" detect --precision int8 --threads 2 samples/*.jpg >"$T/i8_2.json") 2>"$T/err"; rc=$?
  if [ $rc -ne 0 ]; then t_fail "exit $rc: $(head -2 "$T/err")"
  elif ! cmp -s "$T/i8_1.json" "$T/i8_2.json"; then t_fail "int8 on 1 and 2 threads differ"
  elif ! "$PY" - "$T/f32.json" "$T/i8_1.json" >"$T/cmp.out" 2>&1 <<'PY'; then t_fail "$(tail -2 "$T/cmp.out")"; else echo "# $(cat "$T/cmp.out")"; t_ok; fi
import json, sys
def iou(a, b):
    w, h = min(a[2], b[2]) - max(a[0], b[0]), min(a[3], b[3]) - max(a[1], b[1])
    i = max(w, 0) * max(h, 0)
    return i / ((a[2] - a[0]) * (a[3] - a[1]) + (b[2] - b[0]) * (b[3] - b[1]) - i)
f32, i8 = [json.loads(l) for l in open(sys.argv[1])], [json.loads(l) for l in open(sys.argv[2])]
n, worst, seen = 0, 0.0, set()
for a, b in zip(f32, i8):
    for d in a['detections']:
        if d['score'] < 0.5: continue
        m = [e for e in b['detections'] if e['label'] == d['label'] and iou(e['box'], d['box']) >= 0.8]
        assert m and abs(m[0]['score'] - d['score']) <= 0.1, (a['image'], d, m[:1])
        n, worst = n + 1, max(worst, abs(m[0]['score'] - d['score']))
        seen.add(d['label'])
assert {'giraffe', 'horse', 'kite'} <= seen, seen
print('%d boxes >= 0.5 found again, scores within %.3f' % (n, worst))
PY
fi

t_begin detect_error_paths_one_line_each_no_leak
if have_detector; then
  printf 'just some text\n' >"$T/notes.jpg"
  (cd "$ROOT" && "$P" errors "$T" >"$T/errors.txt" 2>"$T/err"); rc=$?
  n_ok=$(grep -c '^ok ' "$T/errors.txt")
  if [ $rc -ne 0 ]; then t_fail "exit $rc: $(grep -v '^ok' "$T/errors.txt" | head -2) $(head -5 "$T/err")"
  elif grep -q '^bad ' "$T/errors.txt"; then t_fail "$(grep '^bad ' "$T/errors.txt" | head -3 | paste -sd' ')"
  elif grep -qE 'AddressSanitizer|LeakSanitizer|runtime error' "$T/err"; then t_fail "sanitizer: $(head -3 "$T/err")"
  elif [ "$n_ok" -lt 15 ]; then t_fail "only $n_ok error cases ran: $(cat "$T/errors.txt" | head -3)"
  else echo "# $n_ok error cases${san:+ under ASan/UBSan}"; t_ok; fi
fi
t_end
