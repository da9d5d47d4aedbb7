#!/usr/bin/env bash
# attncap features: a run killed with SIGKILL mid-way, then resumed, leaves exactly the shards of an
# uninterrupted run (byte for byte: same keys per shard, same features); no partial shard is ever
# visible. Plus the CLI's error contract (bad encoder, bad image among good ones, other encoder).
. "$(dirname "$0")/lib.sh"
ENC=""
setup() {
  need_data encoders/mobilenet_v1_0.25_128_quant.tflite || return 1
  need_data data/coco/images || return 1
  ENC="$DATA/encoders/mobilenet_v1_0.25_128_quant.tflite"
  [ -f "$T/list.txt" ] || ls "$DATA/data/coco/images" | grep -i '\.jpg$' | head -40 | sed "s|^|$DATA/data/coco/images/|" >"$T/list.txt"
  [ "$(wc -l <"$T/list.txt")" -ge 20 ] || { t_skip "needs 20 photos in ../shared/data/coco/images"; return 1; }
}
F() { nice "$A" features --encoder "$ENC" --size 128 --shard-size 2 --quiet "$@"; }

t_begin kill_and_resume_is_byte_identical
if setup; then
  F --out "$T/full" --list "$T/list.txt" >/dev/null 2>"$T/err.full"; rc_full=$?
  killed=0
  for attempt in 1 2 3; do
    rm -rf "$T/resumed"
    # Not through F: $! must be attncap itself (nice execs it), not a subshell around it.
    nice "$A" features --encoder "$ENC" --size 128 --shard-size 2 --quiet --out "$T/resumed" --list "$T/list.txt" >/dev/null 2>&1 &
    pid=$!
    # Kill as soon as a few shards are out, while the run is still going.
    for _ in $(seq 1 400); do
      [ -e "$T/resumed/shard-00002.safetensors" ] && break
      sleep 0.01
    done
    kill -9 "$pid" 2>/dev/null
    wait "$pid" 2>/dev/null
    [ $? -eq 137 ] && killed=1 # really died of SIGKILL (128 + 9), not finished
    n_mid=$(ls "$T/resumed" 2>/dev/null | grep -c '^shard-[0-9]*\.safetensors$')
    [ $killed -eq 1 ] && [ "$n_mid" -lt 20 ] && break
    killed=0
  done
  if [ $rc_full -ne 0 ]; then t_fail "uninterrupted run failed: $(head -3 "$T/err.full")"
  elif [ $killed -eq 0 ]; then t_skip "the run finished before it could be killed (machine too fast)"
  else
    # Every visible shard of the killed run is complete and loadable (nothing half-written).
    bad=""
    for s in "$T"/resumed/shard-*.safetensors; do
      [ -e "$s" ] || continue
      cmp -s "$s" "$T/full/$(basename "$s")" || bad="$bad $(basename "$s")"
    done
    F --out "$T/resumed" --list "$T/list.txt" >/dev/null 2>"$T/err.res"; rc=$?
    n_full=$(ls "$T/full" | grep -c '^shard-') n_res=$(ls "$T/resumed" | grep -c '^shard-')
    tmp_left=$(ls "$T/resumed" | grep -c '\.tmp\.')
    diffs=""
    for s in "$T"/full/shard-*.safetensors; do cmp -s "$s" "$T/resumed/$(basename "$s")" || diffs="$diffs $(basename "$s")"; done
    if [ -n "$bad" ]; then t_fail "killed run left shards that differ from the full run:$bad"
    elif [ $rc -ne 0 ]; then t_fail "resume failed: $(head -3 "$T/err.res")"
    elif [ "$n_full" -ne 20 ] || [ "$n_res" -ne 20 ]; then t_fail "expected 20 shards, got $n_full and $n_res"
    elif [ -n "$diffs" ]; then t_fail "resumed shards differ:$diffs"
    elif [ "$tmp_left" -ne 0 ]; then t_fail "temp files of the killed run left behind"
    else echo "# killed after $n_mid of 20 shards; resumed to byte-identical shards"; t_ok; fi
  fi
fi

t_begin bad_image_among_good_ones
if setup; then
  printf 'garbage' >"$T/broken.jpg"
  F --out "$T/mixed" "$(sed -n 1p "$T/list.txt")" "$T/broken.jpg" "$(sed -n 2p "$T/list.txt")" >/dev/null 2>"$T/err"; rc=$?
  n=$(ls "$T/mixed" | grep -c '^shard-')
  if [ $rc -ne 1 ]; then t_fail "exit $rc, expected 1"
  elif [ "$(wc -l <"$T/err")" -ne 1 ] || ! grep -q "broken.jpg" "$T/err"; then t_fail "stderr: $(cat "$T/err")"
  elif [ "$n" -ne 1 ]; then t_fail "expected the 2 good photos in 1 shard, got $n shards"
  else t_ok; fi
fi

t_begin other_encoder_refused
if setup; then
  [ -d "$T/full" ] || F --out "$T/full" --list "$T/list.txt" >/dev/null 2>&1
  if expect_error "other size" F --out "$T/full" --size 160 --list "$T/list.txt"; then
    grep -q "different encoder" "$T/err" && t_ok || t_fail "message: $(cat "$T/err")"
  fi
fi

t_begin cli_errors
if setup; then
  ok=1
  expect_error "missing encoder" "$A" features --encoder "$T/none.tflite" --out "$T/x" "$ENC" || ok=0
  echo "not a model" >"$T/bad.tflite"
  [ $ok = 1 ] && { expect_error "corrupt encoder" "$A" features --encoder "$T/bad.tflite" --out "$T/x" "$ENC" || ok=0; }
  [ $ok = 1 ] && { expect_error "no --out" "$A" features --encoder "$ENC" "$ENC" || ok=0; }
  [ $ok = 1 ] && { expect_error "missing list" "$A" features --encoder "$ENC" --out "$T/x" --list "$T/nolist.txt" || ok=0; }
  [ $ok = 1 ] && { expect_error "bad layer" "$A" features --encoder "$ENC" --layer nope --out "$T/x" "$ENC" || ok=0; }
  [ $ok = 1 ] && { expect_error "unwritable out" "$A" features --encoder "$ENC" --size 128 --out /proc/nope/x "$(sed -n 1p "$T/list.txt")" || ok=0; }
  if [ $ok = 1 ] && ATTNCAP_PRECISION=half expect_error "unknown ATTNCAP_PRECISION" "$A" features --encoder "$ENC" \
       --out "$T/p" "$(sed -n 1p "$T/list.txt")"; then
    grep -q "ATTNCAP_PRECISION: unknown precision 'half'" "$T/err" && [ ! -e "$T/p" ] ||
      { t_fail "the variable not named, or a cache begun: $(cat "$T/err")"; ok=0; }
  else ok=0; fi
  [ $ok = 1 ] && t_ok
fi
t_end
