#!/usr/bin/env bash
# The installable library (issue #16 item 10): `make install PREFIX=tmp` puts libattncap.a, the
# shared library, the headers and attncap.pc in place; the README's program compiles from the
# installed files alone, as C99 and as C++17 (-pedantic), linked shared and static, and runs, with each of the
# kernel variants chosen at run time (AVX-512, AVX2, baseline); every public header
# stands alone in C and C++; AC_VERSION = ac_version() = pkg-config's version; the library's error
# messages never name a command-line flag.
. "$(dirname "$0")/lib.sh"
ROOT=${ATTNCAP_ROOT:-$(cd "$(dirname "$0")/.." && pwd)}
MK="$(dirname "$A")/tests/test_captioner"
P="$T/prefix"
py=$( [ -x /usr/bin/python3 ] && echo /usr/bin/python3 || command -v python3 || true)

installed=0
install_once() {
  [ $installed = 1 ] && return 0
  if [ "${BUILD:-build}" != build ]; then t_skip "runs on the default build only (BUILD=${BUILD})"; return 1; fi
  command -v pkg-config >/dev/null || { t_skip "needs pkg-config"; return 1; }
  make -s -C "$ROOT" install PREFIX="$P" >"$T/make.log" 2>&1 || { t_fail "make install: $(tail -3 "$T/make.log")"; return 1; }
  installed=1
  export PKG_CONFIG_PATH="$P/lib/pkgconfig"
}

