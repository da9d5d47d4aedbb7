#!/usr/bin/env bash
# A full filesystem (issue #16 item 2): on a small tmpfs (mounted in a private mount namespace by
# `unshare -rm`, gone when the test ends), `caption --overlays` and `features` fail the photos that do
# not fit with one line each, leave no "*.tmp.*" behind and no half-written photo folder, and keep
# what was complete. Skipped where user namespaces (or root) are not available.
. "$(dirname "$0")/lib.sh"
MK="$(dirname "$A")/tests/test_captioner"
S=${ATTNCAP_ROOT:-$(cd "$(dirname "$0")/.." && pwd)}/samples

setup() {
  need_data encoders/mobilenet_v1_0.25_128_quant.tflite || return 1
  [ -x "$MK" ] || { t_skip "needs $MK (make tests)"; return 1; }
  [ -f "$T/tiny.safetensors" ] || "$MK" --make-model "$T/tiny.safetensors" || { t_fail "cannot make the tiny model"; return 1; }
  mkdir -p "$T/mnt"
  if ! unshare -rm sh -c "mount -t tmpfs -o size=64k tmpfs '$T/mnt'" 2>/dev/null; then
    t_skip "cannot mount a tmpfs in a private mount namespace (unshare -rm)"; return 1
  fi
  if [ ! -d "$T/many" ]; then
    mkdir -p "$T/many"
    for k in 1 2 3; do for f in dog eagle giraffe horses kite person; do cp "$S/$f.jpg" "$T/many/$k$f.jpg"; done; done
  fi
}

# on_small_fs KB CMD...: runs CMD with a KB-kilobyte tmpfs mounted on $T/mnt (private to CMD); a
# listing of what is left on it goes to $T/left.
on_small_fs() {
  local kb=$1; shift
  unshare -rm bash -c 'mount -t tmpfs -o size=$1k tmpfs "$2" || exit 99; shift 2; "$@"; rc=$?
    (cd "$T/mnt" && find . -mindepth 1 | sort) >"$T/left"; exit $rc' _ "$kb" "$T/mnt" "$@"
}

t_begin caption_overlays_full_disk
if setup; then
  export T
  on_small_fs 600 "$A" caption --model "$T/tiny.safetensors" --json --threads 1 --size 400 --overlays "$T/mnt/ov" "$T/many" \
    >"$T/out" 2>"$T/err"; rc=$?
  n_err=$(grep -ci 'no space left on device' "$T/err")
  tmps=$(grep '\.tmp\.' "$T/left")
  dirs=$(grep -cE '^\./ov/[^/]+$' "$T/left")
  sheets=$(grep -cE '^\./ov/[^/]+/sheet\.png$' "$T/left")
  if [ $rc -ge 99 ]; then t_fail "exit $rc: $(head -3 "$T/err")"
  elif [ $rc -ne 1 ] || [ "$n_err" -lt 1 ]; then t_fail "exit $rc with $n_err 'No space' errors (is 600k too big?): $(head -3 "$T/err")"
  elif [ -n "$tmps" ]; then t_fail "left behind: $(echo $tmps | head -c 300)"
  elif [ "$dirs" -ne "$sheets" ]; then t_fail "$dirs folders but $sheets sheets: a folder is half-written"
  elif [ "$(grep -vc 'captioned, ' "$T/err")" -ne "$n_err" ]; then t_fail "other errors: $(grep -vi 'no space' "$T/err" | head -3)"
  # issue #32, 3: a photo whose files failed is failed: its JSON line says what in "error" (a line
  # without one has its folder, sheet and caption.json), and the summary counts them apart
  elif ! msg=$(python3 - "$T/out" "$T/left" "$n_err" <<'PY'
import json, sys
out, left, n_err = sys.argv[1], open(sys.argv[2]).read().split(), int(sys.argv[3])
rows = [json.loads(l) for l in open(out)]
bad = [r for r in rows if 'error' in r]
assert len(rows) == 18, len(rows)
assert len(bad) == n_err, (len(bad), n_err)
assert all(r['error'].startswith(('overlays: ', 'caption.json: ')) and 'no space' in r['error'].lower() for r in bad), bad[0]['error']
for r in rows:
    if 'error' in r: continue
    stem = r['overlays'][-1].split('/')[-2]
    assert './ov/%s/caption.json' % stem in left and './ov/%s/sheet.png' % stem in left, stem
print('ok')
PY
); then t_fail "JSON lines: $msg"
  elif ! grep -qE "^attncap caption: [0-9]+ captioned, $n_err failed \($n_err writing overlays\), " "$T/err"; then
    t_fail "summary: $(grep 'captioned, ' "$T/err")"
  else t_ok; fi
fi

t_begin features_full_disk
if setup; then
  export T
  on_small_fs 48 "$A" features --encoder "$DATA/encoders/mobilenet_v1_0.25_128_quant.tflite" --size 128 --shard-size 4 \
    --threads 1 --quiet --out "$T/mnt/feat" "$T/many"/*.jpg >"$T/out" 2>"$T/err"; rc=$?
  tmps=$(grep '\.tmp\.' "$T/left")
  if [ $rc -ge 99 ]; then t_fail "exit $rc: $(head -3 "$T/err")"
  elif [ $rc -eq 0 ]; then t_fail "48k held all the features: make the test's disk smaller"
  elif ! grep -qi 'no space left on device' "$T/err" || [ "$(wc -l <"$T/err")" -ne 1 ]; then t_fail "exit $rc: $(cat "$T/err")"
  elif [ -n "$tmps" ]; then t_fail "left behind: $tmps"
  else t_ok; fi
fi

t_end
