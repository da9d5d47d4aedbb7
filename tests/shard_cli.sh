#!/usr/bin/env bash
# --shard I/N: for every command that takes it (caption, features, eval --model), the union of the
# N shares equals one run over everything, each photo exactly once; the shares are the ones an
# independent Python implementation of shard.h's hash picks; features --merge gives the bytes of a
# one-process cache; eval scores several results files as one; hostile --shard values are refused
# with one line and exit 2.
. "$(dirname "$0")/lib.sh"
MK="$(dirname "$A")/tests/test_captioner"
py=$(command -v python3 || true)
ENC=""
setup() {
  need_data encoders/mobilenet_v1_0.25_128_quant.tflite || return 1
  need_data data/coco/images || return 1
  need_data data/coco/captions.json || return 1
  [ -x "$MK" ] || { t_skip "needs $MK (make tests)"; return 1; }
  ENC="$DATA/encoders/mobilenet_v1_0.25_128_quant.tflite"
  [ -f "$T/tiny.safetensors" ] || "$MK" --make-model "$T/tiny.safetensors" || { t_fail "cannot make the tiny model"; return 1; }
  M="--model $T/tiny.safetensors"
  # 12 photos, listed out of order (the shares must not depend on it)
  [ -f "$T/list" ] || ls "$DATA/data/coco/images" | grep -i '\.jpg$' | head -12 | sort -r | sed "s|^|$DATA/data/coco/images/|" >"$T/list"
}

# The share of each file name by the formula in include/attncap/shard.h, written independently.
py_shares() { # N < names
  "$py" -c '
import sys
M = (1 << 64) - 1
def h(s):
    x = 0xcbf29ce484222325
    for b in s.encode():
        x = ((x ^ b) * 0x100000001b3) & M
    x ^= x >> 30; x = (x * 0xbf58476d1ce4e5b9) & M; x ^= x >> 27
    x = (x * 0x94d049bb133111eb) & M; x ^= x >> 31
    return x
n = int(sys.argv[1])
for line in sys.stdin.read().split():
    print("%s\t%d" % (line.rsplit("/", 1)[-1], h(line.rsplit("/", 1)[-1]) % n))
' "$1"
}

