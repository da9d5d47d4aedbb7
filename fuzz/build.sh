#!/usr/bin/env bash
# Builds the libFuzzer targets into build-fuzz/ (clang with -fsanitize=fuzzer,address,undefined).
# usage: fuzz/build.sh [TARGET...]   (default: every fuzz/fuzz_*.c)
# Each fuzz/fuzz_NAME.c is linked with the library sources it lists in the SOURCES table below.
set -eu
cd "$(dirname "$0")/.."
CC=${FUZZ_CC:-clang}
FLAGS="-g -O1 -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=undefined -fno-omit-frame-pointer -std=c11 -D_GNU_SOURCE -Iinclude -I/usr/include/stb -I/usr/include/x86_64-linux-gnu/openblas-pthread"
LIBS="-lcjson -lopenblas -lstemmer -lpthread -lm"
declare -A SOURCES=(
  [safetensors]="src/safetensors.c src/common.c"
  [image]="src/image.c src/common.c fuzz/stb_image_impl.c"
  [tflite]="src/tflite.c src/cnn*.c src/pool.c src/image.c src/common.c fuzz/stb_image_impl.c"
  [features]="src/features.c src/encoder_id.c src/pool.c src/safetensors.c src/image.c src/common.c fuzz/stb_image_impl.c"
  [tokenize]="src/tokenize.c src/vocab.c src/strmap.c src/common.c src/objects.c"
  [dataset]="src/dataset.c src/strmap.c src/common.c"
  [results]="src/eval_io.c src/dataset.c src/metrics*.c src/meteor*.c src/objects*.c src/tokenize.c src/strmap.c src/common.c"
  [model]="src/model.c src/beam.c src/confidence.c src/features.c src/encoder_id.c src/image.c fuzz/stb_image_impl.c src/decoder.c src/decoder_train.c src/pool.c src/smm.c src/vocab.c src/tokenize.c src/safetensors.c src/strmap.c src/common.c"
  [boxes]="src/grounding.c src/decoder.c src/smm.c src/common.c"
  [tags]="src/tags.c src/vocab.c src/tokenize.c src/strmap.c src/common.c"
)
mkdir -p build-fuzz
targets=("$@")
[ ${#targets[@]} -gt 0 ] || for f in fuzz/fuzz_*.c; do t=$(basename "$f" .c); targets+=("${t#fuzz_}"); done
for t in "${targets[@]}"; do
  src=${SOURCES[$t]:-}
  [ -n "$src" ] || { echo "fuzz/build.sh: no SOURCES entry for $t" >&2; exit 1; }
  echo "building build-fuzz/fuzz_$t"
  objs=()
  for f in "fuzz/fuzz_$t.c" $src; do
    o="build-fuzz/obj/$t/$(basename "$f" .c).o"
    mkdir -p "$(dirname "$o")"
    extra=""
    # stb_image's own harmless UB (NULL + 0 on an empty IDAT, shifts of negative DCT values,
    # overflowing IDCT sums on garbage, memcpy(NULL, p, 0)) is not ours to fix and would stop every run; its memory
    # errors and out-of-bounds indexing are still caught (ASan, -fsanitize=bounds).
    [ "$f" = fuzz/stb_image_impl.c ] && extra="-fno-sanitize=pointer-overflow,shift,signed-integer-overflow,nonnull-attribute"
    $CC $FLAGS $extra -c "$f" -o "$o"
    objs+=("$o")
  done
  $CC $FLAGS "${objs[@]}" $LIBS -o "build-fuzz/fuzz_$t"
done
