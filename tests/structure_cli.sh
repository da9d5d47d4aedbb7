#!/usr/bin/env bash
# The layering rules of CONTRIBUTING.md on the built tree (tools/check_structure.py): no include
# cycle, no circle between library source files, families called and included only downwards, every
# exported name starts with ac_, command files within 300 lines and others within 800, the
# environment read only by src/base/.
. "$(dirname "$0")/lib.sh"
ROOT=${ATTNCAP_ROOT:-$(cd "$(dirname "$0")/.." && pwd)}
B="$ROOT/${BUILD:-build}"
py=$(command -v python3)

t_begin layering_and_names
if [ -z "$py" ]; then t_skip "needs python3"
elif ! command -v nm >/dev/null; then t_skip "needs nm (binutils)"
elif [ ! -f "$B/libattncap.a" ]; then t_skip "no $B/libattncap.a (make)"
elif out=$("$py" "$ROOT/tools/check_structure.py" "$ROOT" "$B" 2>&1); then t_ok
else t_fail "$(printf '%s\n' "$out" | head -5)"; fi

t_begin checker_finds_a_circle
# the check itself can fail: two objects calling each other, an exported name without ac_, an
# include cycle across family folders (bare names found on the library's include path) and a call
# from a family into one after it (base -> train)
if [ -z "$py" ] || ! command -v cc >/dev/null; then t_skip "needs python3 and cc"
else
  mkdir -p "$T/fake/include/attncap" "$T/fake/src/one" "$T/fake/src/two" "$T/fakeb/src"
  printf '#include "two.h"\n' >"$T/fake/src/one/one.h"
  printf '#include "one.h"\n' >"$T/fake/src/two/two.h"
  printf 'int ac_b(void);\nint ac_a(void) { return ac_b(); }\n' >"$T/a.c"
  printf 'int ac_a(void);\nint helper(void) { return 1; }\nint ac_b(void) { return helper() ? 0 : ac_a(); }\n' >"$T/b.c"
  mkdir -p "$T/fake/src/base" "$T/fake/src/train"
  printf 'int ac_d(void);\nint ac_c(void) { return ac_d(); }\n' >"$T/fake/src/base/c.c"
  printf 'int ac_d(void) { return 0; }\n' >"$T/fake/src/train/d.c"
  cc -c "$T/a.c" -o "$T/fakeb/src/a.o" && cc -c "$T/b.c" -o "$T/fakeb/src/b.o" &&
    cc -c "$T/fake/src/base/c.c" -o "$T/fakeb/src/c.o" && cc -c "$T/fake/src/train/d.c" -o "$T/fakeb/src/d.o" &&
    ar rcs "$T/fakeb/libattncap.a" "$T/fakeb/src/a.o" "$T/fakeb/src/b.o" "$T/fakeb/src/c.o" "$T/fakeb/src/d.o"
  out=$("$py" "$ROOT/tools/check_structure.py" "$T/fake" "$T/fakeb" 2>&1); rc=$?
  if [ $rc -eq 1 ] && grep -q "circle between files: a b" <<<"$out" && grep -q "without ac_: helper" <<<"$out" &&
     grep -q "include cycle: src/one/one.h -> src/two/two.h -> src/one/one.h" <<<"$out" &&
     grep -q "family layering: c (base) calls d (train)" <<<"$out" && ! grep -q "layering: a" <<<"$out"; then t_ok
  else t_fail "rc $rc: $out"; fi
fi