t_begin headers_guarded_and_marked_unstable
# attncap.h is the stable core (issue #31); every other header says at its top that it is not
ok=1
for h in "$ROOT"/include/attncap/*.h; do
  b=$(basename "$h")
  grep -q 'extern "C"' "$h" || { t_fail "$b has no extern \"C\" guard"; ok=0; break; }
  [ "$b" = attncap.h ] && continue
  head -3 "$h" | grep -q 'not part of the stable API; may change in any release' ||
    { t_fail "$b does not say at its top that it is not part of the stable API"; ok=0; break; }
done
[ $ok = 1 ] && t_ok

t_begin installed_files_and_version
if install_once; then
  want=$(sed -n 's/^#define AC_VERSION "\(.*\)"$/\1/p' "$ROOT/include/attncap/attncap.h")
  ok=1
  for f in bin/attncap lib/libattncap.a lib/libattncap.so lib/libattncap.so.${want%%.*} lib/libattncap.so.$want \
           lib/pkgconfig/attncap.pc include/attncap/attncap.h share/man/man1/attncap.1; do
    [ -e "$P/$f" ] || { t_fail "not installed: $f"; ok=0; break; }
  done
  if [ $ok = 1 ]; then
    for h in "$P"/include/attncap/*.h; do
      echo "#include <attncap/$(basename "$h")>" >"$T/h.c"
      cc -std=c11 -Wall -Wextra -Werror -fsyntax-only $(pkg-config --cflags attncap) "$T/h.c" 2>"$T/cc.err" &&
        c++ -x c++ -Wall -Wextra -Werror -fsyntax-only $(pkg-config --cflags attncap) "$T/h.c" 2>>"$T/cc.err" ||
        { t_fail "$(basename "$h") alone: $(head -3 "$T/cc.err")"; ok=0; break; }
    done
  fi
  if [ $ok = 1 ]; then
    printf '#include <attncap/attncap.h>\n#include <stdio.h>\nint main(void) { printf("%%s %%s\\n", AC_VERSION, ac_version()); return 0; }\n' >"$T/v.c"
    cc "$T/v.c" $(pkg-config --cflags --libs attncap) -Wl,-rpath,"$P/lib" -o "$T/v" 2>"$T/cc.err" || { t_fail "cc: $(head -3 "$T/cc.err")"; ok=0; }
  fi
  if [ $ok = 1 ]; then
    got=$("$T/v"); pcv=$(pkg-config --modversion attncap)
    if [ "$got" != "$want $want" ] || [ "$pcv" != "$want" ]; then t_fail "AC_VERSION ac_version() = '$got', pkg-config '$pcv', header $want"
    elif ldd "$T/v" | grep -q "libattncap.so.${want%%.*} => $P/lib"; then t_ok
    else t_fail "not linked to the installed shared library: $(ldd "$T/v" | grep attncap)"; fi
  fi
fi

t_begin readme_program_c_and_cxx
if install_once && need_data encoders/mobilenet_v1_0.25_128_quant.tflite; then
  ok=1
  # the README shows examples/caption_photos.c as it is
  awk '/^```c$/ {on = 1; next} /^```$/ && on {exit} on' "$ROOT/README.md" >"$T/readme.c"
  if ! cmp -s "$T/readme.c" "$ROOT/examples/caption_photos.c"; then t_fail "README's program differs from examples/caption_photos.c"; ok=0; fi
  [ -x "$MK" ] || { t_skip "needs $MK (make tests)"; ok=2; }
  if [ $ok = 1 ]; then
    "$MK" --make-model "$T/tiny.safetensors" || { t_fail "cannot make the tiny model"; ok=0; }
  fi
  if [ $ok = 1 ]; then
    cp "$T/readme.c" "$T/prog.c"
    cc -std=c99 -pedantic -Wall -Wextra -Werror "$T/prog.c" $(pkg-config --cflags --libs attncap) -Wl,-rpath,"$P/lib" -o "$T/prog_c" 2>"$T/cc.err" &&
      c++ -std=c++17 -pedantic -Wall -Wextra -Werror -x c++ "$T/prog.c" -x none $(pkg-config --cflags --libs attncap) -Wl,-rpath,"$P/lib" -o "$T/prog_cxx" 2>>"$T/cc.err" &&
      cc -std=c11 "$T/prog.c" $(pkg-config --cflags attncap) "$P/lib/libattncap.a" $(pkg-config --static --libs attncap | sed 's/-lattncap//') -o "$T/prog_static" 2>>"$T/cc.err" ||
      { t_fail "compile: $(head -5 "$T/cc.err")"; ok=0; }
  fi
  if [ $ok = 1 ]; then
    want=$(cd "$T" && "$A" caption --model "$T/tiny.safetensors" "$ROOT/samples/dog.jpg" | cut -f2)
    ldd "$T/prog_static" | grep -q attncap && { t_fail "the static build links the shared library"; ok=0; }
    for v in c cxx static; do
      [ $ok = 1 ] || break
      out=$(cd "$T" && ATTNCAP_MODEL="$T/tiny.safetensors" "./prog_$v" "$ROOT/samples/dog.jpg" 2>"$T/err"); rc=$?
      first=$(printf '%s\n' "$out" | head -1)
      words=$(printf '%s\n' "$out" | tail -n +2 | wc -l)
      if [ $rc -ne 0 ]; then t_fail "$v: exit $rc: $(cat "$T/err")"; ok=0
      elif [ "${first#*: }" = "$first" ] || [ "$(printf '%s' "${first#*: }" | sed 's/ (log-probability .*//')" != "$want" ]; then
        t_fail "$v: '$first', the CLI says '$want'"; ok=0
      elif [ "$words" -ne "$(echo "$want" | wc -w)" ]; then t_fail "$v: $words attention lines for '$want'"; ok=0; fi
    done
    # the installed library chooses its kernels at run time: the AVX2 and baseline variants (forced by
    # masking CPU features from glibc, which the resolvers ask) give the same caption, more slowly
    for mask in -AVX512F -AVX512F,-AVX2; do
      [ $ok = 1 ] || break
      for v in c static; do
        out=$(cd "$T" && GLIBC_TUNABLES=glibc.cpu.hwcaps=$mask ATTNCAP_MODEL="$T/tiny.safetensors" "./prog_$v" "$ROOT/samples/dog.jpg" 2>"$T/err" | head -1)
        if [ "$(printf '%s' "${out#*: }" | sed 's/ (log-probability .*//')" != "$want" ]; then
          t_fail "$v with $mask: '$out' ($(head -1 "$T/err")), the CLI says '$want'"; ok=0; break
        fi
      done
    done
    if [ $ok = 1 ]; then
      for s in ac_cnn_gemm ac_image_resize ac_smm_nn; do
        nm "$P/lib/libattncap.so" | grep -qE " i $s\$" && nm "$P/lib/libattncap.a" 2>/dev/null | grep -qE " T ${s}_avx512\$" &&
          nm "$P/lib/libattncap.a" 2>/dev/null | grep -qE " T ${s}_generic\$" || { t_fail "$s is not chosen at run time"; ok=0; break; }
      done
    fi
    if [ $ok = 1 ]; then
      (cd "$T" && ATTNCAP_MODEL="$T/tiny.safetensors" ./prog_c "$T/missing.jpg" >/dev/null 2>"$T/err"); rc=$?
      [ $rc -eq 1 ] && [ "$(wc -l <"$T/err")" -eq 1 ] && grep -q missing.jpg "$T/err" || { t_fail "missing photo: exit $rc, '$(cat "$T/err")'"; ok=0; }
    fi
  fi
  [ $ok = 1 ] && t_ok
fi

t_begin installed_variants_caption_alike
# The installed program's kernel variants, each forced by masking CPU features from glibc, caption the
# samples with the shipped model (its copy path, regions, softmax and float16 weights): AVX2 to the
# same bits as AVX-512 (every number of the JSON: the vector kernels keep one order of operations);
# the baseline, whose plain C sums in its own order, to the same captions.
enc=$ROOT/models/mobilenet_v2_1.0_224_quant.tflite det=$ROOT/models/yolox_nano.tflite
[ -f "$enc" ] || enc=$DATA/encoders/mobilenet_v2_1.0_224_quant.tflite
[ -f "$det" ] || det=$DATA/encoders/yolox_nano.tflite
if [ ! -f "$enc" ] || [ ! -f "$det" ]; then
  t_skip "needs the shipped model's encoder and detector (make models, or ../shared/encoders)"
elif install_once; then
  ok=1
  for mask in none -AVX512F -AVX512F,-AVX2; do
    ( [ $mask = none ] || export GLIBC_TUNABLES=glibc.cpu.hwcaps=$mask
      ATTNCAP_ENCODER=$enc ATTNCAP_DETECTOR=$det \
        "$P/bin/attncap" caption --json --quiet --model "$ROOT/models/attncap.safetensors" "$ROOT"/samples/*.jpg ) \
      >"$T/variant$mask.jsonl" 2>"$T/err" || { t_fail "with $mask: $(head -1 "$T/err")"; ok=0; break; }
  done
  if [ $ok = 1 ] && ! cmp -s "$T/variantnone.jsonl" "$T/variant-AVX512F.jsonl"; then
    t_fail "the AVX2 variant's JSON differs from the AVX-512 variant's"; ok=0
  elif [ $ok = 1 ] && [ "$(cut -d'"' -f8 "$T/variantnone.jsonl")" != "$(cut -d'"' -f8 "$T/variant-AVX512F,-AVX2.jsonl")" ]; then
    t_fail "the baseline variant's captions differ from the AVX-512 variant's"; ok=0
  fi
  [ $ok = 1 ] && t_ok
fi

t_begin library_messages_name_no_flags
# String literals in the library's sources (src/FAMILY/*.c and any flat src/*.c; the CLI is src/cli)
# must not say "--flag": a program using the library has no such flags.
SKIP_FILES='^$'
if [ -z "$py" ]; then t_skip "needs python3 to read C string literals"
else
  bad=$("$py" - "$ROOT/src" "$SKIP_FILES" <<'PY'
import glob, os, re, sys
src, skip = sys.argv[1], re.compile(sys.argv[2])
lit = re.compile(r'"((?:[^"\\\n]|\\.)*)"')
for p in sorted(glob.glob(os.path.join(src, '*.c')) + glob.glob(os.path.join(src, '*', '*.c'))):
    if os.path.basename(os.path.dirname(p)) == 'cli':
        continue
    if skip.match(os.path.basename(p)):
        continue
    text = re.sub(r'/\*.*?\*/', lambda m: '\n' * m.group(0).count('\n'), open(p, encoding='utf-8').read(), flags=re.S)
    for n, line in enumerate(text.split('\n'), 1):
        line = re.sub(r'//.*', '', line) if '"' not in line else line
        for m in lit.finditer(line):
            if re.search(r'--[a-z]', m.group(1)):
                print('%s:%d: "%s"' % (os.path.basename(p), n, m.group(1)))
PY
)
  if [ -n "$bad" ]; then t_fail "library messages name flags: $(printf '%s\n' "$bad" | head -3)"; else t_ok; fi
fi

t_end
