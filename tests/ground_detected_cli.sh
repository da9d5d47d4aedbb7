#!/usr/bin/env bash
# attncap ground --boxes detected end to end: the objects are the detector's boxes, a caption word is
# scored against the boxes of the COCO category it names. Its numbers are checked against the same
# computed here in NumPy from `attncap caption --json --attention` (the words' attention, the grid;
# ground captions as `--tags off` does) and `attncap detect --json` (boxes in the photo's pixels), with
# a word -> category list of this file's own and a raster of the boxes, not the library's exact union.
# A word naming a category the detector did not find is reported as not detected; a model with regions
# counts a region's attention as spread over its box (regions.h), checked the same way.
. "$(dirname "$0")/lib.sh"
ROOT=${ATTNCAP_ROOT:-$(cd "$(dirname "$0")/.." && pwd)}
S=$ROOT/samples
py=$(command -v /usr/bin/python3 || true)
PHOTOS=("$S/giraffe.jpg" "$S/horses.jpg" "$S/kite.jpg" "$S/dog.jpg" "$S/person.jpg")

ready() {
  need_data encoders/yolox_nano.tflite || return 1
  if [ ! -f "$ROOT/models/attncap.safetensors" ]; then t_skip "needs models/attncap.safetensors"; return 1; fi
  if [ -z "$py" ] || ! "$py" -c 'import numpy' 2>/dev/null; then t_skip "needs /usr/bin/python3 with numpy"; return 1; fi
  DET="$DATA/encoders/yolox_nano.tflite"
  M=(--model "$ROOT/models/attncap.safetensors")
}

# check.py CAPTIONS DETECTIONS VERBOSE: every word the independent reading says names a detected
# category is scored by ground with the same mass, area and hit; every word naming an undetected one is
# reported as not detected; nothing else is reported. Prints "ok N" or the first difference.
cat >"$T/check.py" <<'PY'
import json, sys
import numpy as np
# COCO's categories as this test reads caption words (a list of its own, not the library's matcher):
# the names, their plurals, and the person words these captions use
WORDS = {}
for name in ["person", "bicycle", "car", "dog", "horse", "cow", "zebra", "giraffe", "kite", "bird", "cat",
             "sheep", "elephant", "bear", "frisbee", "surfboard", "boat", "truck", "bus", "bench", "ball", "pizza", "table"]:
    cat = {"ball": "sports ball", "table": "dining table"}.get(name, name)
    WORDS[name] = cat
    WORDS[name + ("" if name.endswith("s") or name == "sheep" else "s")] = cat
for w in ["man", "men", "woman", "women", "people", "boy", "boys", "girl", "girls", "child", "children", "person",
          "persons", "player", "guy", "kid", "kids", "lady", "surfer", "skier", "rider"]:
    WORDS[w] = "person"
WORDS["bike"] = WORDS["bikes"] = "bicycle"
caps = {o["image"]: o for o in map(json.loads, open(sys.argv[1]))}
dets = {o["image"]: o for o in map(json.loads, open(sys.argv[2]))}
got = [g for g in (l.rstrip("\n").split("\t") for l in open(sys.argv[3])) if len(g) >= 5 and g[2] in ("gen", "ref")]
N = 800  # raster of the unit square
xs = (np.arange(N) + 0.5) / N
def overlaps(boxes, x0, y0, x1, y1):  # the rectangle meets the union with positive area
    return any(min(x1, b[2]) > max(x0, b[0]) and min(y1, b[3]) > max(y0, b[1]) for b in boxes)
def share_inside(boxes, x0, y0, x1, y1, n=400):  # the share of the rectangle inside the union, sampled
    gx, gy = x0 + (x1 - x0) * (np.arange(n) + .5) / n, y0 + (y1 - y0) * (np.arange(n) + .5) / n
    return float(np.logical_or.reduce([(gx[None, :] > b[0]) & (gx[None, :] < b[2]) & (gy[:, None] > b[1]) &
                                       (gy[:, None] < b[3]) for b in boxes]).mean())
