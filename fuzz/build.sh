#!/usr/bin/env bash
# Builds the libFuzzer targets into build-fuzz/ (clang with -fsanitize=fuzzer,address,undefined;
# FUZZ_OUT=DIR: into DIR instead, an engineer's own folder).
# usage: fuzz/build.sh [TARGET...]   (default: every fuzz/fuzz_*.c)
# Each fuzz/fuzz_NAME.c is linked with the library sources it lists in the SOURCES table below.
set -eu
cd "$(dirname "$0")/.."
CC=${FUZZ_CC:-clang}
OUT=${FUZZ_OUT:-build-fuzz}
# the library's family folders (and src/ itself, for a file not yet moved) on the include path, as the
# Makefile does: the library's files include each other's private headers by bare name
LIB_DIRS=$(ls -d src/*/ | grep -v '^src/cli/$' | sed 's|/$||')
FLAGS="-g -O1 -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=undefined -fno-omit-frame-pointer -std=c11 -D_GNU_SOURCE -Iinclude -I/usr/include/stb -I/usr/include/x86_64-linux-gnu/openblas-pthread -Isrc $(printf -- '-I%s ' $LIB_DIRS)"
LIBS="-lcjson -lopenblas -lstemmer -lturbojpeg -lwebp -ltiff -lpng -lstb -lpthread -lm"
# library files by name (globs allowed: "*" is every library file), found in whichever folder of src/
# holds them; a path (with a /) is taken as it is
declare -A SOURCES=(
  [safetensors]="safetensors common"
  [image]="image resize image_jpeg image_formats common fuzz/stb_image_impl.c"
  [tflite]="tflite cnn* pool image resize image_jpeg image_formats common fuzz/stb_image_impl.c"
  [features]="features features_shard encoder_id locate pool safetensors image resize image_jpeg image_formats common fuzz/stb_image_impl.c"
  [tokenize]="tokenize vocab strmap common objects"
  [dataset]="dataset tokenize strmap common"
  [results]="eval_io dataset metrics* meteor* objects* tokenize vocab strmap common"
  [model]="* fuzz/stb_image_impl.c" # the model file reaches naming, tags, objects, the copy words: every file
  [boxes]="* fuzz/stb_image_impl.c" # the decoder brings its attention, transformer and copy files
  [tags]="tags vocab tokenize strmap common"
  [model_meta]="* fuzz/stb_image_impl.c" # the model file's every reader, the captioner's included
  [detector]="detector locate tflite cnn* precision pool image resize image_jpeg image_formats common fuzz/stb_image_impl.c"
  [serve]="* src/cli/serve_request.c fuzz/stb_image_impl.c" # the server's reading of requests, ac_evaluate on what it accepts
)
# libraries a target needs beyond LIBS (serve: libmicrohttpd's post processor, as attncap serve links it)
declare -A EXTRA_LIBS=([serve]="-lmicrohttpd")
# SOURCES' names -> the paths of their .c files (a file flat in src/ or in a family folder)
lib_files() {
  local n d f found names
  read -ra names <<<"$1" # split, not globbed here: "*" is matched in each folder below
  for n in "${names[@]}"; do
    case $n in */*) echo "$n"; continue ;; esac
    found=0
    for d in src $LIB_DIRS; do
      for f in $d/$n.c; do [ -f "$f" ] && { echo "$f"; found=1; }; done
    done
    [ $found = 1 ] || { echo "fuzz/build.sh: no library file $n.c" >&2; return 1; }
  done
}
mkdir -p "$OUT"
targets=("$@")
[ ${#targets[@]} -gt 0 ] || for f in fuzz/fuzz_*.c; do t=$(basename "$f" .c); targets+=("${t#fuzz_}"); done
for t in "${targets[@]}"; do
  src=${SOURCES[$t]:-}
  [ -n "$src" ] || { echo "fuzz/build.sh: no SOURCES entry for $t" >&2; exit 1; }
  echo "building $OUT/fuzz_$t"
  # alloc.c: every library allocation goes through it; "*" in SOURCES: every library file
  files=$(lib_files "alloc $src") || exit 1
  files=$(echo "$files" | awk '!seen[$0]++')
  objs=()
  for f in "fuzz/fuzz_$t.c" $files; do
    o="$OUT/obj/$t/$(basename "$f" .c).o"
    mkdir -p "$(dirname "$o")"
    extra=""
    # stb_image's own harmless UB (NULL + 0 on an empty IDAT, shifts of negative DCT values,
    # overflowing IDCT sums on garbage, memcpy(NULL, p, 0)) is not ours to fix and would stop every run; its memory
    # errors and out-of-bounds indexing are still caught (ASan, -fsanitize=bounds).
    [ "$f" = fuzz/stb_image_impl.c ] && extra="-fno-sanitize=pointer-overflow,shift,signed-integer-overflow,nonnull-attribute"
    $CC $FLAGS $extra -c "$f" -o "$o"
    objs+=("$o")
  done
  $CC $FLAGS "${objs[@]}" $LIBS ${EXTRA_LIBS[$t]:-} -o "$OUT/fuzz_$t"
done
