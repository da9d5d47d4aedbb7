#!/usr/bin/env bash
# attncap tune on the tiny training fixture: every grid point must score exactly as attncap eval
# scores the same setting, the best one must be recorded in the model (and then be eval's default),
# the weights must stay untouched, and bad input must fail cleanly.
. "$(dirname "$0")/lib.sh"
FX=$(dirname "$0")/fixtures/train
# An undertrained model, so beam width and length normalisation change its captions.
"$A" train --data "$FX/captions.json" --features "$FX/features" --out "$T/m.safetensors" --embed 24 --hidden 32 \
  --att 16 --min-count 1 --batch 5 --lr 0.01 --dropout 0 --epochs 6 --checkpoint-every 0 --quiet >/dev/null 2>"$T/err_m"
ev() { "$A" eval --model "$T/m.safetensors" --data "$FX/captions.json" --split val --features "$FX/features" \
         --no-meteor --json --quiet "$@" | tr -d '\t\n '; }
field() { grep -o "\"$1\":[0-9.e-]*" | head -1 | cut -d: -f2; }

t_begin tune_grid_matches_eval_and_writes_the_best
if [ ! -s "$T/m.safetensors" ]; then t_fail "training the fixture model failed: $(head -2 "$T/err_m")"
elif ! "$A" tune --model "$T/m.safetensors" --data "$FX/captions.json" --features "$FX/features" --no-meteor \
       --beams 1,2,4 --alphas 0,1,2 --json --write >"$T/grid" 2>"$T/err"; then t_fail "tune: $(head -2 "$T/err")"
