#!/usr/bin/env bash
# Interrupts (issue #16 item 2): SIGINT/SIGTERM during `caption --overlays`, `features` and
# `eval --report` leave no "*.tmp.PID" behind (the handler removes this process's temporaries, files
# and folders, and dies of the signal: exit 128+N); a photo's overlay folder is there whole or not at
# all; `caption --skip-existing` resumes the batch. The handler is checked deterministically too: the
# test plants "x.tmp.PID" entries of the running process (and one of another PID, to be kept).
. "$(dirname "$0")/lib.sh"
set -m # job control: background commands get SIGINT (without it bash makes them ignore it); env
       # --default-signal=INT below: also when this suite itself was started with SIGINT ignored (a
       # background job, nohup), which bash cannot undo
MK="$(dirname "$A")/tests/test_captioner"
S=${ATTNCAP_ROOT:-$(cd "$(dirname "$0")/.." && pwd)}/samples
ENC="${DATA:-}/encoders/mobilenet_v2_1.0_224_quant.tflite" # features at 448: ~50 ms a photo

setup() {
  need_data encoders/mobilenet_v1_0.25_128_quant.tflite || return 1
  [ -x "$MK" ] || { t_skip "needs $MK (make tests)"; return 1; }
  [ -f "$T/tiny.safetensors" ] || "$MK" --make-model "$T/tiny.safetensors" || { t_fail "cannot make the tiny model"; return 1; }
  M="--model $T/tiny.safetensors"
  if [ ! -d "$T/many" ]; then
    mkdir -p "$T/many"
    for k in $(seq -w 1 8); do for f in dog eagle giraffe horses kite person; do cp "$S/$f.jpg" "$T/many/$k$f.jpg"; done; done
  fi
}

# wait_for CMD...: polls CMD every 0.05 s for up to 30 s.
wait_for() { for _ in $(seq 600); do "$@" && return 0; sleep 0.05; done; return 1; }
lines_at_least() { [ "$(wc -l <"$1")" -ge "$2" ]; }
has_entry() { ls "$1" | grep -v '\.tmp\.' | grep -q "$2"; }
# plant DIR PID: temporaries of PID (a file and a folder with a file) and one of another process.
plant() {
  : >"$1/planted.tmp.$2"; mkdir -p "$1/folder.tmp.$2" && : >"$1/folder.tmp.$2/01_a.png"; : >"$1/other.tmp.999999"
}
# leftovers DIR PID: this process's temporaries still there (and the other's missing).
leftovers() {
  find "$1" -name "*.tmp.$2*"
  [ -e "$1/other.tmp.999999" ] || echo "other.tmp.999999 was removed"
}

t_begin caption_overlays_sigint_then_resume
if setup; then
  rm -rf "$T/ov"; mkdir -p "$T/ov"
  env --default-signal=INT "$A" caption $M --quiet --threads 1 --size 700 --overlays "$T/ov" "$T/many" >"$T/out" 2>"$T/err" &
  pid=$!
  plant "$T/ov" $pid
  wait_for lines_at_least "$T/out" 3
  kill -INT $pid; wait $pid; rc=$?
  left=$(leftovers "$T/ov" $pid)
  done1=$(find "$T/ov" -mindepth 1 -maxdepth 1 -type d | wc -l)
  partial=$(for d in "$T/ov"/*/; do [ -f "$d/sheet.png" ] || echo "$d"; done)
  if [ $rc -eq 0 ]; then t_skip "finished before the signal"
  elif [ $rc -ne 130 ]; then t_fail "exit $rc, expected 130 (SIGINT): $(head -3 "$T/err")"
  elif ! grep -q -- "interrupted: the same command with --skip-existing goes on where it stopped" "$T/err"; then
    t_fail "no hint after the interrupt: $(cat "$T/err")"
  elif [ -n "$left" ]; then t_fail "left behind: $left"
  elif [ -n "$partial" ]; then t_fail "folders without their sheet: $partial"
  elif [ "$done1" -ge 48 ]; then t_skip "all 48 done before the signal"
  else
    rm -f "$T/ov/other.tmp.999999"
    "$A" caption $M --threads 1 --size 700 --skip-existing --overlays "$T/ov" "$T/many" >"$T/out2" 2>"$T/err2"; rc=$?
    all=$(find "$T/ov" -mindepth 1 -maxdepth 1 -type d | wc -l)
    sheets=$(ls "$T/ov"/*/sheet.png | wc -l)
    if [ $rc -ne 0 ]; then t_fail "resume: exit $rc: $(head -3 "$T/err2")"
    elif [ "$(wc -l <"$T/out2")" -ne 48 ]; then t_fail "resume printed $(wc -l <"$T/out2") lines, expected 48 (the skipped again)"
    elif [ "$all" -ne 48 ] || [ "$sheets" -ne 48 ]; then t_fail "after resuming: $all folders, $sheets sheets"
    elif ! grep -qE "^attncap caption: $((48 - done1)) captioned, 0 failed, $done1 skipped \(done before\), [0-9.]+ s$" "$T/err2"; then
      t_fail "summary: $(cat "$T/err2")"
    elif ! "$A" caption $M --skip-existing --overlays "$T/ov" "$T/many" >"$T/out3" 2>"$T/err3" || ! cmp -s "$T/out2" "$T/out3"; then
      t_fail "a finished batch: $(cat "$T/err3")"
    else t_ok; fi
  fi
