#!/usr/bin/env bash
# attncap eval --report (issue #16 item 5): the title and the model's name; --images with
# --refs/--results (thumbnails); only the sheets the page links are copied; captions and references
# as written (scores from the tokenized text); per-image BLEU-4 smoothed (Lin & Och), checked against
# an independent Python implementation; the search box (run in Chromium); the histogram; --compare.
. "$(dirname "$0")/lib.sh"
CH=$(command -v chromium || command -v chromium-browser || true)

# refs in $T, photos in $T/imgs: not where COCO JSON's photos are looked for by default (beside it)
mkdir -p "$T/imgs"
python3 - "$T/imgs" <<'PY'
import struct, sys, zlib
def png(path, w, h, rgb):
    raw = b"".join(b"\0" + bytes(rgb) * w for _ in range(h))
    ch = lambda t, d: struct.pack(">I", len(d)) + t + d + struct.pack(">I", zlib.crc32(t + d) & 0xffffffff)
    open(path, "wb").write(b"\x89PNG\r\n\x1a\n" + ch(b"IHDR", struct.pack(">IIBBBBB", w, h, 8, 2, 0, 0, 0))
                           + ch(b"IDAT", zlib.compress(raw)) + ch(b"IEND", b""))
png(sys.argv[1] + "/a.png", 64, 48, (200, 30, 30)); png(sys.argv[1] + "/b.png", 48, 64, (30, 30, 200))
png(sys.argv[1] + "/c.png", 50, 50, (30, 200, 30))
PY
cat >"$T/refs.json" <<'J'
{"images": [{"id": 1, "file_name": "a.png"}, {"id": 2, "file_name": "b.png"}, {"id": 3, "file_name": "c.png"}],
 "annotations": [{"image_id": 1, "caption": "A Dog runs on the grass."}, {"image_id": 1, "caption": "A brown dog, running fast!"},
                 {"image_id": 2, "caption": "A cat sleeps on a red sofa."}, {"image_id": 2, "caption": "The cat is asleep."},
                 {"image_id": 3, "caption": "Two people ride bikes down a street."}]}
J
# JSON lines, as attncap caption --json writes them, with a model named
cat >"$T/res.jsonl" <<'J'
{"image_id": 1, "caption": "A DOG, running on grass!", "model": "mine.safetensors"}
{"image_id": 2, "caption": "a cat sleeps on the sofa", "model": "mine.safetensors"}
{"image_id": 3, "caption": "two people riding bikes on a road", "model": "mine.safetensors"}
J
cat >"$T/other.json" <<'J'
[{"image_id": 1, "caption": "a dog"}, {"image_id": 2, "caption": "A cat sleeps on a red sofa."}]
J
h="$T/rep/index.html"
"$A" eval --refs "$T/refs.json" --results "$T/res.jsonl" --images "$T/imgs" --no-meteor --report "$T/rep" \
  --per-image "$T/pi.json" >/dev/null 2>"$T/err"; rc=$?

t_begin images_dir_gives_thumbnails_with_refs
if [ $rc -ne 0 ]; then t_fail "$(cat "$T/err")"
elif [ "$(grep -o 'src="thumbs/[0-9]*\.png"' "$h" | wc -l)" -ne 3 ]; then t_fail "expected 3 thumbnails"
else
  bad=0; for f in $(grep -o 'src="thumbs/[^"]*"' "$h" | sed 's/^src="//; s/"$//'); do [ -s "$T/rep/$f" ] || bad=1; done
  [ $bad = 0 ] && t_ok || t_fail "a thumbnail file is missing"
fi

t_begin model_name_and_title
if [ $rc -ne 0 ]; then t_skip "no report"
elif ! grep -q '<span class="model">mine.safetensors</span>' "$h" || ! grep -q '<title>attncap eval: mine.safetensors on ' "$h"; then
  t_fail "no model name: $(grep -o '<title>.*</title>' "$h")"
else t_ok; fi

t_begin captions_and_references_as_written_scores_tokenized
# shown as written...
if [ $rc -ne 0 ]; then t_skip "no report"
elif ! grep -q '<td class="cap">A DOG, running on grass!</td>' "$h" || ! grep -q '<li>A brown dog, running fast!</li>' "$h"; then
  t_fail "not as written"