else
  ok=1; best=""; bestc=-1
  while read -r line; do
    case $line in \{\"best\"*) continue ;; esac
    b=$(echo "$line" | tr -d ' ' | field beam); a=$(echo "$line" | tr -d ' ' | field len_alpha)
    c=$(echo "$line" | tr -d ' ' | field CIDEr-D); b4=$(echo "$line" | tr -d ' ' | field BLEU-4)
    e=$(ev --beam "$b" --len-alpha "$a")
    ec=$(echo "$e" | field CIDEr-D); eb4=$(echo "$e" | field BLEU-4)
    if ! awk -v x="$c" -v y="$ec" -v p="$b4" -v q="$eb4" 'BEGIN{exit !((x-y)^2 < 1e-10 && (p-q)^2 < 1e-10)}'; then
      t_fail "beam $b alpha $a: tune CIDEr-D $c BLEU-4 $b4, eval $ec $eb4"; ok=0; break
    fi
    if awk -v x="$c" -v y="$bestc" 'BEGIN{exit !(x > y)}'; then bestc=$c; best="$b $a"; fi
  done <"$T/grid"
  if [ $ok = 1 ]; then
    chosen=$(grep '"best"' "$T/grid" | tr -d ' ')
    cb=$(echo "$chosen" | field beam); ca=$(echo "$chosen" | field len_alpha)
    d=$(ev); dc=$(echo "$d" | field CIDEr-D)   # eval with no settings: the model's recorded ones
    if [ "$cb $ca" != "$best" ]; then t_fail "chose beam $cb alpha $ca, the grid's best is $best"
    elif ! awk -v x="$dc" -v y="$bestc" 'BEGIN{exit !((x-y)^2 < 1e-10)}'; then t_fail "eval's default gives CIDEr-D $dc, best was $bestc"
    elif ! grep -q '"decode"' "$T/m.safetensors"; then t_fail "no decode metadata written"
    else t_ok; fi
  fi
fi

t_begin tune_keeps_the_weights
# The rewritten model loads and captions exactly as before once the decoding settings are given.
if [ -s "$T/m.safetensors" ]; then
  "$A" train --data "$FX/captions.json" --features "$FX/features" --out "$T/m2.safetensors" --embed 24 --hidden 32 \
    --att 16 --min-count 1 --batch 5 --lr 0.01 --dropout 0 --epochs 6 --checkpoint-every 0 --quiet >/dev/null 2>&1
  x=$(ev --beam 2 --len-alpha 1)
  y=$("$A" eval --model "$T/m2.safetensors" --data "$FX/captions.json" --split val --features "$FX/features" \
        --no-meteor --json --quiet --beam 2 --len-alpha 1 | tr -d '\t\n ')
  [ -n "$x" ] && [ "$x" = "$y" ] && t_ok || t_fail "scores differ after --write: $x vs $y"
else t_skip "no model"; fi

# --repeats records the words a caption may say twice: counted by hand here from a TSV of training
# captions (the val line is not counted); the grid's --write keeps the list, and a bad --repeats set
# fails in one line with the model untouched.
t_begin tune_repeats_records_the_hand_counted_words
if [ -s "$T/m.safetensors" ]; then
  cp "$T/m.safetensors" "$T/r.safetensors"
  printf 'p1.jpg\ta red dog and a red cat\ttrain\np2.jpg\ta red dog\ttrain\np3.jpg\tthe grass and the grass\ttrain\n' > "$T/rep.tsv"
  printf 'p4.jpg\tthe dog runs\ttrain\np5.jpg\ta dog and a dog and a dog\tval\n' >> "$T/rep.tsv"
  # used in >= 2 captions and said twice in >= half of them: a (1 of 2), red (1 of 2), the (1 of 2);
  # not dog (0 of 3), nor grass and cat (one caption each)
  want=$("$A" info "$T/r.safetensors" --vocab 2>/dev/null | tr -s ' \t' '\n' | grep -xE 'a|red|the' | sort | tr '\n' ' ')
  rec() { "$A" info "$1" | grep '^  decode' | grep -o '"repeatable":\[[^]]*\]' | tr -d '"[]' | cut -d: -f2 | tr ',' '\n' | sort | tr '\n' ' '; }
  # by default the objects' words join them (dog, cat...), a person's do not (man, people)
  cp "$T/r.safetensors" "$T/o.safetensors"
  "$A" tune --model "$T/o.safetensors" --repeats "$T/rep.tsv" --repeat-rate 0.5 --repeat-min 2 >/dev/null 2>&1
  objs=" $(rec "$T/o.safetensors")"
  if ! "$A" tune --model "$T/r.safetensors" --repeats "$T/rep.tsv" --repeat-rate 0.5 --repeat-min 2 --repeat-objects 0 \
       >"$T/out" 2>"$T/err"; then
    t_fail "tune --repeats: $(head -2 "$T/err")"
  elif [ -z "$want" ] || [ "$(rec "$T/r.safetensors")" != "$want" ]; then
    t_fail "recorded '$(rec "$T/r.safetensors")', counted '$want'"
  elif [[ "$objs" != *" dog "* || "$objs" == *" man "* || "$objs" == *" people "* || "$objs" != *" red "* ]]; then
    t_fail "with the objects' words: '$objs'"
  elif ! "$A" tune --model "$T/r.safetensors" --data "$FX/captions.json" --features "$FX/features" --no-meteor \
         --beams 1 --alphas 1 --write >/dev/null 2>"$T/err" || [ "$(rec "$T/r.safetensors")" != "$want" ]; then
    t_fail "the grid's --write lost the list: '$(rec "$T/r.safetensors")' $(head -1 "$T/err")"
  else
    sum=$(sha256sum < "$T/r.safetensors")
    expect_error "missing caption set" "$A" tune --model "$T/r.safetensors" --repeats "$T/nope.tsv" &&
      [ "$(sha256sum < "$T/r.safetensors")" = "$sum" ] && t_ok || t_fail "a bad --repeats changed the model"
  fi
else t_skip "no model"; fi

t_begin tune_errors
ok=1
expect_error "bad beam list" "$A" tune --model "$T/m.safetensors" --data "$FX/captions.json" --features "$FX/features" --beams 1,x || ok=0
expect_error "bad metric" "$A" tune --model "$T/m.safetensors" --data "$FX/captions.json" --features "$FX/features" --metric foo || ok=0
expect_error "missing cache" "$A" tune --model "$T/m.safetensors" --data "$FX/captions.json" --features "$T/nope" || ok=0
expect_error "missing model" "$A" tune --model "$T/nope.safetensors" --data "$FX/captions.json" --features "$FX/features" || ok=0
expect_error "no --features" "$A" tune --model "$T/m.safetensors" --data "$FX/captions.json" || ok=0
expect_error "meteor metric without meteor" "$A" tune --model "$T/m.safetensors" --data "$FX/captions.json" --features "$FX/features" --metric meteor --no-meteor || ok=0
[ $ok = 1 ] && t_ok
t_end
