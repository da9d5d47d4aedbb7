#!/usr/bin/env bash
# `make bench`: runs each benchmark (build/bench/* binaries, then bench/*.sh scripts) in turn.
# Each prints its own side-by-side figures (ours vs the peer, measured in the same run) and ratios.
set -u
cd "$(dirname "$0")/.."
export ATTNCAP_BIN=$(pwd)/build/attncap
if [ -z "${ATTNCAP_DATA:-}" ] && [ -d ../shared ]; then export ATTNCAP_DATA=$(cd ../shared && pwd); fi
filter=${1:-.}
for b in build/bench/*; do
  [ -f "$b" ] && [ -x "$b" ] && [[ $(basename "$b") =~ $filter ]] || continue
  [ "$(basename "$b")" = soak ] && continue # 20+ minutes: bench/soak.sh, by hand
  echo "== $(basename "$b")"; "$b"
done
for s in bench/*.sh; do
  n=$(basename "$s" .sh); [ "$n" = run ] && continue
  [ "$n" = soak ] && continue # 20+ minutes: run by hand
  [[ $n == vs_* ]] && continue # comparisons with another build (they build it): run by hand
  [[ $n =~ $filter ]] || continue
  echo "== $n"; bash "$s"
done