else
  # ...and scored as coco-caption does: the same numbers as for text tokenized beforehand
  sed 's/A DOG, running on grass!/a dog running on grass/' "$T/res.jsonl" >"$T/res_tok.jsonl"
  j1=$("$A" eval --refs "$T/refs.json" --results "$T/res.jsonl" --no-meteor --json 2>&1)
  j2=$("$A" eval --refs "$T/refs.json" --results "$T/res_tok.jsonl" --no-meteor --json 2>&1)
  [ "$j1" = "$j2" ] && t_ok || t_fail "tokenized scores differ: $j1 vs $j2"
fi

t_begin per_image_bleu4_is_smoothed_sentence_bleu
# BLEU+1 (Lin & Och 2004; NLTK's method 2), written here independently from the C code
if [ $rc -ne 0 ]; then t_skip "no report"
elif ! python3 - "$h" "$T/pi.json" <<'PY' 2>"$T/err"
import collections, json, math, re, sys
html = open(sys.argv[1]).read()
shown = {int(n): float(b) for n, b in re.findall(r'<tr data-n="(\d+)" data-c="[^"]*" data-b="([^"]*)"', html)}
rows = json.load(open(sys.argv[2]))  # tokenized candidate and references, per image
def ngrams(ws, n): return collections.Counter(tuple(ws[i:i + n]) for i in range(len(ws) - n + 1))
def bleu1(cand, refs):
    c = cand.split(); rs = [r.split() for r in refs]
    logs = 0.0
    for n in range(1, 5):
        cn = ngrams(c, n); m = sum(min(k, max(ngrams(r, n)[g] for r in rs)) for g, k in cn.items())
        num, den = m + (n > 1), max(len(c) - n + 1, 0) + (n > 1)
        if num == 0 or den == 0: return 0.0
        logs += math.log(num / den)
    ref_len = min((abs(len(r) - len(c)), len(r)) for r in rs)[1]
    bp = 1.0 if len(c) >= ref_len else math.exp(1 - ref_len / len(c))
    return bp * math.exp(logs / 4)
zero_coco = 0
for i, r in enumerate(rows, 1):
    want = bleu1(r["candidate"], r["references"])
    assert abs(shown[i] - want) < 1e-5, (i, shown[i], want, r)
    zero_coco += r["BLEU-4"] < 1e-6
# the point: coco-caption's per-image BLEU-4 is 0 where no 4-gram matches; the smoothed one is not
assert zero_coco >= 1 and all(v > 0.01 for v in shown.values()), (zero_coco, shown)
PY
then t_fail "$(tail -3 "$T/err")"
else t_ok; fi

t_begin histogram_counts_every_image
if [ $rc -ne 0 ]; then t_skip "no report"
elif ! python3 - "$h" <<'PY' 2>"$T/err"
import math, re, sys
html = open(sys.argv[1]).read()
cider = [float(c) for c in re.findall(r'<tr data-n="\d+" data-c="([^"]*)"', html)]
counts = [int(c) for c in re.findall(r'<rect class="bin0" data-count="(\d+)"', html)]
hi = max(1.0, max(math.ceil(c) for c in cider))
want = [0] * 20
for c in cider: want[min(19, int(c / hi * 20))] += 1
assert counts == want, (counts, want)
PY
then t_fail "$(tail -3 "$T/err")"
else t_ok; fi

t_begin compare_two_runs_per_image_deltas
"$A" eval --refs "$T/refs.json" --results "$T/res.jsonl" --no-meteor --report "$T/cmp" --compare "$T/other.json" \
  >/dev/null 2>"$T/err"; rc2=$?
"$A" eval --refs "$T/refs.json" --results "$T/other.json" --no-meteor --per-image "$T/pi_other.json" >/dev/null 2>>"$T/err"
if [ $rc2 -ne 0 ]; then t_fail "$(cat "$T/err")"
elif ! python3 - "$T/cmp/index.html" "$T/pi.json" "$T/pi_other.json" <<'PY' 2>"$T/err"
import json, re, sys
html = open(sys.argv[1]).read()
mine = {str(r["image_id"]): r["CIDEr-D"] for r in json.load(open(sys.argv[2]))}
other = {str(r["image_id"]): r["CIDEr-D"] for r in json.load(open(sys.argv[3]))}
rows = re.findall(r'<tr data-n="(\d+)"[^>]* data-d="([^"]*)".*?<div class="id">([^<]*)</div>', html)
assert len(rows) == 3, rows
for n, d, ident in rows:
    if ident in other: assert abs(float(d) - (mine[ident] - other[ident])) < 1e-5, (ident, d, mine, other)
    else: assert float(d) < -1e8, (ident, d)  # not in the other run: a dash, sorted last
