#!/usr/bin/env bash
# What a user sees at a terminal (issue #16 item 1): the commands run on a pseudo-terminal
# (tests/pty_screen.py renders what the terminal shows: '\r', ESC[K, overwriting), where the progress bar
# is drawn. No line may hold both the bar and other output, no bar is left behind at the end, and a
# batch ends with one summary line on stderr (none with --quiet).
. "$(dirname "$0")/lib.sh"
MK="$(dirname "$A")/tests/test_captioner"
ROOT=${ATTNCAP_ROOT:-$(cd "$(dirname "$0")/.." && pwd)}
S=$ROOT/samples
TTY="$ROOT/tests/pty_screen.py"
py=$( [ -x /usr/bin/python3 ] && echo /usr/bin/python3 || command -v python3 || true)

setup() {
  [ -n "$py" ] || { t_skip "needs python3 for the pseudo-terminal"; return 1; }
  need_data encoders/mobilenet_v1_0.25_128_quant.tflite || return 1
  [ -x "$MK" ] || { t_skip "needs $MK (make tests)"; return 1; }
  [ -f "$T/tiny.safetensors" ] || "$MK" --make-model "$T/tiny.safetensors" || { t_fail "cannot make the tiny model"; return 1; }
  M="--model $T/tiny.safetensors"
}

# bar_mixed SCREEN: prints the first rendered line where the bar shares the line with other text.
bar_mixed() { grep -nE '\] [0-9]+/[0-9]+ [0-9.]+/s' "$1" | grep -vE '^[0-9]+:[a-z0-9/ ]+ \[[# ]{30}\] [0-9]+/[0-9]+ [0-9.]+/s( ETA [0-9]+:[0-9]{2}:[0-9]{2})?(  .*)?$' | head -1; }
# bar_left SCREEN: a bar still on the screen at the end.
bar_left() { grep -E '\[[# ]{30}\] [0-9]+/[0-9]+' "$1" | head -1; }

t_begin caption_bar_never_shares_a_line
if setup; then
  # 12 photos, one of them unreadable: results on stdout and an error on stderr, all on the terminal
  mkdir -p "$T/in"
  for k in 1 2; do for f in dog eagle giraffe horses kite; do cp "$S/$f.jpg" "$T/in/$k$f.jpg"; done; done
  echo "not a jpeg" >"$T/in/3broken.jpg"
  "$py" "$TTY" "$T/screen" -- "$A" caption $M --threads 1 "$T/in"; rc=$?
  mixed=$(bar_mixed "$T/screen"); left=$(bar_left "$T/screen")
  n_res=$(grep -cP "^$T/in/[0-9][a-z]+\.jpg\t" "$T/screen")
  if ! grep -q $'\r' "$T/screen.raw"; then t_fail "no progress bar was drawn on the terminal"
  elif [ -n "$mixed" ]; then t_fail "the bar shares a line: $mixed"
  elif [ -n "$left" ]; then t_fail "a bar is left on the screen: $left"
  elif [ "$n_res" != 10 ]; then t_fail "expected 10 result lines, got $n_res: $(head -3 "$T/screen")"
  elif [ $rc -ne 1 ]; then t_fail "exit $rc with one unreadable photo"
  elif [ "$(tail -1 "$T/screen" | sed -E 's/[0-9.]+ s$/S s/')" != "attncap caption: 10 captioned, 1 failed, S s" ]; then
    t_fail "last line is not the summary: $(tail -1 "$T/screen")"
  else t_ok; fi
fi

t_begin caption_quiet_no_bar_no_summary
if setup; then
  "$py" "$TTY" "$T/screen" -- "$A" caption $M --quiet "$S/dog.jpg" "$S/eagle.jpg"; rc=$?
  if [ $rc -ne 0 ]; then t_fail "exit $rc"
  elif grep -q $'\r' "$T/screen.raw"; then t_fail "--quiet drew a bar"
  elif grep -q 'captioned' "$T/screen"; then t_fail "--quiet printed the summary"
  elif [ "$(wc -l <"$T/screen")" -ne 2 ]; then t_fail "expected just the 2 captions: $(cat "$T/screen")"
  else t_ok; fi
fi

t_begin summary_on_stderr_not_stdout
if setup; then
  "$A" caption $M "$S/dog.jpg" "$S/eagle.jpg" >"$T/out" 2>"$T/err"; rc=$?
  "$A" caption $M "$S/dog.jpg" >"$T/out1" 2>"$T/err1"
  if [ $rc -ne 0 ]; then t_fail "exit $rc"
  elif [ "$(wc -l <"$T/out")" -ne 2 ]; then t_fail "stdout: $(cat "$T/out")"
  elif ! grep -qE '^attncap caption: 2 captioned, 0 failed, [0-9.]+ s$' "$T/err"; then t_fail "stderr: $(cat "$T/err")"
  elif [ -s "$T/err1" ]; then t_fail "one photo is not a batch, yet: $(cat "$T/err1")"
  else t_ok; fi
fi

t_begin features_error_not_glued_to_bar
if setup; then
  rm -rf "$T/feat"
  "$py" "$TTY" "$T/screen" -- "$A" features --encoder "$DATA/encoders/mobilenet_v1_0.25_128_quant.tflite" --size 64 \
    --threads 1 --out "$T/feat" "$T/in/1dog.jpg" "$T/in/1eagle.jpg" "$T/in/3broken.jpg" "$T/in/1kite.jpg"
  mixed=$(bar_mixed "$T/screen"); left=$(bar_left "$T/screen")
  if [ -n "$mixed" ]; then t_fail "the bar shares a line: $mixed"
  elif [ -n "$left" ]; then t_fail "a bar is left on the screen: $left"
  elif ! grep -q '^attncap features: .*3broken.jpg' "$T/screen"; then t_fail "no error line of its own: $(cat "$T/screen")"
  else t_ok; fi
fi

t_begin train_epoch_lines_own_their_line
FX="$ROOT/tests/fixtures/train"
if [ -z "$py" ]; then t_skip "needs python3 for the pseudo-terminal"
else
  "$py" "$TTY" "$T/screen" -- "$A" train --data "$FX/captions.json" --features "$FX/features" --out "$T/m.safetensors" \
    --embed 32 --hidden 32 --att 16 --min-count 1 --batch 5 --lr 0.01 --dropout 0 --lambda 0.1 --checkpoint-every 0 \
    --epochs 6 --patience 100; rc=$?
  mixed=$(bar_mixed "$T/screen"); left=$(bar_left "$T/screen")
  n_epoch=$(grep -cE '^epoch [0-9.]+ step [0-9]+: train loss' "$T/screen")
  if [ $rc -ne 0 ]; then t_fail "exit $rc: $(tail -3 "$T/screen")"
  elif ! grep -q $'\r' "$T/screen.raw"; then t_fail "no progress bar was drawn on the terminal"
  elif [ -n "$mixed" ]; then t_fail "the bar shares a line: $mixed"
  elif [ -n "$left" ]; then t_fail "a bar is left on the screen: $left"
  elif [ "$n_epoch" -ne 6 ]; then t_fail "$n_epoch epoch lines of their own: $(grep epoch "$T/screen" | head -3)"
  else t_ok; fi
fi

t_end
