#!/usr/bin/env bash
# Directory walks and path lists (issue #16 item 3): each directory is walked once (a symlink loop
# does not multiply the photos), FIFOs and devices are skipped in walks and refused with a message
# on the command line (never opened and waited on), an empty directory is warned about, and a list on
# stdin is trimmed with blank and # lines skipped. Every command runs under `timeout`: a hang fails.
. "$(dirname "$0")/lib.sh"
MK="$(dirname "$A")/tests/test_captioner"
S=${ATTNCAP_ROOT:-$(cd "$(dirname "$0")/.." && pwd)}/samples

setup() {
  need_data encoders/mobilenet_v1_0.25_128_quant.tflite || return 1
  [ -x "$MK" ] || { t_skip "needs $MK (make tests)"; return 1; }
  [ -f "$T/tiny.safetensors" ] || "$MK" --make-model "$T/tiny.safetensors" || { t_fail "cannot make the tiny model"; return 1; }
  M="--model $T/tiny.safetensors"
}

t_begin symlink_loop_walked_once
if setup; then
  # one photo; two links back to the top and one to the directory itself
  mkdir -p "$T/loop/sub" && cp "$S/dog.jpg" "$T/loop/a.jpg" && cp "$S/kite.jpg" "$T/loop/sub/b.jpg"
  ln -s .. "$T/loop/sub/up1" && ln -s .. "$T/loop/sub/up2" && ln -s . "$T/loop/sub/self"
  timeout 60 "$A" caption $M --quiet "$T/loop" >"$T/out" 2>"$T/err"; rc=$?
  if [ $rc -ge 124 ]; then t_fail "exit $rc (killed: the walk did not end)"
  elif [ $rc -ne 0 ]; then t_fail "exit $rc: $(head -3 "$T/err")"
  elif [ "$(cut -f1 "$T/out" | tr '\n' ' ')" != "$T/loop/a.jpg $T/loop/sub/b.jpg " ]; then
    t_fail "$(wc -l <"$T/out") captions: $(cut -f1 "$T/out" | head -4 | tr '\n' ' ')"
  else t_ok; fi
fi

t_begin fifo_and_device_refused
if setup; then
  mkdir -p "$T/f" && cp "$S/dog.jpg" "$T/f/a.jpg" && mkfifo "$T/f/x.jpg"
  # in a walk: skipped
  timeout 30 "$A" caption $M --quiet "$T/f" >"$T/out" 2>"$T/err"; rc=$?
  # on the command line: one line naming it, the others still captioned
  timeout 30 "$A" caption $M --quiet "$T/f/x.jpg" /dev/null "$T/f/a.jpg" >"$T/out2" 2>"$T/err2"; rc2=$?
  if [ $rc -ge 124 ] || [ $rc2 -ge 124 ]; then t_fail "hung on the FIFO (exit $rc, $rc2)"
  elif [ $rc -ne 0 ] || [ "$(cut -f1 "$T/out")" != "$T/f/a.jpg" ] || [ -s "$T/err" ]; then t_fail "walk: exit $rc, $(cat "$T/out" "$T/err")"
  elif [ $rc2 -ne 1 ] || [ "$(cut -f1 "$T/out2")" != "$T/f/a.jpg" ]; then t_fail "command line: exit $rc2, $(cat "$T/out2")"
  elif [ "$(wc -l <"$T/err2")" -ne 2 ] || ! grep -q "x.jpg: is a FIFO, not a file" "$T/err2" ||
       ! grep -q "/dev/null: is a character device, not a file" "$T/err2"; then t_fail "messages: $(cat "$T/err2")"
  else t_ok; fi
fi

t_begin fifo_in_features_list
if setup; then
  printf '%s\n' "$T/f/x.jpg" "$T/f/a.jpg" >"$T/list"
  timeout 30 "$A" features --encoder "$DATA/encoders/mobilenet_v1_0.25_128_quant.tflite" --size 64 --quiet \
    --out "$T/feat" --list "$T/list" >"$T/out" 2>"$T/err"; rc=$?
  if [ $rc -ge 124 ]; then t_fail "hung on the FIFO"
  elif [ $rc -ne 1 ] || ! grep -q "x.jpg: is a FIFO" "$T/err"; then t_fail "exit $rc: $(cat "$T/err")"
  else t_ok; fi