assert "other: " in html and "a dog" in html and "&ndash;" in html
PY
then t_fail "$(tail -3 "$T/err")"
else t_ok; fi

t_begin compare_bad_usage
ok=1
expect_error "--compare without --report" "$A" eval --refs "$T/refs.json" --results "$T/res.jsonl" --compare "$T/other.json" || ok=0
expect_error "--compare missing file" "$A" eval --refs "$T/refs.json" --results "$T/res.jsonl" --no-meteor \
  --report "$T/cmp2" --compare "$T/nope.json" || ok=0
[ $ok = 1 ] && [ ! -e "$T/cmp2/index.html" ] && t_ok || { [ $ok = 1 ] && t_fail "a report was written"; }

t_begin search_box_filters_rows_in_chromium
if [ -z "$CH" ]; then t_skip "needs chromium (apt-get install chromium)"
elif [ $rc -ne 0 ]; then t_skip "no report"
else
  # #q=... fills the box on load, as typing would; the script hides the rows without the words
  timeout 60 "$CH" --headless --no-sandbox --disable-gpu --dump-dom "file://$h#q=cat%20sofa" >"$T/dom.html" 2>/dev/null
  shown=$(grep -o '<tr data-n="[0-9]*"[^>]*>' "$T/dom.html" | grep -vc 'display: none')
  hidden=$(grep -o '<tr data-n="[0-9]*"[^>]*>' "$T/dom.html" | grep -c 'display: none')
  if [ "$shown" -ne 1 ] || [ "$hidden" -ne 2 ]; then t_fail "shown $shown, hidden $hidden (want 1 and 2)"
  elif ! grep -q '1 of 3 images shown' "$T/dom.html"; then t_fail "no count"
  else t_ok; fi
fi

t_begin data_mode_title_model_and_only_linked_sheets
if need_data data/coco/captions.json && need_data encoders/mobilenet_v2_1.0_224_quant.tflite; then
  R=${ATTNCAP_ROOT:-$(cd "$(dirname "$0")/.." && pwd)}
  # the default model, found as caption finds it: the page names the file
  (cd "$R" && "$A" eval --data "$DATA/data/coco/captions.json" --split all --limit 2 --beam 1 --no-meteor --quiet \
     --threads 2 --report "$T/rd" --results-out "$T/rd.json") >/dev/null 2>"$T/err"; rc3=$?
  hd="$T/rd/index.html"
  linked=$(grep -o 'href="sheets/[^"]*"' "$hd" 2>/dev/null | wc -l)
  files=$(find "$T/rd/sheets" -type f 2>/dev/null | wc -l)
  if [ $rc3 -ne 0 ]; then t_fail "$(cat "$T/err")"
  elif grep -q '(null)\|(default)' "$hd"; then t_fail "title: $(grep -o '<title>.*</title>' "$hd")"
  elif ! grep -q '<title>attncap eval: attncap.safetensors on .*coco/captions.json (all split)</title>' "$hd" ||
       ! grep -q 'class="model">[^<]*models/attncap.safetensors<' "$hd"; then t_fail "title/model: $(grep -o '<title>.*</title>' "$hd")"
  elif [ "$linked" -ne 2 ] || [ "$files" -ne 2 ]; then t_fail "$linked sheets linked, $files files copied"
  # the results written name the model, so a report of them (or --compare with them) names it too
  elif ! "$A" eval --refs "$DATA/data/coco/captions.json" --results "$T/rd.json" --no-meteor --report "$T/rd2" \
         --compare "$T/rd.json" >/dev/null 2>"$T/err" ||
       [ "$(grep -c 'attncap.safetensors' "$T/rd2/index.html")" -lt 2 ]; then t_fail "results-out lost the model: $(cat "$T/err")"
  else t_ok; fi
fi

t_end