want = []
for photo, o in caps.items():
    d = dets[photo]
    W, H = d["width"], d["height"]
    gh, gw = o["grid"]
    A = np.array(o["attention"], dtype=np.float64)          # [words, cells]: the regions already spread
    RA = np.array(o.get("region_attention", [[]] * len(A)))  # [words, regions]
    regions = [r["box"] for r in o.get("regions", [])]
    for k, tok in enumerate(o["tokens"]):
        # a word this list lacks: the category ground says it names (its numbers are still checked)
        cat = WORDS.get(tok) or next((g[1] for g in got if g[0] == photo and g[3] == tok), None)
        if cat is None:
            continue
        boxes = [[b[0] / W, b[1] / H, b[2] / W, b[3] / H] for x in d["detections"] if x["label"] == cat for b in [x["box"]]]
        if not boxes:
            want.append((photo, cat, tok, None))
            continue
        inside = np.zeros((N, N), bool)
        for x0, y0, x1, y1 in boxes:
            inside |= (xs[None, :] > x0) & (xs[None, :] < x1) & (xs[:, None] > y0) & (xs[:, None] < y1)
        rows, cols = (np.arange(N) * gh) // N, (np.arange(N) * gw) // N
        cover = np.zeros((gh, gw))
        np.add.at(cover, (rows[:, None].repeat(N, 1), cols[None, :].repeat(N, 0)), inside)
        cover /= (N * N) / (gh * gw)  # each cell's share inside the object
        cells = A[k].reshape(gh, gw).copy()
        mass, best_region, amb = 0.0, None, False
        for r, (x0, y0, x1, y1) in enumerate(regions):  # take each region's spread back off its cells
            iy = [i for i in range(gh) if y0 <= (i + .5) / gh <= y1]
            jx = [j for j in range(gw) if x0 <= (j + .5) / gw <= x1]
            # the JSON's boxes are rounded to 4 decimals: an edge that close to a cell's centre, or a
            # centre that close to a cell's border, may fall the other way in the library's exact box
            near = lambda v, g: min(abs(v * g - (i + .5)) for i in range(g)) < 1e-4 * g
            amb |= any(near(v, gh) for v in (y0, y1)) or any(near(v, gw) for v in (x0, x1))
            if not iy or not jx:
                cy, cx = (y0 + y1) / 2 * gh, (x0 + x1) / 2 * gw
                amb |= abs(cy - round(cy)) < 1e-4 * gh or abs(cx - round(cx)) < 1e-4 * gw
                iy, jx = [min(int(cy), gh - 1)], [min(int(cx), gw - 1)]
            cells[np.ix_(iy, jx)] -= RA[k][r] / (len(iy) * len(jx))
            mass += RA[k][r] * share_inside(boxes, x0, y0, x1, y1)
        mass += float((cells * cover).sum())
        flat = np.concatenate([cells.ravel(), RA[k]]) if len(regions) else cells.ravel()
        best = int(np.argmax(flat))
        if best < gh * gw:
            r, c = divmod(best, gw)
            hit = int(overlaps(boxes, c / gw, r / gh, (c + 1) / gw, (r + 1) / gh))
        else:
            hit = int(overlaps(boxes, *regions[best - gh * gw]))
        srt = np.sort(flat)
        want.append((photo, cat, tok, (mass, float(inside.mean()), hit, srt[-1] - srt[-2] < 2e-3, amb)))
