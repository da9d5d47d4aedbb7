#!/usr/bin/env bash
# Hours of work in one process, no growth (issue 35, section 2): bench/soak.c (the C library: 10,200
# captions with overlays, a sample every 500 photos), then bench/soak_python.py (the same through the
# Python package, 2,040 captions, a sample every 204) unless SOAK_PYTHON=0, then bench/serve_load.py (the
# same through `attncap serve`: C_PHOTOS requests from 8 keep-alive clients over the same photos, every
# answer checked against `attncap caption`, the server's RSS, descriptors and threads read every 500
# requests) unless SOAK_SERVE=0. Prints the machine and its load before and after each; appends
# nothing: copy the lines into bench/HISTORY.md. Long (about 20 minutes on an idle 2-core box for the
# library alone): `make bench` does not run it.
# usage: bash bench/soak.sh [BUILD] [C_PHOTOS] [PY_PHOTOS]   (default build 10200 2040)
#   the server alone, short (a check that the sampling works):
#   SOAK_C=0 SOAK_PYTHON=0 SERVE_CLIENTS=2 nice -n 19 bash bench/soak.sh BUILD 1000
set -u
cd "$(dirname "$0")/.."
BUILD=${1:-build} NC=${2:-10200} NP=${3:-2040}
export ATTNCAP_DATA=${ATTNCAP_DATA:-$(cd ../shared 2>/dev/null && pwd)}
machine() { echo "# $(date -u +%FT%TZ) $(git rev-parse --short HEAD 2>/dev/null || echo "(no git)") $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ *//'), $(nproc) cores, load $(cut -d' ' -f1-3 /proc/loadavg)"; }
rc=0
[ "${SOAK_C:-1}" = 0 ] || [ -x "$BUILD/bench/soak" ] || make BUILD="$BUILD" "$BUILD/bench/soak" >/dev/null || exit 1
if [ "${SOAK_C:-1}" != 0 ]; then machine; "$BUILD/bench/soak" "$NC" 500 || rc=1; machine; fi
if [ "${SOAK_PYTHON:-1}" != 0 ]; then
  so=$BUILD/libattncap.so
  [ -f "$so" ] || make BUILD="$BUILD" "$so" >/dev/null 2>&1
  if [ ! -f "$so" ]; then echo "soak: no $so: the Python soak skipped"
  else
    machine; ATTNCAP_LIB="$so" PYTHONPATH=python /usr/bin/python3 bench/soak_python.py "$NP" $((NP / 10 > 0 ? NP / 10 : 1)) || rc=1; machine
  fi
fi
if [ "${SOAK_SERVE:-1}" != 0 ]; then
  photos=$(ls "$ATTNCAP_DATA"/data/coco*/images/*.jpg 2>/dev/null)
  if [ -z "$photos" ] || [ ! -x "$BUILD/attncap" ]; then echo "soak: no photos in $ATTNCAP_DATA/data/coco*/images or no $BUILD/attncap: the server soak skipped"
  else
    machine; /usr/bin/python3 bench/serve_load.py --bin "$BUILD/attncap" --requests "$NC" --clients "${SERVE_CLIENTS:-8}" \
      --hostile 0 --sample-every 500 $photos || rc=1; machine
  fi
fi
exit $rc