t_begin caption_shares_union_is_full_run
if setup; then
  "$A" caption $M --json --quiet - <"$T/list" >"$T/full.jsonl" 2>"$T/err"; rc=$?
  : >"$T/union.jsonl"; : >"$T/got_shares"; bad=""
  for i in 0 1 2; do
    "$A" caption $M --json --quiet --shard $i/3 - <"$T/list" >"$T/c$i.jsonl" 2>>"$T/err" || bad="$bad $i"
    cat "$T/c$i.jsonl" >>"$T/union.jsonl"
    grep -o '"image":"[^"]*"' "$T/c$i.jsonl" | sed 's|.*/||; s|"$||' | sed "s|\$|	$i|" >>"$T/got_shares"
  done
  if [ $rc -ne 0 ] || [ -n "$bad" ]; then t_fail "exit $rc / shares$bad: $(head -3 "$T/err")"
  elif [ "$(wc -l <"$T/full.jsonl")" -ne 12 ]; then t_fail "full run: $(wc -l <"$T/full.jsonl") lines"
  elif ! cmp -s <(LC_ALL=C sort "$T/union.jsonl") <(LC_ALL=C sort "$T/full.jsonl"); then t_fail "union of 3 shares differs from the full run"
  elif [ -n "$py" ] && ! cmp -s <(LC_ALL=C sort "$T/got_shares") <(py_shares 3 <"$T/list" | LC_ALL=C sort); then
    t_fail "shares differ from the Python hash: $(diff <(LC_ALL=C sort "$T/got_shares") <(py_shares 3 <"$T/list" | LC_ALL=C sort) | head -4)"
  else
    # in each share, the photos keep the order of the input
    ok=1
    for i in 0 1 2; do
      want=$(grep -o '"image":"[^"]*"' "$T/full.jsonl" | grep -xF -f <(grep -o '"image":"[^"]*"' "$T/c$i.jsonl"))
      [ "$want" = "$(grep -o '"image":"[^"]*"' "$T/c$i.jsonl")" ] || ok=0
    done
    [ $ok = 1 ] && t_ok || t_fail "a share is not in input order"
  fi
fi

t_begin caption_shares_from_a_directory_and_one_share
if setup; then
  mkdir -p "$T/dir" && head -5 "$T/list" | xargs -I{} cp {} "$T/dir/"
  full=$("$A" caption $M --quiet "$T/dir")
  parts=$(for i in 0 1 2 3 4 5 6; do "$A" caption $M --quiet --shard $i/7 "$T/dir"; done)
  one=$("$A" caption $M --quiet --shard 0/1 "$T/dir")
  if [ "$(LC_ALL=C sort <<<"$parts")" != "$(LC_ALL=C sort <<<"$full")" ]; then t_fail "7 shares of a directory: $parts"
  elif [ "$one" != "$full" ]; then t_fail "--shard 0/1 is not the full run"
  else t_ok; fi
fi

# Each share into its own cache (one per task, as on a cluster), merged: the bytes of one run over the
# photos in sorted order with the same --shard-size; each share's cache loads the same rows.
t_begin features_shares_merge_to_the_one_process_cache
if setup; then
  F() { "$A" features --encoder "$ENC" --size 128 --shard-size 3 --fp16 --quiet "$@"; }
  LC_ALL=C sort "$T/list" >"$T/sorted"
  F --out "$T/fc_full" --list "$T/sorted" 2>"$T/err"; rc=$?
  bad=""
  for i in 0 1 2 3; do F --shard $i/4 --out "$T/fc_$i" --list "$T/list" 2>>"$T/err" || bad="$bad $i"; done
  # an empty share (one photo, a share it is not in) is a cache directory without shards: it adds nothing
  one=$(head -1 "$T/list"); k=0
  while [ $k -lt 5 ] && "$A" caption $M --quiet --shard $k/5 "$one" | grep -q .; do k=$((k + 1)); done
  F --shard $k/5 --out "$T/fc_empty" "$one" 2>>"$T/err" || bad="$bad empty"
  "$A" features --merge "$T/fc_merged" --shard-size 3 "$T"/fc_[0-3] "$T/fc_empty" >"$T/merge.out" 2>>"$T/err"; rc_m=$?
  n_full=$(ls "$T/fc_full" | grep -c '^shard-') n_m=$(ls "$T/fc_merged" 2>/dev/null | grep -c '^shard-')
  diffs=""
  for s in "$T"/fc_full/shard-*.safetensors; do cmp -s "$s" "$T/fc_merged/$(basename "$s")" || diffs="$diffs $(basename "$s")"; done
  # the photos each share's cache holds, by name, against the Python hash
  keys_ok=1
  if [ -n "$py" ]; then
    for i in 0 1 2 3; do
      got=$(cat "$T"/fc_$i/shard-*.safetensors 2>/dev/null | grep -ao '"images":"\[[^]]*' | grep -o '[0-9]*\.jpg' | LC_ALL=C sort)
      want=$(py_shares 4 <"$T/list" | awk -F'\t' -v i=$i '$2 == i {print $1}' | LC_ALL=C sort)
      [ "$got" = "$want" ] || keys_ok=0
    done
  fi
  if [ $rc -ne 0 ] || [ -n "$bad" ] || [ $rc_m -ne 0 ]; then t_fail "exit $rc / shares$bad / merge $rc_m: $(head -3 "$T/err")"
  elif [ "$n_full" -ne 4 ] || [ "$n_m" -ne 4 ]; then t_fail "expected 4 shard files, got $n_full and $n_m"
  elif [ -n "$diffs" ]; then t_fail "merged shards differ from the one-process cache:$diffs"
  elif [ $keys_ok = 0 ]; then t_fail "a share's cache holds other photos than the Python hash gives"
  elif ! grep -q "12 photos from 4 of 5 directories" "$T/merge.out"; then t_fail "summary: $(cat "$T/merge.out")"
  elif ls "$T" | grep -q 'fc_merged\.tmp'; then t_fail "temporary directory left"
  else t_ok; fi
fi

t_begin features_merge_refusals
if setup && [ -d "$T/fc_0" ]; then
  ok=1
  "$A" features --encoder "$ENC" --size 160 --fp16 --quiet --shard 0/4 --out "$T/fc_160" --list "$T/list" 2>/dev/null
  "$A" features --encoder "$ENC" --size 128 --quiet --shard 1/4 --out "$T/fc_f32" --list "$T/list" 2>/dev/null
  "$A" features --encoder "$ENC" --size 128 --fp16 --quiet --shard 0/3 --out "$T/fc_0of3" --list "$T/list" 2>/dev/null
  expect_error "other size" "$A" features --merge "$T/m1" "$T/fc_0" "$T/fc_160" || ok=0
  [ $ok = 1 ] && { grep -q "different encoder" "$T/err" || { t_fail "other size: $(cat "$T/err")"; ok=0; }; }
  [ $ok = 1 ] && { expect_error "F16 with F32" "$A" features --merge "$T/m2" "$T/fc_0" "$T/fc_f32" || ok=0; }
  [ $ok = 1 ] && { expect_error "overlapping shares" "$A" features --merge "$T/m3" "$T/fc_0" "$T/fc_0of3" || ok=0; }
  [ $ok = 1 ] && { grep -q "overlapping" "$T/err" || { t_fail "overlap: $(cat "$T/err")"; ok=0; }; }
  if [ $ok = 1 ] && command -v flock >/dev/null; then # a cache an extraction still writes (holds the lock of)
    flock "$T/fc_1/.lock" sleep 1.5 & lp=$!; sleep 0.3
    expect_error "input still being written" "$A" features --merge "$T/m6" "$T/fc_0" "$T/fc_1" || ok=0
    [ $ok = 1 ] && { grep -q "still writing" "$T/err" || { t_fail "lock: $(cat "$T/err")"; ok=0; }; }
    wait $lp 2>/dev/null
  fi
  [ $ok = 1 ] && { expect_error "existing output" "$A" features --merge "$T/fc_1" "$T/fc_0" || ok=0; }
  [ $ok = 1 ] && { expect_error "missing input" "$A" features --merge "$T/m4" "$T/nope" || ok=0; }
  [ $ok = 1 ] && { expect_error "--merge with --out" "$A" features --merge "$T/m5" --out "$T/x" "$T/fc_0" || ok=0; }
  if [ $ok = 1 ]; then
    left=$(ls -d "$T"/m[1-6]* 2>/dev/null)
    [ -z "$left" ] && t_ok || t_fail "refused merges left output: $left"
  fi
fi

# eval --model --shard: the shares' --results-out together hold the unsharded run's results; scored
# together (several --results files) they score as the unsharded file; caption --shard --json lines,
# concatenated, score the same. (The tiny random model gives some empty captions, which eval --model
# scores but a results file may not hold: they are left out of the rescoring on both sides.)
t_begin eval_shares_union_is_full_run
if setup; then
  if [ -z "$py" ]; then t_skip "needs python3 to compare JSON"
  else
  E() { "$A" eval $M --data "$DATA/data/coco/captions.json" --split all --limit 10 --beam 1 --no-meteor --quiet "$@"; }
  E --results-out "$T/e_full.json" >/dev/null 2>"$T/err"; rc=$?
  bad=""
  for i in 0 1 2; do E --shard $i/3 --results-out "$T/e_$i.json" >/dev/null 2>>"$T/err" || bad="$bad $i"; done
  # non-empty results only, and the photos' paths
  msg=$("$py" - "$T" "$DATA/data/coco" <<'PY'
import json, sys
t, coco = sys.argv[1], sys.argv[2]
full = json.load(open(t + "/e_full.json"))
parts = [json.load(open("%s/e_%d.json" % (t, i))) for i in range(3)]
union = sorted((r["image_id"], r["caption"]) for p in parts for r in p)
assert len(full) == 10, len(full)
assert union == sorted((r["image_id"], r["caption"]) for r in full), "union differs from the full run"
keep = lambda rs: [r for r in rs if r["caption"].strip()]
json.dump(keep(full), open(t + "/f_full.json", "w"))
for i, p in enumerate(parts): json.dump(keep(p), open("%s/f_%d.json" % (t, i), "w"))
names = {im["id"]: im["file_name"] for im in json.load(open(coco + "/captions.json"))["images"]}
open(t + "/e_list", "w").write("".join("%s/images/%s\n" % (coco, names[r["image_id"]]) for r in full))
print("ok")
PY
)
  "$A" eval --refs "$DATA/data/coco/captions.json" --results "$T/f_full.json" --no-meteor --json >"$T/e_full.out" 2>>"$T/err"
  "$A" eval --refs "$DATA/data/coco/captions.json" --results "$T"/f_[0-2].json --no-meteor --json >"$T/e_merged.out" 2>>"$T/err"; rc_m=$?
  for i in 0 1; do "$A" caption $M --beam 1 --json --quiet --shard $i/2 - <"$T/e_list"; done | grep -v '"caption":""' >"$T/e_cap.jsonl"
  "$A" eval --refs "$DATA/data/coco/captions.json" --results "$T/e_cap.jsonl" --no-meteor --json >"$T/e_cap.out" 2>>"$T/err"; rc_c=$?
  if [ $rc -ne 0 ] || [ -n "$bad" ]; then t_fail "exit $rc / shares$bad: $(head -3 "$T/err")"
  elif [ "$msg" != ok ]; then t_fail "$msg"
  elif [ $rc_m -ne 0 ] || [ $rc_c -ne 0 ]; then t_fail "scoring: $rc_m $rc_c: $(head -3 "$T/err")"
  elif ! grep -q '"images":' "$T/e_full.out" || ! cmp -s "$T/e_full.out" "$T/e_merged.out"; then
    t_fail "scores of the shares differ: $(diff "$T/e_full.out" "$T/e_merged.out" | head -4)"
  elif ! cmp -s "$T/e_full.out" "$T/e_cap.out"; then t_fail "caption --json lines score differently: $(diff "$T/e_full.out" "$T/e_cap.out" | head -4)"
  elif ! E --limit 1 --shard 0/2 --results-out "$T/x0.json" >/dev/null 2>"$T/x.err" ||
       ! E --limit 1 --shard 1/2 --results-out "$T/x1.json" >/dev/null 2>>"$T/x.err"; then t_fail "a one-photo split in 2 shares: $(cat "$T/x.err")"
  elif [ "$(cat "$T/x0.json" "$T/x1.json" | grep -c '"image_id"')" -ne 1 ] || ! grep -q "is empty" "$T/x.err"; then
    t_fail "an empty share: $(cat "$T/x0.json" "$T/x1.json" "$T/x.err")"
  elif ! expect_error "a share twice" "$A" eval --refs "$DATA/data/coco/captions.json" --results "$T/f_0.json" "$T/f_0.json" --no-meteor; then :
  elif ! grep -q "also in" "$T/err"; then t_fail "duplicate message: $(cat "$T/err")"
  else t_ok; fi
  fi
fi

t_begin hostile_shard_values
ok=1
for v in 0/0 3/2 abc -1/2 1/ /2 5 1/2/3 "" 99999999999/3 slurm; do
  for cmd in "caption x.jpg" "features --out $T/hx x.jpg" "eval --data x --shard"; do
    set -- $cmd
    c=$1; shift
    if [ "$c" = eval ]; then args=(--data "$T/none.json" --shard "$v"); else args=(--shard "$v" "$@"); fi
    env -u SLURM_ARRAY_TASK_ID "$A" "$c" "${args[@]}" >"$T/out" 2>"$T/err"; rc=$?
    if [ $rc -ne 2 ] || [ "$(wc -l <"$T/err")" -ne 1 ] || ! grep -q -- "--shard" "$T/err"; then
      t_fail "$c --shard '$v': exit $rc, stderr: $(head -2 "$T/err")"; ok=0; break 2
    fi
  done
done
[ -e "$T/hx" ] && { t_fail "a refused features run created its --out"; ok=0; }
[ $ok = 1 ] && t_ok

t_end