fi

t_begin empty_directory_warned
if setup; then
  mkdir -p "$T/empty" "$T/notes" && echo hi >"$T/notes/readme.txt"
  "$A" caption $M --quiet "$T/empty" "$T/notes" >"$T/out" 2>"$T/err"; rc=$?
  "$A" caption $M --quiet "$T/empty" "$S/dog.jpg" >"$T/out2" 2>"$T/err2"; rc2=$?
  if [ $rc -ne 1 ] || [ -s "$T/out" ]; then t_fail "nothing to caption: exit $rc, $(cat "$T/out")"
  elif ! grep -q "warning: $T/empty: no photos" "$T/err" || ! grep -q "warning: $T/notes: no photos" "$T/err"; then
    t_fail "no warning: $(cat "$T/err")"
  elif [ $rc2 -ne 0 ] || [ "$(wc -l <"$T/out2")" -ne 1 ] || [ "$(cat "$T/err2")" != "attncap caption: warning: $T/empty: no photos in it (.jpg .jpeg .png .bmp .gif .webp .tif .tiff)" ]; then
    t_fail "with a photo too: exit $rc2, $(cat "$T/err2")"
  else t_ok; fi
fi

t_begin stdin_list_trimmed
if setup; then
  printf '# photos to caption\n  %s  \r\n\n   \n\t%s\t\n# %s\n' "$S/dog.jpg" "$S/kite.jpg" "$S/eagle.jpg" |
    "$A" caption $M --quiet - >"$T/out" 2>"$T/err"; rc=$?
  if [ $rc -ne 0 ]; then t_fail "exit $rc: $(cat "$T/err")"
  elif [ "$(cut -f1 "$T/out" | tr '\n' ' ')" != "$S/dog.jpg $S/kite.jpg " ]; then t_fail "read: $(cut -f1 "$T/out" | tr '\n' '|')"
  else t_ok; fi
fi

t_begin walk_says_what_it_skipped
# issue #32, 3: a walk names what it left out, by type (extensions, hidden names, FIFOs, dangling
# links, a directory reached again); --quiet keeps it quiet; a folder with no photo lists them in its warning
if setup; then
  mkdir -p "$T/mix/sub" && cp "$S/dog.jpg" "$T/mix/a.jpg" && cp "$S/kite.jpg" "$T/mix/sub/b.JPG"
  echo x >"$T/mix/notes.txt" && echo y >"$T/mix/sub/more.TXT" && echo z >"$T/mix/clip.mp4" && echo h >"$T/mix/.hidden.jpg"
  mkfifo "$T/mix/pipe.jpg" && ln -s nowhere.jpg "$T/mix/dead.jpg" && ln -s .. "$T/mix/sub/up"
  mkdir -p "$T/onlytxt" && echo t >"$T/onlytxt/r.txt"
  timeout 30 "$A" caption $M "$T/mix" >"$T/out" 2>"$T/err"; rc=$?
  timeout 30 "$A" caption $M --quiet "$T/mix" >/dev/null 2>"$T/errq"
  timeout 30 "$A" caption $M "$T/onlytxt" >/dev/null 2>"$T/err2"
  want="attncap caption: note: $T/mix: 2 photos; skipped: 1 .mp4, 2 .txt, 1 hidden, 1 FIFO, 1 dangling link, 1 directory already walked"
  if [ $rc -ne 0 ] || [ "$(wc -l <"$T/out")" -ne 2 ]; then t_fail "exit $rc: $(cat "$T/out" "$T/err")"
  elif ! grep -qxF "$want" "$T/err"; then t_fail "note: $(grep -v captioned "$T/err")"
  elif [ -s "$T/errq" ]; then t_fail "--quiet: $(cat "$T/errq")"
  elif ! grep -qF "warning: $T/onlytxt: no photos in it (.jpg .jpeg .png .bmp .gif .webp .tif .tiff); skipped: 1 .txt" "$T/err2"; then
    t_fail "no-photo warning: $(cat "$T/err2")"
  else t_ok; fi
fi

t_end
