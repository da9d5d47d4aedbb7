#!/usr/bin/env bash
# The shared library's ABI against the committed baseline (issue #31): abidiff (Debian's abigail-tools)
# compares $BUILD/libattncap.so with abi/libattncap.abi (abidw's dump, `make abi-baseline`), the opaque
# handles' insides suppressed (abi/libattncap.suppr). Any other change fails unless the SONAME differs
# from the baseline's: a compatible one (a function added, a field added at the end of ac_result, which
# the library allocates) is recorded by `make abi-baseline`; an incompatible one also bumps the SONAME
# (AC_VERSION_MAJOR in attncap.h). Also: the exported names are exactly the header's AC_API functions
# and the version script's.
. "$(dirname "$0")/lib.sh"
ROOT=${ATTNCAP_ROOT:-$(cd "$(dirname "$0")/.." && pwd)}
SO="$(dirname "$A")/libattncap.so"
[ -f "$SO" ] || SO="$ROOT/${BUILD:-build}/libattncap.so" # under ATTNCAP_CLI_WRAPPER, $A is a wrapper script
BASE="$ROOT/abi/libattncap.abi"

t_begin abi_against_baseline
if ! command -v abidiff >/dev/null || ! command -v abidw >/dev/null; then
  t_skip "needs abidiff and abidw (Debian's abigail-tools: make test-deps)"
elif [ ! -f "$SO" ]; then t_fail "no $SO (make BUILD=... tests builds it)"
elif [ ! -f "$BASE" ]; then t_fail "no baseline $BASE (make abi-baseline)"
else
  abidiff --no-show-locs --suppressions "$ROOT/abi/libattncap.suppr" "$BASE" "$SO" >"$T/abi.diff" 2>&1; rc=$?
  old=$(sed -n "s/.*<abi-corpus [^>]*soname='\([^']*\)'.*/\1/p" "$BASE" | head -1)
  new=$(readelf -d "$SO" | sed -n 's/.*Library soname: \[\(.*\)\]/\1/p')
  if [ $rc -ge 128 ] || [ $((rc & 3)) -ne 0 ]; then t_fail "abidiff failed (exit $rc): $(head -3 "$T/abi.diff")"
  elif [ $rc -eq 0 ]; then t_ok
  elif [ "$old" != "$new" ]; then
    echo "# the ABI changed with the SONAME ($old -> $new): record the new baseline with make abi-baseline"; t_ok
  elif [ $((rc & 8)) -eq 0 ]; then # ABIDIFF_ABI_CHANGE alone: compatible (functions added, ...)
    t_fail "the ABI of $new grew compatibly against abi/libattncap.abi (record it with make abi-baseline): $(grep -E 'Added|\[A\]' "$T/abi.diff" | head -8 | tr -s ' ' | paste -sd' ')"
  else # ABIDIFF_ABI_INCOMPATIBLE_CHANGE
    t_fail "the ABI of $new changed incompatibly against abi/libattncap.abi (abidiff exit $rc: bump AC_VERSION_MAJOR): $(grep -E '^\s+\[|changed|Removed|Added' "$T/abi.diff" | head -8 | tr -s ' ' | paste -sd' ')"
  fi
fi

t_begin exports_are_the_core_api
# nm -D lists the header's AC_API functions, nothing else; src/libattncap.map lists the same names
hdr=$(grep -o '^AC_API [^(]*(' "$ROOT/include/attncap/attncap.h" | sed 's/($//; s/.*[ *]//' | sort)
map=$(sed -n 's/^ *\(ac_[a-z0-9_]*\);$/\1/p' "$ROOT/src/libattncap.map" | sort)
if [ ! -f "$SO" ]; then t_fail "no $SO"
else
  dyn=$(nm -D --defined-only "$SO" | awk '$2 != "A" {sub(/@.*/, "", $3); print $3}' | sort)
  n=$(printf '%s\n' "$hdr" | wc -l)
  if [ "$dyn" != "$hdr" ]; then t_fail "exported but not AC_API: $(comm -13 <(echo "$hdr") <(echo "$dyn") | head -5 | paste -sd' '); AC_API but not exported: $(comm -23 <(echo "$hdr") <(echo "$dyn") | paste -sd' ')"
  elif [ "$map" != "$hdr" ]; then t_fail "src/libattncap.map and the header's AC_API functions differ: $(diff <(echo "$map") <(echo "$hdr") | grep '^[<>]' | head -4 | paste -sd' ')"
  elif [ "$n" -lt 15 ]; then t_fail "only $n AC_API functions found in attncap.h"
  else echo "# $n exported functions, the header's $n AC_API declarations"; t_ok; fi
fi
t_end
