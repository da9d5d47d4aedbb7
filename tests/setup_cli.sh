#!/usr/bin/env bash
# Set-up (issue #16 item 11): `make deps` installs what building and running need and nothing only
# the tests use (the browser goes to `make test-deps`, which CI runs); the packages are checked against
# the files the build and the program actually use (dpkg -S); `make models` offline, without
# ../shared, says where to put the encoder instead of printing a bare network error.
. "$(dirname "$0")/lib.sh"
ROOT=${ATTNCAP_ROOT:-$(cd "$(dirname "$0")/.." && pwd)}

# the packages a make target would install (make -n prints the apt-get line)
pkgs_of() { make -s -n -C "$ROOT" "$1" | grep 'apt-get install' | tail -1 | tr ' ' '\n' | grep -E '^[a-z0-9][a-z0-9.+-]+$' |
  grep -vxE 'apt-get|install|DEBIAN_FRONTEND=noninteractive'; }

t_begin deps_main_and_test_split
deps=$(pkgs_of deps | sort -u); test_deps=$(pkgs_of test-deps | sort -u)
ok=1
for p in chromium python3 pkg-config man-db; do
  if grep -qx "$p" <<<"$deps"; then t_fail "make deps installs $p, which only the tests use"; ok=0; break; fi
  if ! grep -qx "$p" <<<"$test_deps"; then t_fail "make test-deps does not install $p"; ok=0; break; fi
done
[ $ok = 1 ] && ! grep -qE 'make test-deps' "$ROOT/.ci/run" && { t_fail ".ci/run does not run make test-deps"; ok=0; }
[ $ok = 1 ] && ! make -s -n -C "$ROOT" test-deps | grep -q 'apt-get update' && { t_fail "make test-deps does not run make deps first"; ok=0; }
if [ $ok = 1 ]; then
  # every file the build links and the program opens comes from a package make deps installs
  if ! command -v dpkg >/dev/null; then t_skip "needs dpkg to map files to packages"; ok=2; fi
fi
if [ $ok = 1 ]; then
  files="/usr/share/fonts/truetype/dejavu/DejaVuSans.ttf /usr/share/wordnet/data.noun /usr/include/stb/stb_image.h /usr/include/png.h /usr/include/cjson/cJSON.h /usr/include/libstemmer.h"
  for l in png stb cjson stemmer; do files="$files $(cc -print-file-name=lib$l.so)"; done
  for f in $files; do
    [ -e "$f" ] || continue # not installed here: nothing to map
    p=$(dpkg -S "$f" 2>/dev/null | head -1 | cut -d: -f1)
    [ -n "$p" ] || continue
    grep -qx "$p" <<<"$deps" || { t_fail "$f comes from $p, which make deps does not install"; ok=0; break; }
  done
  [ $ok = 1 ] && ! grep -qx curl <<<"$deps" && { t_fail "make deps does not install curl, which make models downloads with"; ok=0; }
  [ $ok = 1 ] && t_ok
fi

t_begin models_offline_says_where
# a copy of the script in a tree with no ../shared, no ATTNCAP_DATA, and a curl that cannot connect
mkdir -p "$T/repo/tools" "$T/bin"
cp "$ROOT/tools/get_encoder.sh" "$ROOT/tools/shared_copy.sh" "$T/repo/tools/"
printf '#!/bin/sh\necho "curl: (6) Could not resolve host: storage.googleapis.com" >&2\nexit 6\n' >"$T/bin/curl"
chmod +x "$T/bin/curl"
env -u ATTNCAP_DATA PATH="$T/bin:$PATH" bash "$T/repo/tools/get_encoder.sh" >"$T/out" 2>"$T/err"; rc=$?
if [ $rc -eq 0 ]; then t_fail "exit 0 without an encoder"
elif [ "$(wc -l <"$T/err")" -ne 1 ]; then t_fail "expected one line, got: $(cat "$T/err")"
elif ! grep -qF "$T/repo/models/" "$T/err" || ! grep -q "make models" "$T/err" || ! grep -q "mobilenet_v2_1.0_224_quant.tflite" "$T/err" ||
     ! grep -q "SHA-256 7aad0c74" "$T/err" || ! grep -q "Could not resolve host" "$T/err"; then
  t_fail "does not say where to put it: $(cat "$T/err")"
elif [ -e "$T/repo/models/mobilenet_v2_1.0_224_quant.tflite" ]; then t_fail "left a file behind"
else t_ok; fi

t_begin detector_offline_says_where_and_refuses_another_file
# the detector has no download: with no ../shared it says where to put it; a ../shared copy whose
# SHA-256 differs is refused and nothing is left in models/
cp "$ROOT/tools/get_detector.sh" "$T/repo/tools/"
env -u ATTNCAP_DATA bash "$T/repo/tools/get_detector.sh" >"$T/out" 2>"$T/err"; rc=$?
mkdir -p "$T/other/encoders" && echo "not a detector" >"$T/other/encoders/yolox_nano.tflite"
ATTNCAP_DATA="$T/other" bash "$T/repo/tools/get_detector.sh" >"$T/out2" 2>"$T/err2"; rc2=$?
if [ $rc -eq 0 ] || [ "$(wc -l <"$T/err")" -ne 1 ] || ! grep -qF "$T/repo/models/" "$T/err" ||
   ! grep -q "yolox_nano.tflite" "$T/err" || ! grep -q "SHA-256 38dc5c78" "$T/err" || ! grep -q "make models" "$T/err"; then
  t_fail "offline: exit $rc, '$(cat "$T/err")'"
elif [ $rc2 -eq 0 ] || [ "$(wc -l <"$T/err2")" -ne 1 ] || ! grep -q "wrong SHA-256" "$T/err2"; then
  t_fail "another file: exit $rc2, '$(cat "$T/err2")'"
elif ls "$T/repo/models/" 2>/dev/null | grep -q .; then t_fail "left files behind: $(ls "$T/repo/models")"
else t_ok; fi

t_end
