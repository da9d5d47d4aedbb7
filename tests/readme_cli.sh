#!/usr/bin/env bash
# README.md as a newcomer reads it (issue #32): at most 250 lines, every link resolves, and every
# command it shows runs.
#  - Each indented code line that starts with `attncap ` is run as written (bash, in README order) in a
#    scratch folder holding samples/ and models/ (links to the checkout's; the encoder from ../shared
#    when `make models` has not fetched it), then checked for what the README says it writes.
#    `attncap detect` needs ../shared's detector; the fine-tuning block (features, train --init,
#    caption --model) runs as written, the README's own small setting (at most 10 epochs over 45
#    photos; about 20 s here), on 50 of ../shared's COCO photos staged as photos/images/ with a
#    captions.tsv of image<TAB>caption<TAB>split lines (45 train, 5 val). Without ../shared these skip,
#    and under ATTNCAP_CLI_WRAPPER (make test-valgrind) the fine-tuning block does (too slow there).
#  - The sample captions the README lists are what `attncap caption samples/` prints.
#  - Each `make TARGET` line names a Makefile target; `make test` is what .ci/run runs, `make demo`
#    captions samples/ with overlays into out/.
#  - Each inline `attncap CMD ...` is checked by `attncap CMD --help` only (the server of
#    `attncap serve` is run by tests/serve_cli.sh, the library example and its cc line by
#    tests/install_lib.sh, the Python line by tests/python_cli.sh).
#  - The command table lists every command of `attncap --help`; the nm -D count is the built
#    libattncap.so's.
. "$(dirname "$0")/lib.sh"
ROOT=${ATTNCAP_ROOT:-$(cd "$(dirname "$0")/.." && pwd)}
RM="$ROOT/README.md"
ENC=mobilenet_v2_1.0_224_quant.tflite

t_begin readme_at_most_250_lines
n=$(wc -l <"$RM")
if [ "$n" -le 250 ]; then t_ok; else t_fail "README.md has $n lines (at most 250)"; fi