fi

t_begin overlay_folder_written_whole
if setup; then
  # every folder that exists after a SIGTERM at any moment holds its sheet, all its words and its
  # caption.json (a folder whose caption.json was being written goes whole: a rerun redoes it)
  bad=""
  for delay in 0.2 0.35 0.5 0.65; do
    rm -rf "$T/ov2"
    "$A" caption $M --quiet --threads 1 --size 700 --json --overlays "$T/ov2" "$T/many" >"$T/out" 2>"$T/err" &
    pid=$!; sleep $delay; kill -TERM $pid; wait $pid; rc=$?
    [ $rc -eq 0 ] || [ $rc -eq 143 ] || bad="$bad exit $rc;"
    bad="$bad$(find "$T/ov2" -name '*.tmp.*')"
    for d in "$T/ov2"/*/; do
      [ -d "$d" ] || continue
      n=$(ls "$d" | grep -c '^[0-9][0-9]_.*\.png$')
      [ -f "$d/sheet.png" ] && [ "$n" -ge 1 ] && [ -f "$d/caption.json" ] || bad="$bad $d incomplete;"
    done
  done
  if [ -n "$bad" ]; then t_fail "$bad"; else t_ok; fi
fi

t_begin features_sigterm
if setup && need_data encoders/mobilenet_v2_1.0_224_quant.tflite; then
  rm -rf "$T/feat"; mkdir -p "$T/feat"
  "$A" features --encoder "$ENC" --size 448 --shard-size 2 --threads 1 --quiet --out "$T/feat" "$T/many"/*.jpg >"$T/out" 2>"$T/err" &
  pid=$!
  plant "$T/feat" $pid
  wait_for has_entry "$T/feat" '^shard-'
  kill -TERM $pid; wait $pid; rc=$?
  left=$(leftovers "$T/feat" $pid)
  if [ $rc -eq 0 ]; then t_skip "finished before the signal"
  elif [ $rc -ne 143 ]; then t_fail "exit $rc, expected 143 (SIGTERM): $(head -3 "$T/err")"
  elif [ -n "$left" ]; then t_fail "left behind: $left"
  elif ! "$A" features --encoder "$ENC" --size 448 --shard-size 2 --threads 1 --quiet --out "$T/feat" "$T/many"/*.jpg 2>"$T/err"; then
    t_fail "resume: $(cat "$T/err")"
  else t_ok; fi
fi

t_begin eval_report_sigint
if setup && need_data data/coco/captions.json; then
  rm -rf "$T/rep"; mkdir -p "$T/rep/thumbs" "$T/rep/sheets"
  env --default-signal=INT "$A" eval --model "$T/tiny.safetensors" --data "$DATA/data/coco/captions.json" --split all --limit 200 --beam 1 \
    --no-meteor --quiet --report "$T/rep" --results-out "$T/rep/gen.json" >"$T/out" 2>"$T/err" &
  pid=$!
  plant "$T/rep" $pid; plant "$T/rep/thumbs" $pid; plant "$T/rep/sheets" $pid
  wait_for has_entry "$T/rep/thumbs" png
  kill -INT $pid; wait $pid; rc=$?
  left=$(leftovers "$T/rep" $pid)
  if [ $rc -eq 0 ]; then t_skip "finished before the signal"
  elif [ $rc -ne 130 ]; then t_fail "exit $rc, expected 130: $(head -3 "$T/err")"
  elif [ -n "$left" ]; then t_fail "left behind: $left"
  else t_ok; fi
fi

t_end