seen = set()
for photo, cat, tok, w in want:  # ground prints a word once per object it names, in caption order
    key = (photo, cat, tok)
    if key in seen:
        continue
    seen.add(key)
    lines = [g for g in got if g[0] == photo and g[1] == cat and g[3] == tok]
    n = sum(1 for p, c, t, _ in want if (p, c, t) == key)
    assert len(lines) == n, f"{photo} {tok} ({cat}): ground reported {len(lines)} lines, expected {n}: {lines}"
    for g, (p, c, t, w2) in zip(lines, [x for x in want if x[:3] == key]):
        assert g[2] == "gen", g
        if w2 is None:
            assert g[4:] == ["not detected"], (g, "expected not detected")
            continue
        mass, area, hit, tie, amb = w2
        assert len(g) == 7, (g, "expected mass, area, hit")
        assert amb or abs(float(g[4]) - mass) < 4e-3, (g, "mass", mass)
        assert abs(float(g[5]) - area) < 4e-3, (g, "area", area)
        assert tie or amb or int(g[6]) == hit, (g, "hit", hit)
extra = [g for g in got if (g[0], g[1], g[3]) not in seen]
assert not extra, f"ground scored words this test reads as naming nothing: {extra}"
print("ok", len(want), sum(w is None for *_, w in want), "(%d near a rounding edge)" % sum(1 for *_, w in want if w and w[4]))
PY

t_begin detected_scores_match_numpy
if ready; then
  "$A" caption "${M[@]}" --tags off --json --attention --quiet "${PHOTOS[@]}" >"$T/cap.jsonl" 2>"$T/err" &&
  "$A" detect --detector "$DET" "${PHOTOS[@]}" >"$T/det.jsonl" 2>>"$T/err" &&
  "$A" ground "${M[@]}" --boxes detected --detector "$DET" --verbose --quiet "${PHOTOS[@]}" >"$T/v.txt" 2>>"$T/err"
  rc=$?
  msg=$("$py" "$T/check.py" "$T/cap.jsonl" "$T/det.jsonl" "$T/v.txt" 2>&1 | tail -1)
  if [ $rc -ne 0 ]; then t_fail "exit $rc: $(head -3 "$T/err")"
  elif [ "${msg%% *}" != ok ]; then t_fail "$msg"
  elif [ "$(echo "$msg" | cut -d' ' -f2)" -lt 3 ]; then t_fail "too few words scored to mean anything: $msg"
  else t_ok; cp "$T/v.txt" "$T/v_grid.txt"; fi
fi

# Reference captions (teacher forcing): a word naming a category the detector finds nowhere in the photo
# (a dog among the horses) is reported as not detected and counted in "undetected"; the horses are scored.
t_begin undetected_word_reported
if ready; then
  printf 'horses.jpg\ta dog runs past two horses\n' >"$T/refs.tsv"
  "$A" detect --detector "$DET" "$S/horses.jpg" >"$T/dh.jsonl" 2>"$T/err"
  labels=$("$py" -c 'import json,sys; print(" ".join(sorted({d["label"] for d in json.load(open(sys.argv[1]))["detections"]})))' "$T/dh.jsonl")
  "$A" ground "${M[@]}" --boxes detected --detector "$DET" --data "$T/refs.tsv" --json --quiet "$S/horses.jpg" >"$T/j.txt" 2>"$T/err"; rc=$?
  "$A" ground "${M[@]}" --boxes detected --detector "$DET" --data "$T/refs.tsv" --verbose --quiet "$S/horses.jpg" >"$T/v2.txt" 2>>"$T/err"
  dog=$(grep '"object": "dog"' "$T/j.txt"); horse=$(grep '"object": "horse"' "$T/j.txt")
  if [ $rc -ne 0 ]; then t_fail "exit $rc: $(head -3 "$T/err")"
  elif [[ " $labels " == *" dog "* ]] || [[ " $labels " != *" horse "* ]]; then t_fail "the detector's labels changed: $labels"
  elif ! grep -q '"references": {"n": 0,.*"undetected": 1}' <<<"$dog"; then t_fail "dog: $dog"
  elif ! grep -q '"photos": 0, "named": 0' <<<"$dog"; then t_fail "dog counted as found: $dog"
  elif ! grep -q '"photos": 1,.*"references": {"n": 1,.*"undetected": 0}' <<<"$horse"; then t_fail "horse: $horse"
  elif ! grep -qP '^.*horses.jpg\tdog\tref\tdog\tnot detected$' "$T/v2.txt"; then t_fail "verbose: $(cat "$T/v2.txt")"
  elif ! grep -qP '^.*horses.jpg\thorse\tref\thorses\t[0-9.]+\t[0-9.]+\t[01]$' "$T/v2.txt"; then t_fail "verbose: $(cat "$T/v2.txt")"
  else t_ok; fi