t_begin checker_finds_layout_breaches
# includes against the layers (a public header of a later family, a private one, a public header
# including a later one's), files over their budget and environment reads outside src/base/ are
# found, and so is a program file (src/cli/) including an unstable header or calling outside the
# version script; the same things the right way round are not
if [ -z "$py" ]; then t_skip "needs python3"
else
  L="$T/lay"
  mkdir -p "$L/include/attncap" "$L/src/base" "$L/src/data" "$L/src/train" "$L/src/cli" "$T/layb"
  printf 'int ac_e(void);\n' >"$L/include/attncap/e.h"
  printf '#include "attncap/e.h"\nint ac_e(void) { return 0; }\n' >"$L/src/base/e.c"
  printf '#include "attncap/e.h"\nint ac_tr(void);\n' >"$L/include/attncap/tr.h"
  printf '#include "attncap/tr.h"\n#include "attncap/e.h"\nint ac_tr(void) { return ac_e(); }\n' >"$L/src/train/tr.c"
  printf 'int ac_ti(void);\n' >"$L/src/train/train_internal.h"
  printf '#include "attncap/tr.h"\n' >"$L/src/base/back.c"
  printf '#include "train_internal.h"\n#include "attncap/e.h"\n' >"$L/src/data/priv.c"
  printf '#include "attncap/tr.h"\nint ac_dd(void);\n' >"$L/include/attncap/dd.h"
  printf 'int ac_dd(void) { return 0; }\n' >"$L/src/data/dd.c"
  printf '#include <stdlib.h>\nconst char *ac_v(void) { return getenv("X"); }\n' >"$L/src/data/envy.c"
  printf '/* getenv is base'"'"'s (a comment) */\n// nor environ here\n' >"$L/src/data/quiet.c"
  printf '#include <stdlib.h>\nconst char *v(void) { return getenv("X"); }\n' >"$L/src/cli/cli_env.c"
  for i in $(seq 301); do echo "/* $i */"; done >"$L/src/cli/cmd_big.c"
  for i in $(seq 300); do echo "/* $i */"; done >"$L/src/cli/cmd_fits.c"
  printf '#include "attncap/attncap.h"\n#include "attncap/e.h"\nint ac_e(void);\nint main(void) { return ac_e() + ac_v2(); }\n' >"$L/src/cli/cmd_inc.c"
  printf '  ac_v2;\n' >"$L/src/libattncap.map"
  mkdir -p "$T/layb/src/cli" && printf 'int ac_e(void);\nint ac_v2(void);\nint main(void) { return ac_e() + ac_v2(); }\n' >"$T/inc.c" &&
    cc -c "$T/inc.c" -o "$T/layb/src/cli/cmd_inc.o"
  for i in $(seq 801); do echo "/* $i */"; done >"$L/src/data/long.c"
  for i in $(seq 800); do echo "/* $i */"; done >"$L/src/data/fits.c"
  out=$("$py" "$ROOT/tools/check_structure.py" "$L" "$T/layb" 2>&1); rc=$?
  if [ $rc -eq 1 ] &&
     grep -q "include layering: src/base/back.c (base) includes attncap/tr.h (train)" <<<"$out" &&
     grep -q "include layering: src/data/priv.c (data) includes train_internal.h (train)" <<<"$out" &&
     grep -q "include layering: include/attncap/dd.h (data) includes attncap/tr.h (train)" <<<"$out" &&
     [ "$(grep -c "include layering" <<<"$out")" -eq 3 ] &&
     grep -q "line budget: src/cli/cmd_big.c: 301 lines, over 300" <<<"$out" &&
     grep -q "line budget: src/data/long.c: 801 lines, over 800" <<<"$out" &&
     ! grep -q "fits.c" <<<"$out" &&
     grep -q "environment: src/data/envy.c:2:" <<<"$out" && [ "$(grep -c "^environment:" <<<"$out")" -eq 1 ] &&
     grep -q "program: src/cli/cmd_inc.c:2: includes attncap/e.h" <<<"$out" &&
     grep -q "program: src/cli/cmd_inc.c: calls ac_e, not in the core" <<<"$out" && [ "$(grep -c "^program:" <<<"$out")" -eq 2 ]; then t_ok
  else t_fail "rc $rc: $out"; fi
fi

t_begin library_never_prints
# the library reports through its return values and callbacks, never on the terminal: no object of
# libattncap.a refers to stdout or stderr or calls the functions that write to stdout alone
if ! command -v nm >/dev/null; then t_skip "needs nm (binutils)"
elif [ ! -f "$B/libattncap.a" ]; then t_skip "no $B/libattncap.a (make)"
else
  raw=$(nm -A "$B/libattncap.a" 2>/dev/null | grep -E ' U (stdout|stderr|printf|vprintf|puts|putchar|perror)$' |
        sed 's/.*libattncap\.a://' | paste -sd' ')
  if [ -n "$raw" ]; then t_fail "the library prints: $raw"; else t_ok; fi
fi

t_begin allocations_go_through_alloc_c
# every allocation of the library is one a test can make fail (src/base/alloc_internal.h,
# tests/test_faults.c): no object but alloc.o calls the C library's allocators
if ! command -v nm >/dev/null; then t_skip "needs nm (binutils)"
elif [ ! -f "$B/libattncap.a" ]; then t_skip "no $B/libattncap.a (make)"
else
  raw=$(nm -A "$B/libattncap.a" 2>/dev/null | grep -E ' U (malloc|calloc|realloc|strdup|strndup|aligned_alloc|__strdup)$' |
        grep -v '[:/]alloc\.o:' | sed 's/.*libattncap\.a://' | paste -sd' ')
  if [ -n "$raw" ]; then t_fail "not through ac_malloc and co. (alloc_internal.h): $raw"; else t_ok; fi
fi
t_end
