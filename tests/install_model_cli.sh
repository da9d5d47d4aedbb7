#!/usr/bin/env bash
# An installed attncap captions (issue #32 item 1): `make install PREFIX=tmp` (into the test run's own
# BUILD dir) puts the model and its companions under PREFIX/share/attncap, and the installed binary,
# run from an empty directory with no ../shared, $ATTNCAP_* or models/ around, gives samples/dog.jpg
# the caption the repository's binary gives; then $XDG_DATA_HOME/attncap is searched (before the
# prefix), and a model whose naming uses the presence head refuses to run without it, naming the file.
. "$(dirname "$0")/lib.sh"
ROOT=${ATTNCAP_ROOT:-$(cd "$(dirname "$0")/.." && pwd)}
B=${BUILD:-build}
P="$T/prefix" D="$T/prefix/share/attncap"
ENCNAME=mobilenet_v2_1.0_224_quant.tflite
# the installed binary with nothing of the repository's environment: an empty HOME, no ATTNCAP_*
clean_run() { (cd "$T/empty" && env -u ATTNCAP_DATA -u ATTNCAP_MODEL -u ATTNCAP_ENCODER -u XDG_DATA_HOME HOME="$T/home" "$@"); }

installed=0
install_once() {
  [ $installed = 1 ] && return 0
  if [ ! -f "$ROOT/models/$ENCNAME" ] && { [ -z "$DATA" ] || [ ! -f "$DATA/encoders/$ENCNAME" ]; }; then
    t_skip "needs the encoder $ENCNAME in models/ (make models) or ../shared/encoders"; return 1
  fi
  case "$T" in "$ROOT"/*) t_skip "the temp dir $T is inside the repository"; return 1;; esac
  make -s -C "$ROOT" BUILD="$B" install PREFIX="$P" >"$T/make.log" 2>&1 || { t_fail "make install: $(tail -3 "$T/make.log")"; return 1; }
  mkdir -p "$T/empty" "$T/home"
  installed=1
}

t_begin install_puts_model_and_companions
if install_once; then
  ok=1
  for f in attncap.safetensors imagenet_words.tsv presence.safetensors $ENCNAME LICENSE-Apache-2.0; do
    [ -f "$D/$f" ] || { t_fail "not installed: share/attncap/$f"; ok=0; break; }
  done
  if [ $ok = 1 ] && ! cmp -s "$D/attncap.safetensors" "$ROOT/models/attncap.safetensors"; then t_fail "installed model differs"; ok=0; fi
  if [ $ok = 1 ] && [ -n "$DATA" ] && [ -f "$DATA/encoders/yolox_nano.tflite" ]; then
    for f in yolox_nano.tflite coco_labels.txt; do [ -f "$D/$f" ] || { t_fail "not installed: share/attncap/$f"; ok=0; break; }; done
  fi
  [ $ok = 1 ] && t_ok
fi

t_begin installed_binary_captions_from_an_empty_dir
if install_once; then
  want=$(cd "$ROOT" && "$A" caption samples/dog.jpg 2>"$T/err" | cut -f2)
  got=$(clean_run "$P/bin/attncap" caption "$ROOT/samples/dog.jpg" 2>"$T/err2" | cut -f2)
  if [ -z "$want" ]; then t_fail "the repository's binary: $(head -2 "$T/err")"
  elif [ "$got" != "$want" ]; then t_fail "installed: '$got' ($(head -2 "$T/err2")), repository: '$want'"
  else t_ok; fi
fi

t_begin xdg_data_home_then_prefix
if install_once; then
  mkdir -p "$T/xdg/attncap"
  cp "$D"/* "$T/xdg/attncap/" && rm "$T/xdg/attncap/presence.safetensors"
  # the user's directory comes first: its model without the presence head is refused, naming the file,
  # when the naming uses the head (the shipped model's default names nothing by rule)
  clean_run env XDG_DATA_HOME="$T/xdg" ATTNCAP_NAMING='{"presence_absent":0.1}' "$P/bin/attncap" caption --tags auto \
    "$ROOT/samples/dog.jpg" >"$T/out" 2>"$T/err"; rc=$?
  mv "$D" "$D.off"
  clean_run "$P/bin/attncap" caption "$ROOT/samples/dog.jpg" >"$T/out2" 2>"$T/err2"; rc2=$?
  mv "$D.off" "$D"
  if [ $rc -eq 0 ] || ! grep -q "$T/xdg/attncap/presence.safetensors: missing" "$T/err" ||
     [ "$(grep -vc '^attncap caption: note: naming settings from ATTNCAP_NAMING' "$T/err")" -ne 1 ] || [ -s "$T/out" ]; then
    t_fail "XDG model without presence.safetensors: exit $rc, '$(head -2 "$T/err")'"
  elif [ $rc2 -eq 0 ] || ! grep -q "$T/home/.local/share/attncap" "$T/err2" || ! grep -q "$D" "$T/err2"; then
    t_fail "no model anywhere: exit $rc2, '$(head -2 "$T/err2")' does not name both data directories"
  else t_ok; fi
fi

t_begin missing_word_table_named
if install_once; then
  mkdir -p "$T/m" && cp "$D/attncap.safetensors" "$D/presence.safetensors" "$D/$ENCNAME" "$T/m/"
  clean_run "$P/bin/attncap" caption --tags auto --model "$T/m/attncap.safetensors" "$ROOT/samples/dog.jpg" >"$T/out" 2>"$T/err"; rc=$?
  if [ $rc -eq 0 ] || ! grep -q "imagenet_words.tsv" "$T/err" || [ -s "$T/out" ]; then t_fail "exit $rc, '$(head -2 "$T/err")'"
  else t_ok; fi
fi

t_end
