#!/usr/bin/env bash
# attncap ground end to end: its per-word scores against the same numbers computed here in Python
# from `attncap caption --json --attention` (a raster of the boxes, not the library's exact union),
# reference captions by teacher forcing, and hostile box files / missing photos.
. "$(dirname "$0")/lib.sh"
MK="$(dirname "$A")/tests/test_captioner"
ROOT=${ATTNCAP_ROOT:-$(cd "$(dirname "$0")/.." && pwd)}
S=$ROOT/samples
py=$(command -v python3 || true)

tiny() {
  need_data encoders/mobilenet_v1_0.25_128_quant.tflite || return 1
  [ -x "$MK" ] || { t_skip "needs $MK (make tests)"; return 1; }
  [ -f "$T/tiny.safetensors" ] || "$MK" --make-model "$T/tiny.safetensors" || { t_fail "cannot make the tiny model"; return 1; }
  M="--model $T/tiny.safetensors"
}

# A box file naming every word of the tiny model's captions of two samples, so every word is scored.
t_begin scores_match_python
if tiny; then
  if [ -z "$py" ]; then t_skip "needs python3"
  else
    "$A" caption $M --json --attention --quiet "$S/dog.jpg" "$S/person.jpg" >"$T/cap.jsonl" 2>"$T/err"
    "$py" - "$T/cap.jsonl" >"$T/boxes.tsv" <<'PY'
import json, sys
for l in open(sys.argv[1]):
    o = json.loads(l)
    name = o["image"].rsplit("/", 1)[1]
    words = ",".join(sorted(set(o["tokens"])))
    print(f"{name}\t{words}\t0.16,0.43,0.40,0.93 0.30,0.20,0.55,0.50")
    print(f"{name}\t{words}\t0.62,0.32,0.93,0.80")
PY
    "$A" ground $M --boxes "$T/boxes.tsv" --root "$S" --verbose >"$T/v.txt" 2>"$T/err"; rc=$?
    msg=$("$py" - "$T/cap.jsonl" "$T/boxes.tsv" "$T/v.txt" <<'PY'
import json, sys
caps = {o["image"].rsplit("/", 1)[1]: o for o in map(json.loads, open(sys.argv[1]))}
objs = [l.rstrip("\n").split("\t") for l in open(sys.argv[2])]
got = [l.rstrip("\n").split("\t") for l in open(sys.argv[3]) if l.count("\t") == 6]
want = []
N = 700  # raster of the unit square
for photo, words, boxes in objs:
    o = caps[photo]; h, w = o["grid"]
    bx = [tuple(map(float, b.split(","))) for b in boxes.split()]
    def inside(x, y): return any(x0 < x < x1 and y0 < y < y1 for x0, y0, x1, y1 in bx)
    cover = [[0] * w for _ in range(h)]; tot = 0
    for py_ in range(N):
        for px in range(N):
            x, y = (px + .5) / N, (py_ + .5) / N
            if inside(x, y): cover[int(y * h)][int(x * w)] += 1; tot += 1
    cell = N * N / (h * w)
    for tok, a in zip(o["tokens"], o["attention"]):
        mass = sum(a[r * w + c] * cover[r][c] / cell for r in range(h) for c in range(w))
        best = max(range(h * w), key=lambda i: (a[i], -i))
        want.append((photo, tok, mass, tot / (N * N), int(cover[best // w][best % w] > 0)))
assert len(got) == len(want), f"{len(got)} scored words, expected {len(want)}"
for g, (photo, tok, mass, area, hit) in zip(got, want):
    assert g[0] == photo and g[2] == "gen" and g[3] == tok, (g, photo, tok)
    assert abs(float(g[4]) - mass) < 4e-3 and abs(float(g[5]) - area) < 4e-3, (g, mass, area)
    assert int(g[6]) == hit, (g, hit)
print("ok", len(got))
PY
)
    if [ $rc -ne 0 ]; then t_fail "exit $rc: $(head -3 "$T/err")"
    elif [ "${msg%% *}" != ok ]; then t_fail "$msg"
    else t_ok; fi
  fi
fi

# References: a TSV of captions for the sample; teacher forcing scores each naming word of each one.
t_begin references_teacher_forced
if tiny; then
  printf 'dog.jpg\ta dog sits by a bike .\ndog.jpg\tthe dog and the bike and another dog\nother.jpg\ta dog\n' >"$T/refs.tsv"
  printf 'dog.jpg\tdog,dogs\t0.16,0.43,0.40,0.93\ndog.jpg\tbike\t0.16,0.27,0.74,0.78\n' >"$T/b2.tsv"
  "$A" ground $M --boxes "$T/b2.tsv" --root "$S" --data "$T/refs.tsv" --json >"$T/j.txt" 2>"$T/err"; rc=$?
  dog=$(grep '"object": "dog"' "$T/j.txt"); bike=$(grep '"object": "bike"' "$T/j.txt")
  if [ $rc -ne 0 ]; then t_fail "exit $rc: $(head -3 "$T/err")"
  elif ! printf '%s' "$dog" | grep -q '"references": {"n": 3,'; then t_fail "dog: $dog"
  elif ! printf '%s' "$bike" | grep -q '"references": {"n": 2,'; then t_fail "bike: $bike"
  elif [ "$(grep -c . "$T/j.txt")" -ne 3 ]; then t_fail "expected dog, bike, all: $(cat "$T/j.txt")"
  else t_ok; fi
fi

t_begin missing_photo_reported_others_scored
if tiny; then
  printf 'nope.jpg\tdog\t0,0,1,1\ndog.jpg\tdog\t0,0,1,1\n' >"$T/b3.tsv"
  "$A" ground $M --boxes "$T/b3.tsv" --root "$S" --json >"$T/out" 2>"$T/err"; rc=$?
  if [ $rc -ne 1 ]; then t_fail "exit $rc, expected 1"
  elif [ "$(wc -l <"$T/err")" -ne 1 ] || ! grep -q "nope.jpg" "$T/err"; then t_fail "stderr: $(cat "$T/err")"
  elif ! grep -q '"object": "dog", "photos": 1,' "$T/out"; then t_fail "dog.jpg not scored: $(cat "$T/out")"
  else t_ok; fi
fi

t_begin hostile_box_files
if tiny; then
  ok=1
  printf 'dog.jpg\tdog\t0.5,0.5,0.2,0.9\n' >"$T/bad1.tsv"
  head -c 3000 /dev/urandom >"$T/bad2.tsv"
  printf 'dog.jpg\tdog\t0,0,1,1\n' >"$T/good.tsv"
  for f in bad1 bad2; do
    expect_error "$f" "$A" ground $M --boxes "$T/$f.tsv" --root "$S" || { ok=0; break; }
    grep -q "$T/$f.tsv" "$T/err" || { t_fail "$f: error does not name the file: $(cat "$T/err")"; ok=0; break; }
  done
  if [ $ok = 1 ]; then
    expect_error "missing box file" "$A" ground $M --boxes "$T/none.tsv" && \
    expect_error "bad model" "$A" ground --model "$T/bad2.tsv" --boxes "$T/good.tsv" --root "$S" && \
    expect_error "bad data" "$A" ground $M --data "$T/bad2.tsv" --boxes "$T/good.tsv" --root "$S" && t_ok
  fi
fi
t_end
