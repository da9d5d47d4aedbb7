#!/usr/bin/env bash
# TSV data sets (issue #16 item 7): `attncap help data` documents the formats, the hashed 90/5/5 split
# and where photos are looked up, and the program does what it says: `eval --split test` over a TSV
# takes exactly the photos an independent Python implementation of the documented hash puts in test,
# an optional third column overrides the hash, and photos are found in images/ beside the TSV or
# under --images.
. "$(dirname "$0")/lib.sh"
MK="$(dirname "$A")/tests/test_captioner"
S=${ATTNCAP_ROOT:-$(cd "$(dirname "$0")/.." && pwd)}/samples
py=$( [ -x /usr/bin/python3 ] && echo /usr/bin/python3 || command -v python3 || true)

t_begin help_data_documents_the_split
"$A" help data >"$T/help" 2>"$T/err"; rc=$?
if [ $rc -ne 0 ] || [ -s "$T/err" ]; then t_fail "exit $rc: $(cat "$T/err")"
elif ! grep -q "90/5/5" "$T/help" || ! grep -q "FNV-1a" "$T/help" || ! grep -qF "h ^= h >> 29" "$T/help" ||
     ! grep -q "images/ beside FILE" "$T/help" || ! grep -q -- "--images DIR" "$T/help" || ! grep -q "split" "$T/help"; then
  t_fail "attncap help data does not document the split and the photo folder"
elif ! "$A" eval --help | grep -q "attncap help data"; then t_fail "eval --help does not point to it"
else t_ok; fi

# the test split by the documented rule, in Python
py_split() {
  "$py" - "$@" <<'PY'
import sys
def split(name):
    h = 1469598103934665603
    for b in name.encode():
        h = ((h ^ b) * 1099511628211) & 0xFFFFFFFFFFFFFFFF
    h ^= h >> 29
    r = h % 100
    return "train" if r < 90 else "val" if r < 95 else "test"
want, names = sys.argv[1], sys.argv[2:]
print("\n".join(sorted(n for n in names if split(n) == want)))
PY
}

t_begin tsv_hashed_split_and_column
if [ -z "$py" ]; then t_skip "needs python3"
elif need_data encoders/mobilenet_v1_0.25_128_quant.tflite; then
  if [ ! -x "$MK" ]; then t_skip "needs $MK (make tests)"
  elif ! "$MK" --make-model "$T/tiny.safetensors" >/dev/null 2>&1; then t_fail "cannot make the tiny model"
  else
    mkdir -p "$T/set/images" "$T/elsewhere"
    names=$(for i in $(seq 1 160); do echo "p$i.jpg"; done)
    for n in $names; do ln -s "$S/dog.jpg" "$T/set/images/$n"; ln -s "$S/kite.jpg" "$T/elsewhere/$n"; done
    for n in $names; do printf '%s\ta photo called %s\n' "$n" "$n"; done >"$T/set/caps.tsv"
    want=$(py_split test $names)
    "$A" eval --model "$T/tiny.safetensors" --data "$T/set/caps.tsv" --split test --beam 1 --no-meteor --quiet \
      --results-out "$T/gen.json" >/dev/null 2>"$T/err"; rc=$?
    got=$("$py" -c 'import json,sys; print("\n".join(sorted(r["image_id"] for r in json.load(open(sys.argv[1])))))' "$T/gen.json" 2>/dev/null)
    # a split column: the first test photo goes to train, p1.jpg (whatever its hash) to test
    first=$(head -1 <<<"$want")
    { printf 'image\tcaption\tsplit\n'
      for n in $names; do
        s=""; [ "$n" = "$first" ] && s=train; [ "$n" = p1.jpg ] && s=test
        printf '%s\tcaption of %s%s\n' "$n" "$n" "${s:+	$s}"
      done; } >"$T/set/split.tsv"
    want2=$( { grep -vx "$first" <<<"$want"; echo p1.jpg; } | sort -u)
    "$A" eval --model "$T/tiny.safetensors" --data "$T/set/split.tsv" --split test --beam 1 --no-meteor --quiet \
      --images "$T/elsewhere" --results-out "$T/gen2.json" --per-image "$T/per.json" >/dev/null 2>"$T/err2"; rc2=$?
    got2=$("$py" -c 'import json,sys; print("\n".join(sorted(r["image_id"] for r in json.load(open(sys.argv[1])))))' "$T/gen2.json" 2>/dev/null)
    n_want=$(wc -l <<<"$want")
    if [ $rc -ne 0 ]; then t_fail "eval: exit $rc: $(head -3 "$T/err")"
    elif [ "$n_want" -lt 3 ]; then t_fail "only $n_want of 160 photos hash to test"
    elif [ "$got" != "$want" ]; then t_fail "test split differs from the documented hash: got $(echo $got | head -c 200), want $(echo $want | head -c 200)"
    elif [ $rc2 -ne 0 ]; then t_fail "split column: exit $rc2: $(head -3 "$T/err2")"
    elif [ "$got2" != "$want2" ]; then t_fail "split column not obeyed: got $(echo $got2 | head -c 200)"
    else
      # --images: the photos came from elsewhere/ (kite), not images/ beside the TSV (dog): the captions differ
      c1=$("$A" caption --model "$T/tiny.safetensors" --beam 1 "$S/kite.jpg" | cut -f2)
      if ! grep -qF "\"caption\": \"$c1\"" "$T/gen2.json" && ! grep -qF "\"caption\":\"$c1\"" "$T/gen2.json"; then
        t_fail "--images not used: $(head -c 300 "$T/gen2.json")"
      else t_ok; fi
    fi
  fi
fi

t_end
