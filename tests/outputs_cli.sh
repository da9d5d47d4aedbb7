#!/usr/bin/env bash
# Outputs that cannot be redirected (issue 35, section 4), on the tiny random model over the small
# shared encoder: an overlay folder that is a symlink is refused and its target left alone; --force
# over a folder holding a symlinked sheet.png replaces the folder, not the link's target; two
# processes writing overlays of the same photos into one folder at once leave whole folders and no
# temporaries.
. "$(dirname "$0")/lib.sh"
MK="$(dirname "$A")/tests/test_captioner"
S=${ATTNCAP_ROOT:-$(cd "$(dirname "$0")/.." && pwd)}/samples

setup() {
  need_data encoders/mobilenet_v1_0.25_128_quant.tflite || return 1
  [ -x "$MK" ] || { t_skip "needs $MK (make tests)"; return 1; }
  [ -f "$T/tiny.safetensors" ] || "$MK" --make-model "$T/tiny.safetensors" || { t_fail "cannot make the tiny model"; return 1; }
  M="--model $T/tiny.safetensors --encoder $DATA/encoders/mobilenet_v1_0.25_128_quant.tflite"
}

# The files of a folder, one a line: NAME TYPE (f file, l link, d folder).
listing() { (cd "$1" && find . -mindepth 1 -printf '%P %y\n' | sort); }

t_begin overlay_folder_symlink_refused
if setup; then
  rm -rf "$T/o1" "$T/elsewhere" && mkdir -p "$T/o1" "$T/elsewhere" && echo mine >"$T/elsewhere/keep.txt"
  ln -s "$T/elsewhere" "$T/o1/dog"
  if ! expect_error "without --force" "$A" caption $M --overlays "$T/o1" "$S/dog.jpg"; then :
  elif ! grep -q 'exists' "$T/err"; then t_fail "without --force: $(cat "$T/err")"
  elif "$A" caption $M --force --overlays "$T/o1" "$S/dog.jpg" >/dev/null 2>"$T/err"; then t_fail "with --force: exit 0"
  elif ! grep -q 'o1/dog: exists and is not a directory' "$T/err"; then t_fail "with --force: $(cat "$T/err")"
  elif [ ! -L "$T/o1/dog" ] || [ "$(listing "$T/elsewhere")" != "keep.txt f" ]; then
    t_fail "the link or its target changed: $(listing "$T/elsewhere" | paste -sd' ')"
  elif [ "$(listing "$T/o1")" != "dog l" ]; then t_fail "left in the folder: $(listing "$T/o1" | paste -sd' ')"
  else t_ok; fi
fi

t_begin force_replaces_a_folder_with_a_symlinked_sheet_not_its_target
if setup; then
  rm -rf "$T/o2" && mkdir -p "$T/o2"
  if ! "$A" caption $M --overlays "$T/o2" "$S/dog.jpg" >/dev/null 2>"$T/err"; then t_fail "first run: $(head -2 "$T/err")"
  else
    want=$(listing "$T/o2/dog")
    echo precious >"$T/target.png"
    rm "$T/o2/dog/sheet.png" && ln -s "$T/target.png" "$T/o2/dog/sheet.png"
    if ! "$A" caption $M --force --overlays "$T/o2" "$S/dog.jpg" >/dev/null 2>"$T/err"; then t_fail "--force: $(head -2 "$T/err")"
    elif [ "$(cat "$T/target.png")" != precious ]; then t_fail "the link's target was written"
    elif [ -L "$T/o2/dog/sheet.png" ] || [ "$(listing "$T/o2/dog")" != "$want" ]; then
      t_fail "the folder is not a whole new one: $(listing "$T/o2/dog" | paste -sd' ')"
    elif ! head -c 8 "$T/o2/dog/sheet.png" | od -An -c | grep -q 'P   N   G'; then t_fail "sheet.png is not a PNG"
    else t_ok; fi
  fi
fi

t_begin two_writers_at_once_whole_folders_no_temporaries
if setup; then
  photos=("$S/dog.jpg" "$S/horses.jpg" "$S/kite.jpg" "$S/giraffe.jpg")
  rm -rf "$T/ref" "$T/o3" && mkdir -p "$T/ref" "$T/o3"
  if ! "$A" caption $M --overlays "$T/ref" "${photos[@]}" >/dev/null 2>"$T/err"; then t_fail "reference run: $(head -2 "$T/err")"
  else
    bad=""
    for round in 1 2 3; do
      "$A" caption $M --force --overlays "$T/o3" "${photos[@]}" >/dev/null 2>"$T/err1" &
      p1=$!
      "$A" caption $M --force --overlays "$T/o3" "${photos[@]}" >/dev/null 2>"$T/err2" &
      p2=$!
      wait $p1; r1=$?
      wait $p2; r2=$?
      # a writer may lose the race for a folder (--force: "cannot rename into place", the other's
      # folder there meanwhile), never crash
      for r in $r1 $r2; do [ $r -ge 128 ] && bad="round $round: a writer crashed (signal $((r - 128)))"; done
      grep -qE 'AddressSanitizer|runtime error|LeakSanitizer' "$T/err1" "$T/err2" && bad="round $round: sanitizer: $(head -2 "$T/err1" "$T/err2")"
      if [ "$(listing "$T/o3")" != "$(listing "$T/ref")" ]; then
        bad="round $round: $(diff <(listing "$T/ref") <(listing "$T/o3") | grep '^[<>]' | head -4 | paste -sd' ')"
      fi
      [ -n "$bad" ] && break
    done
    if [ -n "$bad" ]; then t_fail "$bad"; else t_ok; fi
  fi
fi

t_end
