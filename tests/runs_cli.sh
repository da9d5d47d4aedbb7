#!/usr/bin/env bash
# Resumable runs and their outputs (issue #32, 3): eval --report DIR is checked before any captioning;
# caption --overlays refuses existing folders before any work, and --skip-existing prints the photos
# done before again (from DIR/<stem>/caption.json) so stdout stays whole and in order.
. "$(dirname "$0")/lib.sh"
ROOT=${ATTNCAP_ROOT:-$(cd "$(dirname "$0")/.." && pwd)}
ENCNAME=mobilenet_v2_1.0_224_quant.tflite
# the shipped model and its encoder (models/ or ../shared)
shipped() {
  if [ -f "$ROOT/models/$ENCNAME" ] || { [ -n "$DATA" ] && [ -f "$DATA/encoders/$ENCNAME" ]; }; then return 0; fi
  t_skip "needs the encoder $ENCNAME (make models, or ../shared)"; return 1
}

t_begin eval_report_dir_checked_before_captioning
# a report under a file, or on a file system nobody writes (/proc): one line naming it, exit 1, and
# nothing captioned (--results-out, written after the captioning, is not there)
if shipped; then
  echo x >"$T/file"
  ok=1
  for bad in "$T/file/report" "/proc/attncap-report-$$"; do
    expect_error "--report $bad" "$A" eval --model "$ROOT/models/attncap.safetensors" --data "$ROOT/samples/captions.tsv" --images "$ROOT/samples" \
      --split all --results-out "$T/res.jsonl" --report "$bad" || { ok=0; break; }
    if ! grep -q -- "--report: $bad: cannot be written" "$T/err"; then t_fail "$bad: $(cat "$T/err")"; ok=0; break; fi
    if [ -e "$T/res.jsonl" ]; then t_fail "$bad: captioned before refusing the report"; ok=0; break; fi
  done
  # a new report directory under a writable one is fine (made by the report)
  if [ $ok = 1 ] && ! "$A" eval --model "$ROOT/models/attncap.safetensors" --data "$ROOT/samples/captions.tsv" --images "$ROOT/samples" --split all \
       --quiet --no-sheets --report "$T/new/deeper/report" >/dev/null 2>"$T/err"; then t_fail "writable: $(cat "$T/err")"; ok=0; fi
  [ $ok = 1 ] && { [ -f "$T/new/deeper/report/index.html" ] && t_ok || t_fail "no report written"; }
fi

MK="$(dirname "$A")/tests/test_captioner"
S="$ROOT/samples"
tiny() {
  need_data encoders/mobilenet_v1_0.25_128_quant.tflite || return 1
  [ -x "$MK" ] || { t_skip "needs $MK (make tests)"; return 1; }
  [ -f "$T/tiny.safetensors" ] || "$MK" --make-model "$T/tiny.safetensors" || { t_fail "cannot make the tiny model"; return 1; }
  M="--model $T/tiny.safetensors"
}

t_begin existing_folders_refused_before_work
# a second run into the same DIR without --force or --skip-existing: one line naming a folder and the
# way on, exit 1, nothing captioned (no line on stdout)
if tiny; then
  "$A" caption $M --quiet --overlays "$T/ov1" "$S/dog.jpg" "$S/kite.jpg" >/dev/null 2>"$T/err0"
  expect_error "second run" "$A" caption $M --overlays "$T/ov1" "$S/dog.jpg" "$S/eagle.jpg" "$S/kite.jpg" &&
  if [ -s "$T/out" ]; then t_fail "captioned anyway: $(cat "$T/out")"
  elif ! grep -qF "$T/ov1/dog and more already exist (2 of 3 photos' overlay folders): add --skip-existing" "$T/err"; then
    t_fail "message: $(cat "$T/err")"
  elif [ -d "$T/ov1/eagle" ]; then t_fail "the new photo was done"
  else t_ok; fi
fi