t_begin readme_and_docs_links_resolve
bad=""
for f in "$RM" "$ROOT"/docs/*.md "$ROOT"/docs/experiments/*.md "$ROOT"/models/README.md; do
  [ -f "$f" ] || continue
  d=$(dirname "$f")
  while IFS= read -r l; do
    case $l in http*|\#*|mailto:*) continue ;; esac
    l=${l%%#*}
    [ -e "$d/$l" ] || bad="$bad ${f#"$ROOT"/}:$l"
  done < <(grep -oE '\]\([^)]+\)' "$f" | sed 's/^](//; s/)$//')
done
if [ -z "$bad" ]; then t_ok; else t_fail "links to nothing:$bad"; fi

# indented code lines (4 spaces) that are commands
cmds() { grep -E "^    $1( |$)" "$RM" | sed 's/^    //'; }

t_begin readme_make_targets_exist
bad=""
while IFS= read -r line; do
  for tgt in $(echo "$line" | grep -oE 'make [a-z][a-z0-9-]*' | awk '{print $2}'); do
    grep -qE "^$tgt:" "$ROOT/Makefile" || bad="$bad $tgt"
  done
done < <(cmds make)
if [ -n "$bad" ]; then t_fail "not Makefile targets:$bad"
elif ! cmds make | grep -qx 'make deps && make demo' || ! cmds make | grep -qx 'make deps && make test'; then
  t_fail "the quick start's two commands are not 'make deps && make demo' and 'make deps && make test'"
elif ! grep -qx 'make test' "$ROOT/.ci/run"; then t_fail ".ci/run does not run make test"
elif ! sed -n '/^demo:/,/^$/p' "$ROOT/Makefile" | grep -q 'caption .*--overlays out/ samples/'; then
  t_fail "make demo does not caption samples/ with overlays into out/"
else t_ok; fi

t_begin readme_command_table_lists_every_command
all=$("$A" --help | awk '/^commands:/ {on = 1; next} on && /^  [a-z]/ {print $1}')
missing=""
for c in $all; do grep -qF "| \`attncap $c\` |" "$RM" || missing="$missing $c"; done
if [ -z "$all" ]; then t_fail "attncap --help lists no commands"
elif [ -z "$missing" ]; then t_ok; else t_fail "not in the README's command table:$missing"; fi

t_begin readme_inline_commands_have_help
bad=""
for c in $(grep -oE '`attncap [a-z]+' "$RM" | awk '{print $2}' | sort -u); do
  case $c in help) "$A" help data >/dev/null 2>&1 || bad="$bad help" ;;
  *) "$A" "$c" --help >/dev/null 2>&1 || bad="$bad $c" ;; esac
done
if [ -z "$bad" ]; then t_ok; else t_fail "no such command (its --help fails):$bad"; fi

t_begin readme_exported_symbol_count
so="$ROOT/${BUILD:-build}/libattncap.so"
said=$(grep -oE 'exports those functions only: [0-9]+' "$RM" | grep -oE '[0-9]+$')
if [ ! -f "$so" ]; then t_skip "no $so (make tests builds it)"
elif [ -z "$said" ]; then t_fail "the README does not say how many functions libattncap.so exports"
else
  got=$(nm -D --defined-only "$so" | awk '$2 == "T"' | wc -l)
  if [ "$got" = "$said" ]; then t_ok; else t_fail "README says $said exported functions, nm -D finds $got"; fi
fi

# The scratch folder the README's commands run in.
W="$T/readme"
mkdir -p "$W/bin" "$W/models"
ln -s "$A" "$W/bin/attncap"
ln -s "$ROOT/samples" "$W/samples"
for f in "$ROOT"/models/*; do ln -s "$f" "$W/models/"; done
[ -e "$W/models/$ENC" ] || { [ -n "$DATA" ] && [ -f "$DATA/encoders/$ENC" ] && ln -s "$DATA/encoders/$ENC" "$W/models/"; }
have_enc=0; [ -e "$W/models/$ENC" ] && have_enc=1
staged=0
stage_photos() { # 50 of ../shared's COCO photos as the README's photos/ (45 train, 5 val)
  [ $staged = 1 ] && return 0
  mkdir -p "$W/photos/images"
  python3 - "$DATA/data/coco" "$W/photos" <<'EOF' || return 1
import json, os, sys
src, dst = sys.argv[1], sys.argv[2]
d = json.load(open(src + '/captions.json'))
names = sorted(i['file_name'] for i in d['images'])[:50]
ids = {i['id']: i['file_name'] for i in d['images'] if i['file_name'] in names}
for n in names: os.symlink(f'{src}/images/{n}', f'{dst}/images/{n}')
with open(dst + '/captions.tsv', 'w') as f:
    for a in d['annotations']:
        if a['image_id'] in ids:
            n = ids[a['image_id']]
            cap = ' '.join(a['caption'].split())
            f.write(f"{n}\t{cap}\t{'val' if names.index(n) >= 45 else 'train'}\n")
EOF
  staged=1
}

t_begin readme_sample_captions_are_what_caption_prints
if [ $have_enc = 0 ]; then t_skip "needs the encoder (make models, or ../shared/encoders/$ENC)"
else
  (cd "$W" && "$A" caption samples/ >"$T/samples.out" 2>"$T/err") || t_fail "caption samples/: $(head -2 "$T/err")"
  exp=$(grep -E '^    samples/[a-z_]+\.jpg  ' "$RM" | sed -E 's/^    //; s/ {2,}/\t/g')
  if [ -z "$exp" ]; then t_fail "the README lists no sample captions"
  elif [ "$exp" = "$(cat "$T/samples.out")" ]; then t_ok
  else t_fail "README's sample captions differ from attncap caption samples/: $(diff <(echo "$exp") "$T/samples.out" | head -4 | tr '\n' ' ')"; fi
fi

# each command line, in README order, then what the README says it wrote
i=0
while IFS= read -r line; do
  i=$((i + 1))
  t_begin "readme_command_$i"
  case $line in
    *photos/*) [ -n "$DATA" ] && [ -f "$DATA/data/coco/captions.json" ] || { t_skip "$line: needs ../shared/data/coco (photos/)"; continue; }
               [ -z "${ATTNCAP_CLI_WRAPPER:-}" ] || { t_skip "$line: not under $ATTNCAP_CLI_WRAPPER (make test and make test-asan run it)"; continue; }
               command -v python3 >/dev/null || { t_skip "$line: needs python3 to stage photos/"; continue; }
               stage_photos || { t_fail "could not stage photos/"; continue; } ;;
  esac
  case $line in attncap\ detect*) need_data encoders/yolox_nano.tflite || continue ;; esac
  case $line in attncap\ detect*) ;;
    *) [ $have_enc = 1 ] || { t_skip "needs the encoder (make models, or ../shared/encoders/$ENC)"; continue; } ;;
  esac
  if (cd "$W" && PATH="$W/bin:$PATH" timeout 600 bash -c "$line" >"$T/out" 2>"$T/err"); then :; else
    t_fail "$line: exit $?: $(head -3 "$T/err" | tr '\n' ' ')"; continue
  fi
  why=""
  case $line in
    *"--json samples/ > captions.jsonl"*) [ "$(wc -l <"$W/captions.jsonl")" = 6 ] || why="captions.jsonl has not 6 lines" ;;
    *"--given"*) [ -f "$W/given/horses/sheet.png" ] || why="no given/horses/sheet.png" ;;
    *"--overlays out/"*) [ -f "$W/out/horses/sheet.png" ] && ls "$W"/out/horses/[0-9][0-9]_*.png >/dev/null 2>&1 || why="no out/horses/sheet.png and NN_<word>.png" ;;
    attncap\ detect*) { grep -q '"label":"giraffe"' "$T/out" && [ -f "$W/boxes/giraffe.png" ]; } || why="no giraffe, or no boxes/giraffe.png" ;;
    *"--report report/"*) [ -f "$W/report/index.html" ] || why="no report/index.html" ;;
    attncap\ eval*) grep -q 'CIDEr-D' "$T/out" || why="no CIDEr-D printed" ;;
    attncap\ features*) [ -n "$(ls "$W"/photos.feat/shard-*.safetensors 2>/dev/null)" ] || why="no feature shard in photos.feat/" ;;
    attncap\ train*) [ -f "$W/mine.safetensors" ] || why="no mine.safetensors" ;;
    *"--model mine.safetensors photos/images/"*) [ "$(wc -l <"$T/out")" = 50 ] || why="$(wc -l <"$T/out") captions for 50 photos" ;;
    attncap\ caption\ samples/dog.jpg) grep -q '^samples/dog.jpg	' "$T/out" || why="no caption of samples/dog.jpg" ;;
    *"--nbest 3"*) [ "$(wc -l <"$T/out")" -ge 2 ] || why="no runners-up" ;;
    *) why="the test does not know what this command should write: add a check" ;;
  esac
  if [ -z "$why" ]; then t_ok; else t_fail "$line: $why"; fi
done < <(cmds attncap)
[ $i -gt 0 ] || { t_begin readme_shows_commands; t_fail "no indented attncap command in README.md"; }

t_end
