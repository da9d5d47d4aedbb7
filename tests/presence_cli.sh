#!/usr/bin/env bash
# attncap presence and the naming's use of it: a head fitted on samples/' own captions (person, dog,
# bicycle...), beside a copy of the shipped model, keeps the caption a man-and-dog photo had without it
# when the bar is 0, and bans every word of its groups when the bar is 1 (every group is then absent);
# hostile options and files give one line.
. "$(dirname "$0")/lib.sh"
ROOT=${ATTNCAP_ROOT:-$(cd "$(dirname "$0")/.." && pwd)}
ENC=encoders/mobilenet_v2_1.0_224_quant.tflite

t_begin help
if "$A" presence --help | grep -q -- '--min-photos'; then t_ok; else t_fail "no usage"; fi

t_begin bad_options
if expect_error "no --out" "$A" presence --features "$T/none" --data "$ROOT/samples/captions.tsv" &&
   expect_error "missing cache" "$A" presence --features "$T/none" --data "$ROOT/samples/captions.tsv" --out "$T/p.st"; then
  if [ -e "$T/p.st" ]; then t_fail "wrote output after an error"; else t_ok; fi
fi

t_begin fit_and_ban
if need_data $ENC; then
  mkdir -p "$T/m"; ln -sf "$ROOT/models/attncap.safetensors" "$T/m/attncap.safetensors"
  ln -sf "$ROOT/models/imagenet_words.tsv" "$T/m/imagenet_words.tsv"
  "$A" features --encoder "$DATA/$ENC" --quiet --out "$T/f" "$ROOT"/samples/*.jpg 2>"$T/err" &&
  "$A" presence --features "$T/f" --data "$ROOT/samples/captions.tsv" --split all --min-photos 1 --steps 50 \
      --quiet --out "$T/m/presence.safetensors" >"$T/fit" 2>>"$T/err"; rc=$?
  # run NAMING: the caption of person.jpg with the naming settings NAMING over the model's (ATTNCAP_NAMING)
  run() { ATTNCAP_NAMING=$1 "$A" caption --model "$T/m/attncap.safetensors" --encoder "$DATA/$ENC" --tags auto --quiet "$ROOT/samples/person.jpg" 2>>"$T/err" | cut -f2; }
  base=$(ATTNCAP_NAMING='{"presence_absent":0}' "$A" caption --model "$ROOT/models/attncap.safetensors" --encoder "$DATA/$ENC" --tags auto --quiet "$ROOT/samples/person.jpg" 2>>"$T/err" | cut -f2)
  off=$(run '{"presence_absent":0}'); all=$(run '{"presence_absent":1}')
  if [ $rc -ne 0 ]; then t_fail "fit: $(head -2 "$T/err")"
  elif ! grep -q '^person ' "$T/fit" || ! grep -q '^dog ' "$T/fit"; then t_fail "groups: $(cat "$T/fit")"
  elif [ -z "$base" ] || [ "$off" != "$base" ]; then t_fail "bar 0 changed the caption: '$base' -> '$off'"
  elif ! echo "$base" | grep -qwE 'man|dog'; then t_fail "the photo's caption names no man or dog: $base"
  elif [ -z "$all" ] || echo "$all" | grep -qwE 'man|men|woman|person|people|boy|girl|dog|dogs'; then t_fail "bar 1 still says: '$all'"
  else t_ok; fi
fi

# The ratio bar (a group below X times its prior, the share of the training photos showing it, is
# never said): 0 keeps the caption, 100 bans every group (each prior is above 0.01). --init FILE
# --steps 0 keeps FILE's weights (the same captions at every bar) and records the priors of --data.
t_begin ratio_and_init
if need_data $ENC && [ -s "$T/m/presence.safetensors" ]; then
  r0=$(run '{"presence_absent":0,"presence_ratio":0}'); r100=$(run '{"presence_absent":0,"presence_ratio":100}')
  mkdir -p "$T/i"; ln -sf "$ROOT/models/attncap.safetensors" "$T/i/attncap.safetensors"
  ln -sf "$ROOT/models/imagenet_words.tsv" "$T/i/imagenet_words.tsv"
  "$A" presence --features "$T/f" --data "$ROOT/samples/captions.tsv" --split all --init "$T/m/presence.safetensors" \
      --steps 0 --quiet --out "$T/i/presence.safetensors" >"$T/init" 2>>"$T/err"; rc=$?
  again=$(ATTNCAP_NAMING='{"presence_absent":0.5}' "$A" caption --model "$T/i/attncap.safetensors" --encoder "$DATA/$ENC" \
      --tags auto --quiet "$ROOT/samples/person.jpg" 2>>"$T/err" | cut -f2)
  first=$(run '{"presence_absent":0.5}')
  if [ "$r0" != "$base" ]; then t_fail "ratio 0 changed the caption: '$base' -> '$r0'"
  elif [ -z "$r100" ] || echo "$r100" | grep -qwE 'man|men|woman|person|people|boy|girl|dog|dogs'; then t_fail "ratio 100 still says: '$r100'"
  elif [ $rc -ne 0 ] || ! grep -q '^person .*(prior 0\.[0-9]*[1-9]' "$T/init"; then t_fail "init: $(cat "$T/init") $(head -2 "$T/err")"
  elif [ -z "$again" ] || [ "$again" != "$first" ]; then t_fail "--init --steps 0 moved the head: '$first' -> '$again'"
  elif expect_error "steps 0 without init" "$A" presence --features "$T/f" --data "$ROOT/samples/captions.tsv" --split all \
         --steps 0 --out "$T/x.st" &&
       expect_error "junk init" "$A" presence --features "$T/f" --data "$ROOT/samples/captions.tsv" --split all \
         --init "$ROOT/README.md" --out "$T/x.st"; then
    if [ -e "$T/x.st" ]; then t_fail "wrote output after an error"
    elif ! grep -q 'README.md' "$T/err"; then t_fail "error does not name the file: $(cat "$T/err")"
    else t_ok; fi
  fi
fi

t_begin hostile_head_beside_model
if need_data $ENC; then
  mkdir -p "$T/h"; ln -sf "$ROOT/models/attncap.safetensors" "$T/h/attncap.safetensors"
  ln -sf "$ROOT/models/imagenet_words.tsv" "$T/h/imagenet_words.tsv"
  printf 'junk' >"$T/h/presence.safetensors"
  if expect_error "junk head" "$A" caption --model "$T/h/attncap.safetensors" --encoder "$DATA/$ENC" --tags auto "$ROOT/samples/dog.jpg"; then
    if grep -q 'presence.safetensors' "$T/err"; then t_ok; else t_fail "error does not name the file: $(cat "$T/err")"; fi
  fi
fi
t_end
