#!/usr/bin/env bash
# Hours of work in one process, no growth (issue 35, section 2): bench/soak.c (the C library: 10,200
# captions with overlays, a sample every 500 photos), then bench/soak_python.py (the same through the
# Python package, 2,040 captions, a sample every 204) unless SOAK_PYTHON=0. Prints the machine and its
# load before and after each; appends nothing: copy the lines into bench/HISTORY.md. Long (about
# 20 minutes on an idle 2-core box): `make bench` does not run it.
# usage: bash bench/soak.sh [BUILD] [C_PHOTOS] [PY_PHOTOS]   (default build 10200 2040)
set -u
cd "$(dirname "$0")/.."
BUILD=${1:-build} NC=${2:-10200} NP=${3:-2040}
export ATTNCAP_DATA=${ATTNCAP_DATA:-$(cd ../shared 2>/dev/null && pwd)}
machine() { echo "# $(date -u +%FT%TZ) $(git rev-parse --short HEAD) $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ *//'), $(nproc) cores, load $(cut -d' ' -f1-3 /proc/loadavg)"; }
rc=0
[ -x "$BUILD/bench/soak" ] || make BUILD="$BUILD" "$BUILD/bench/soak" >/dev/null || exit 1
machine; "$BUILD/bench/soak" "$NC" 500 || rc=1; machine
if [ "${SOAK_PYTHON:-1}" != 0 ]; then
  so=$BUILD/libattncap.so
  [ -f "$so" ] || make BUILD="$BUILD" "$so" >/dev/null 2>&1
  if [ ! -f "$so" ]; then echo "soak: no $so: the Python soak skipped"
  else
    machine; ATTNCAP_LIB="$so" PYTHONPATH=python /usr/bin/python3 bench/soak_python.py "$NP" $((NP / 10 > 0 ? NP / 10 : 1)) || rc=1; machine
  fi
fi
exit $rc
