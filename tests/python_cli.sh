#!/usr/bin/env bash
# The Python package (python/, issue #34 section 2): python/tests/test_attncap.py under Debian's pytest
# against this build's libattncap.so and CLI (each pytest test one ok/FAIL/skip line, test_NAME as py_NAME),
# then the ways it installs: `pip install ./python` from the checkout, offline (pip's build isolation on:
# the build backend needs nothing from an index), into a folder and into a venv made with
# --system-site-packages, and `make install-python PREFIX=...` (what `make install` runs), each finding the library and captioning
# samples/dog.jpg as the CLI does. Skips with a message without pytest, numpy or the shared encoder;
# with the sanitizer build (make test-asan) the library runs under ASan, python3 preloading its runtime.
. "$(dirname "$0")/lib.sh"
ROOT=${ATTNCAP_ROOT:-$(cd "$(dirname "$0")/.." && pwd)}
LIBSO="$ROOT/${BUILD:-build}/libattncap.so"
py=/usr/bin/python3
MODEL="$ROOT/models/attncap.safetensors"
ENC224=${DATA:+$DATA/encoders/mobilenet_v2_1.0_224_quant.tflite}
export PYTHONDONTWRITEBYTECODE=1

why=""
if [ ! -x "$py" ]; then why="needs Debian's /usr/bin/python3"
elif ! "$py" -c 'import numpy' 2>/dev/null; then why="needs numpy for /usr/bin/python3 (python3-numpy)"
elif [ ! -e "$LIBSO" ]; then why="needs $LIBSO (make tests builds it)"
elif [ -n "${ATTNCAP_CLI_WRAPPER:-}" ]; then why="not under ATTNCAP_CLI_WRAPPER (python3 and its CLI runs under valgrind take too long)"
fi