fi

t_begin detected_usage_errors
if ready; then
  printf 'dog.jpg\tdog\t0,0,1,1\n' >"$T/good.tsv"
  expect_error "no photos" "$A" ground "${M[@]}" --boxes detected &&
  expect_error "photos with a box file" "$A" ground "${M[@]}" --boxes "$T/good.tsv" "$S/dog.jpg" &&
  expect_error "--detector with a box file" "$A" ground "${M[@]}" --boxes "$T/good.tsv" --detector "$DET" &&
  expect_error "a bad detector" "$A" ground "${M[@]}" --boxes detected --detector "$T/good.tsv" "$S/dog.jpg" &&
  expect_error "only a missing photo" "$A" ground "${M[@]}" --boxes detected --detector "$DET" "$T/none.jpg" && {
    "$A" ground "${M[@]}" --boxes detected --detector "$DET" --json --quiet "$T/none.jpg" "$S/dog.jpg" >"$T/o" 2>"$T/err"; rc=$?
    if [ $rc -ne 1 ]; then t_fail "a missing photo among others: exit $rc, expected 1"
    elif [ "$(wc -l <"$T/err")" -ne 1 ] || ! grep -q none.jpg "$T/err"; then t_fail "stderr: $(cat "$T/err")"
    elif ! grep -q '"object": "dog", "photos": 1,' "$T/o"; then t_fail "dog.jpg not scored: $(cat "$T/o")"
    else t_ok; fi
  }
fi

# A model with regions (trained here on ../shared's 100 COCO photos and their detections, as
# tests/copy_cli.sh does): its attention falls on cells and regions; the same check, on those photos
# (this small model's words, "pizza", "table", "man", are found there).
t_begin detected_regions_model
if ready && need_data data/coco/images && need_data encoders/mobilenet_v1_0.25_128_quant.tflite && coco_features; then
  if "$A" detect --detector "$DET" --min-score 0.1 "$COCO"/images/* >"$T/cocodet.jsonl" 2>"$T/err" &&
     coco_train "$T/regions.safetensors" --detections "$T/cocodet.jsonl"; then
    R=(--model "$T/regions.safetensors" --encoder "$ENC")
    export ATTNCAP_DETECTOR="$DET"
    "$A" caption "${R[@]}" --tags off --json --attention --quiet "$COCO"/images/* >"$T/rcap.jsonl" 2>"$T/err" &&
    "$A" ground "${R[@]}" --boxes detected --verbose --quiet "$COCO"/images/* >"$T/rv.txt" 2>>"$T/err"
    rc=$?
    "$A" detect "$COCO"/images/* >"$T/rdet.jsonl" 2>>"$T/err"
    msg=$("$py" "$T/check.py" "$T/rcap.jsonl" "$T/rdet.jsonl" "$T/rv.txt" 2>&1 | tail -1)
    nreg=$("$py" -c 'import json,sys; print(sum(len(json.loads(l).get("regions", [])) for l in open(sys.argv[1])))' "$T/rcap.jsonl")
    if [ $rc -ne 0 ]; then t_fail "exit $rc: $(head -3 "$T/err")"
    elif [ "$nreg" -eq 0 ]; then t_fail "the model attended to no regions"
    elif [ "${msg%% *}" != ok ]; then t_fail "$msg"
    elif [ $(($(echo "$msg" | cut -d' ' -f2) - $(echo "$msg" | cut -d' ' -f3))) -lt 10 ]; then t_fail "too few words scored: $msg"
    else t_ok; fi
  fi
fi
t_end
