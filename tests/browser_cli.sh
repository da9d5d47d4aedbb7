#!/usr/bin/env bash
# attncap serve's page in a real browser: headless Chromium driven by puppeteer-core (tests/browser/,
# installed by `npm ci`, offline from npm's cache when it can) loads the page from a server on a free
# loopback port, uploads samples/dog.jpg, checks the caption equals `attncap caption`'s, hovers each
# word and checks the attention canvas changes, screenshots. Skips without npm, chromium or the model.
. "$(dirname "$0")/lib.sh"
ROOT=${ATTNCAP_ROOT:-$(cd "$(dirname "$0")/.." && pwd)}
B=$ROOT/tests/browser
CHROMIUM=${CHROMIUM:-/usr/bin/chromium}
PID=""
trap '[ -n "$PID" ] && kill -KILL "$PID" 2>/dev/null' EXIT

t_begin page
if ! command -v node >/dev/null || ! command -v npm >/dev/null; then t_skip "needs node and npm"
elif [ ! -x "$CHROMIUM" ]; then t_skip "needs chromium ($CHROMIUM)"
elif [ ! -f "$ROOT/models/attncap.safetensors" ]; then t_skip "needs models/attncap.safetensors"
elif ! want=$("$A" caption --json "$ROOT/samples/dog.jpg" 2>"$T/err" | /usr/bin/python3 -c 'import json,sys; print(json.load(sys.stdin)["caption"])'); then
  t_skip "the repo's model does not run here (its encoder in ../shared missing?): $(head -1 "$T/err")"
elif [ ! -d "$B/node_modules/puppeteer-core" ] && ! (cd "$B" && npm ci --prefer-offline --no-audit --no-fund >"$T/npm.log" 2>&1); then
  t_skip "npm ci failed (offline?): $(tail -1 "$T/npm.log")"
else
  "$A" serve --port 0 --model "$ROOT/models/attncap.safetensors" 2>"$T/serve.err" &
  PID=$!
  for i in $(seq 1 300); do
    URL=$(grep -o 'http://[^ ]*/' "$T/serve.err" | head -1); [ -n "$URL" ] && break
    kill -0 "$PID" 2>/dev/null || break; sleep 0.1
  done
  if [ -z "$URL" ]; then t_fail "serve did not start: $(head -3 "$T/serve.err")"
  else
    shot=${ATTNCAP_SCREENSHOT:-$T/page.png}
    node "$B/page_test.js" "$URL" "$ROOT/samples/dog.jpg" "$want" "$shot" "$T/profile" >"$T/page.out" 2>&1
    grep -E '^(ok|FAIL) ' "$T/page.out"
    _p=$((_p + $(grep -c '^ok ' "$T/page.out"))); _f=$((_f + $(grep -c '^FAIL ' "$T/page.out")))
    if ! grep -qE '^(ok|FAIL) ' "$T/page.out"; then t_fail "the page test printed nothing: $(tail -5 "$T/page.out")"; fi
    [ -s "$shot" ] || t_fail "no screenshot"
  fi
  kill -TERM "$PID"; wait "$PID"; rc=$?; PID=""
  [ $rc = 0 ] || t_fail "serve exited $rc after SIGTERM"
fi
t_end