# A model that attends to detected objects (regions), trained on ../shared's 100 COCO photos and their
# detections (about a minute): its results' attention and regions are compared with the CLI's.
regions_model() {
  local d="$DATA/encoders/yolox_nano.tflite"
  [ -f "$d" ] && [ -d "$DATA/data/coco/images" ] && [ -f "$DATA/encoders/mobilenet_v1_0.25_128_quant.tflite" ] || return 0
  coco_features || return 1
  "$A" detect --detector "$d" --min-score 0.1 "$COCO"/images/* >"$T/det.jsonl" 2>"$T/err" ||
    { t_fail "detect: $(head -2 "$T/err")"; return 1; }
  coco_train "$T/regions.safetensors" --detections "$T/det.jsonl" || return 1
  export ATTNCAP_TEST_REGIONS_MODEL="$T/regions.safetensors" ATTNCAP_DETECTOR="$d"
}
# The sanitizer build's library (make test-asan) loads into python3 with the ASan runtime preloaded;
# leaks are not reported (python3's own allocations outlive it) and the RSS tests skip.
if [ -z "$why" ] && ldd "$LIBSO" | grep -q libasan; then
  export LD_PRELOAD="$(cc -print-file-name=libasan.so)" ASAN_OPTIONS="detect_leaks=0:abort_on_error=1"
fi

t_begin pytest
if [ -n "$why" ]; then t_skip "$why"
elif ! "$py" -c 'import pytest' 2>/dev/null; then t_skip "needs pytest for /usr/bin/python3 (python3-pytest)"
elif regions_model; then
  (cd "$T" && ATTNCAP_LIB="$LIBSO" PYTHONPATH="$ROOT/python" ATTNCAP_ROOT="$ROOT" ATTNCAP_DATA="$DATA" \
    "$py" -m pytest -p no:cacheprovider -q --junitxml="$T/junit.xml" "$ROOT/python/tests/test_attncap.py" \
    >"$T/pytest.log" 2>&1)
  rc=$?
  if [ ! -s "$T/junit.xml" ]; then t_fail "pytest exit $rc, no report: $(tail -5 "$T/pytest.log")"
  else
    # one protocol line per pytest test
    "$py" - "$T/junit.xml" <<'PY' >"$T/lines"
import sys, xml.etree.ElementTree as ET
for tc in ET.parse(sys.argv[1]).getroot().iter("testcase"):
    name = "py_" + tc.get("name").removeprefix("test_")
    bad = tc.find("failure") if tc.find("failure") is not None else tc.find("error")
    skip = tc.find("skipped")
    if bad is not None:
        msg = (bad.get("message") or bad.text or "").strip().splitlines()
        print(f"FAIL {name}: {msg[0] if msg else 'failed'}")
    elif skip is not None:
        print(f"skip {name}: {skip.get('message', '').strip()}")
    else:
        print(f"ok {name}")
PY
    while IFS= read -r line; do
      case $line in
        ok\ *) _name=${line#ok }; t_ok ;;
        FAIL\ *) rest=${line#FAIL }; _name=${rest%%:*}; t_fail "${rest#*: }" ;;
        skip\ *) rest=${line#skip }; _name=${rest%%:*}; t_skip "${rest#*: }" ;;
      esac
    done <"$T/lines"
    [ "$rc" -ne 0 ] && ! grep -q '^FAIL' "$T/lines" && { _name=pytest; t_fail "pytest exit $rc: $(tail -3 "$T/pytest.log")"; }
  fi
fi

# caption_like_cli DIR LIB: samples/dog.jpg captioned by the package installed in DIR (ATTNCAP_LIB=LIB,
# or unset when LIB is ""), compared with the CLI's caption; prints the library it loaded.
caption_like_cli() {
  local want got
  want=$("$A" caption --model "$MODEL" "$ROOT/samples/dog.jpg" 2>"$T/err" | cut -f2)
  got=$(cd "$T" && env -u ATTNCAP_LIB ${2:+ATTNCAP_LIB="$2"} PYTHONPATH="$1" ATTNCAP_ENCODER="$ENC224" "$py" -c '
import sys, attncap
print(attncap.Captioner(sys.argv[1]).caption(sys.argv[2]).text)
print(attncap.library_path())' "$MODEL" "$ROOT/samples/dog.jpg" 2>&1)
  if [ -z "$want" ] || [ "$(printf '%s\n' "$got" | head -1)" != "$want" ]; then
    t_fail "the package says '$(printf '%s' "$got" | tail -2)', the CLI '$want' $(head -1 "$T/err")"; return 1
  fi
  loaded=$(printf '%s\n' "$got" | tail -1)
}

t_begin pip_install_offline
if [ -n "$why" ]; then t_skip "$why"
elif ! "$py" -c 'import setuptools, pip' 2>/dev/null; then t_skip "needs python3-setuptools and python3-pip"
elif [ ! -f "$ENC224" ]; then t_skip "needs ../shared/encoders/mobilenet_v2_1.0_224_quant.tflite"
else
  # --no-index: no network (build isolation stays on: the backend takes Debian's setuptools); --no-deps:
  # numpy is Debian's (pip --target would install its own).
  # From a copy of the package in a checkout's shape (pip builds in the tree: python/build/, *.egg-info),
  # so that runs beside each other do not share those folders.
  co="$T/checkout"
  mkdir -p "$co/include/attncap" && cp "$ROOT/include/attncap/attncap.h" "$co/include/attncap/" &&
    mkdir -p "$co/python" && cp -r "$ROOT/python/attncap" "$ROOT/python/pyproject.toml" "$ROOT/python/setup.py" \
      "$ROOT/python/README.md" "$ROOT/python/_build" "$co/python/"
  if ! "$py" -m pip install -q --no-index --no-deps --target "$T/site" "$co/python" \
       >"$T/pip.log" 2>&1; then t_fail "pip: $(grep -v WARNING "$T/pip.log" | tail -3)"
  elif ! grep -qx "CHECKOUT = '$co'" "$T/site/attncap/_where.py"; then
    t_fail "the installed package does not record the checkout: $(cat "$T/site/attncap/_where.py" | tail -2)"
  else
    # no ATTNCAP_LIB: the library found in the build/ of the checkout pip built from (unless the
    # system's library path has one, which comes first)
    mkdir -p "$co/build" && ln -sf "$LIBSO" "$co/build/libattncap.so"
    sys_lib=$("$py" -c 'import ctypes.util; print(ctypes.util.find_library("attncap") or "")')
    if caption_like_cli "$T/site" ""; then
      if [ -z "$sys_lib" ] && [ "$loaded" != "$co/build/libattncap.so" ]; then t_fail "loaded $loaded, not $co/build/libattncap.so"
      else t_ok; fi
    fi
  fi
fi

# the README's way: a venv that sees Debian's numpy, setuptools and wheel, and a plain
# `pip install ./python` in it (--no-index only to prove it fetches nothing)
t_begin pip_install_venv_offline
if [ -n "$why" ]; then t_skip "$why"
elif ! "$py" -c 'import setuptools, pip, wheel, ensurepip' 2>/dev/null; then t_skip "needs python3-setuptools, python3-wheel, python3-pip and python3-venv"
elif [ ! -f "$ENC224" ]; then t_skip "needs ../shared/encoders/mobilenet_v2_1.0_224_quant.tflite"
elif [ ! -d "${co:-}/python" ]; then t_skip "no checkout copy (pip_install_offline did not run)"
elif ! "$py" -m venv --system-site-packages "$T/venv" >"$T/venv.log" 2>&1; then t_fail "venv: $(tail -2 "$T/venv.log")"
elif ! (cd "$T" && "$T/venv/bin/pip" install -q --no-index "$co/python" >"$T/pipv.log" 2>&1); then
  t_fail "pip install ./python in a venv: $(grep -v WARNING "$T/pipv.log" | tail -3)"
else
  site=$("$T/venv/bin/python" -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')
  got=$(cd "$T" && ATTNCAP_LIB="$LIBSO" ATTNCAP_ENCODER="$ENC224" "$T/venv/bin/python" -c '
import sys, attncap
print(attncap.__file__.startswith(sys.argv[3]), attncap.Captioner(sys.argv[1]).caption(sys.argv[2]).text)' "$MODEL" "$ROOT/samples/dog.jpg" "$site" 2>&1)
  want=$("$A" caption --model "$MODEL" "$ROOT/samples/dog.jpg" 2>/dev/null | cut -f2)
  if [ "$got" != "True $want" ]; then t_fail "the venv's package says '$got', the CLI '$want'"
  else t_ok; fi
fi

t_begin make_install_python
if [ -n "$why" ]; then t_skip "$why"
elif [ ! -f "$ENC224" ]; then t_skip "needs ../shared/encoders/mobilenet_v2_1.0_224_quant.tflite"
else
  P="$T/prefix"
  if ! make -s -C "$ROOT" install-python PREFIX="$P" >"$T/make.log" 2>&1; then t_fail "make install-python: $(tail -3 "$T/make.log")"
  else
    site=$(ls -d "$P"/lib/python3*/dist-packages 2>/dev/null | head -1)
    # the library as `make install` puts it (its portable build is tests/install_lib.sh's): found
    # through the path recorded in the package, with no ATTNCAP_LIB
    mkdir -p "$P/lib" && cp "$LIBSO" "$P/lib/libattncap.so.1"
    if [ -z "$site" ]; then t_fail "nothing installed under $P/lib/python3*/dist-packages: $(cat "$T/make.log")"
    elif caption_like_cli "$site" ""; then
      [ "$loaded" = "$P/lib/libattncap.so.1" ] && t_ok || t_fail "loaded $loaded, not the recorded $P/lib/libattncap.so.1"
    fi
  fi
fi

t_end