t_begin skip_existing_prints_every_line_in_order
# done before: dog and kite (their caption.json holds the JSON line); resumed over dog eagle kite with
# --skip-existing: three lines in input order, the skipped ones as saved (image: the path given now)
if tiny; then
  "$A" caption $M --quiet --json --overlays "$T/ov2" "$S/dog.jpg" "$S/kite.jpg" >"$T/first" 2>"$T/err0"
  mkdir -p "$T/in" && cp "$S/dog.jpg" "$S/eagle.jpg" "$S/kite.jpg" "$T/in/"
  "$A" caption $M --quiet --json --skip-existing --overlays "$T/ov2" "$T/in" >"$T/json" 2>"$T/err1"; rc1=$?
  "$A" caption $M --quiet --skip-existing --overlays "$T/ov2" "$T/in" >"$T/plain" 2>"$T/err2"; rc2=$?
  msg=$(python3 - "$T/first" "$T/json" "$T/plain" "$T/ov2" "$T/in" <<'PY'
import json, sys
first, js, plain, ov, inp = sys.argv[1:]
a = [json.loads(l) for l in open(first)]
b = [json.loads(l) for l in open(js)]
assert [r['image'] for r in b] == ['%s/%s.jpg' % (inp, n) for n in ('dog', 'eagle', 'kite')], [r['image'] for r in b]
for old, new in ((a[0], b[0]), (a[1], b[2])):
    saved = json.loads(open('%s/%s/caption.json' % (ov, old['image'].split('/')[-1][:-4])).read())
    assert saved == old, (saved, old)
    assert {k: v for k, v in new.items() if k != 'image'} == {k: v for k, v in old.items() if k != 'image'}
p = [l.rstrip('\n').split('\t') for l in open(plain)]
assert [x[0] for x in p] == [r['image'] for r in b] and [x[1] for x in p] == [r['caption'] for r in b], p
print('ok')
PY
)
  if [ $rc1 -ne 0 ] || [ $rc2 -ne 0 ]; then t_fail "exit $rc1 $rc2: $(cat "$T/err1" "$T/err2" | head -3)"
  elif [ "$msg" != ok ]; then t_fail "$msg"
  else t_ok; fi
fi

t_begin report_gallery_of_a_caption_run
# attncap report over caption --json lines: DIR/index.html has one row per line, in order, with the
# photo's thumbnail (a PNG of at most 200 pixels a side), its caption (escaped) and confidence, and a
# link to a copy of its sheet; a line that is not caption's JSON is refused naming the file and line
if tiny; then
  "$A" caption $M --quiet --json --overlays "$T/gov" "$S/dog.jpg" "$S/kite.jpg" "$S/eagle.jpg" >"$T/run.jsonl" 2>"$T/err0"
  "$A" report "$T/run.jsonl" --out "$T/gal" >/dev/null 2>"$T/err"; rc=$?
  msg=$(python3 - "$T/run.jsonl" "$T/gal" <<'PY'
import html.parser, json, os, struct, sys
rows = [json.loads(l) for l in open(sys.argv[1])]
d = sys.argv[2]
class P(html.parser.HTMLParser):
    def __init__(s): super().__init__(); s.rows = []; s.td = None
    def handle_starttag(s, tag, a):
        a = dict(a)
        if tag == 'tr' and 'data-n' in a: s.rows.append({'caption': a['data-s'], 'img': None, 'sheet': None, 'cells': []})
        elif s.rows and tag == 'img': s.rows[-1]['img'] = a['src']
        elif s.rows and tag == 'a': s.rows[-1]['sheet'] = a['href']
        elif s.rows and tag == 'td': s.td = ''
    def handle_data(s, t):
        if s.td is not None: s.td += t
    def handle_endtag(s, tag):
        if tag == 'td' and s.rows and s.td is not None: s.rows[-1]['cells'].append(s.td.strip()); s.td = None
p = P(); p.feed(open(os.path.join(d, 'index.html')).read())
assert len(p.rows) == len(rows), (len(p.rows), len(rows))
for r, o in zip(p.rows, rows):
    assert r['caption'] == o['caption'] and o['caption'] in r['cells'][2], (r, o['caption'])
    conf = o.get('confidence')
    assert r['cells'][3] == ('%.3f' % conf if conf else '\u2013'), (r['cells'][3], conf)
    png = open(os.path.join(d, r['img']), 'rb').read()
    w, h = struct.unpack('>II', png[16:24])
    assert png[:8] == b'\x89PNG\r\n\x1a\n' and max(w, h) <= 200, (r['img'], w, h)
    sheet = [x for x in o['overlays'] if x.endswith('/sheet.png')][0]
    assert open(os.path.join(d, r['sheet']), 'rb').read() == open(sheet, 'rb').read(), r['sheet']
print('ok')
PY
)
  echo '{"x": 1}' >"$T/bad.jsonl"
  if [ $rc -ne 0 ]; then t_fail "exit $rc: $(cat "$T/err")"
  elif [ "$msg" != ok ]; then t_fail "$msg"
  elif ! expect_error "bad line" "$A" report "$T/bad.jsonl" --out "$T/gal2"; then :
  elif ! grep -q "bad.jsonl:1: not a caption's JSON line" "$T/err"; then t_fail "bad line: $(cat "$T/err")"
  else t_ok; fi
fi

t_end
