#!/usr/bin/env bash
# attncap serve end to end with the repo's model on a free loopback port: captions sent as the body
# and as multipart equal `attncap caption`'s, attention and n-best, hostile requests answered with their
# 4xx (a 50 MB body, a wrong type, a truncated JPEG, too many pixels, slow senders beside good ones), evaluate against
# hand-computed metrics, health and metrics, a full queue's 503, SIGTERM draining a request in flight.
. "$(dirname "$0")/lib.sh"
ROOT=${ATTNCAP_ROOT:-$(cd "$(dirname "$0")/.." && pwd)}
S=$ROOT/samples
PY=/usr/bin/python3
PID=""

# serve_start [flags...]: starts the server on a free port; sets PID and URL. 1 (after t_fail) on failure.
serve_start() {
  : >"$T/serve.err" # emptied here, not by the background job: the wait below must not read the last server's
  "$A" serve --port 0 "$@" 2>>"$T/serve.err" &
  PID=$!
  local i
  for i in $(seq 1 300); do
    URL=$(grep -o 'http://[^ ]*/' "$T/serve.err" | head -1)
    [ -n "$URL" ] && return 0
    kill -0 "$PID" 2>/dev/null || { t_fail "serve exited: $(head -3 "$T/serve.err")"; PID=""; return 1; }
    sleep 0.1
  done
  t_fail "serve did not start in 30 s: $(head -3 "$T/serve.err")"; return 1
}
serve_stop() { # SIGTERM; sets RC to its exit status
  [ -n "$PID" ] || return 0
  kill -TERM "$PID"; wait "$PID"; RC=$?; PID=""
}
trap '[ -n "$PID" ] && kill -KILL "$PID" 2>/dev/null' EXIT
# code URLPATH curl-args...: the HTTP status; the body in $T/body, headers in $T/head
code() { local p=$1; shift; curl -s -o "$T/body" -D "$T/head" -w '%{http_code}' "$@" "$URL${p#/}"; }
field() { $PY -c 'import json,sys; v=json.load(open(sys.argv[1])); print(v.get(sys.argv[2]) if isinstance(v,dict) else "")' "$1" "$2" 2>/dev/null; }

have() {
  command -v curl >/dev/null || { t_skip "needs curl"; return 1; }
  [ -f "$ROOT/models/attncap.safetensors" ] || { t_skip "needs models/attncap.safetensors"; return 1; }
  if [ ! -s "$T/cli.json" ]; then
    "$A" caption --json --model "$ROOT/models/attncap.safetensors" "$S/dog.jpg" >"$T/cli.json" 2>"$T/cli.err" ||
      { t_skip "the repo's model does not run here (its encoder in ../shared missing?): $(head -1 "$T/cli.err")"; return 1; }
  fi
  WANT=$(field "$T/cli.json" caption)
}

t_begin serve_health_and_page
if have && serve_start --model "$ROOT/models/attncap.safetensors"; then
  c=$(code /v1/health); st=$(field "$T/body" status)
  c2=$(code /); ty=$(grep -i '^content-type:' "$T/head" | tr -d '\r')
  if [ "$c" != 200 ] || [ "$st" != ok ]; then t_fail "health: $c $(cat "$T/body")"
  elif [ "$c2" != 200 ] || ! grep -q 'attention map' "$T/body" || [[ $ty != *text/html* ]]; then t_fail "page: $c2 $ty"
  elif ! grep -q 'attncap serve: http://127.0.0.1:' "$T/serve.err"; then t_fail "not on 127.0.0.1: $(cat "$T/serve.err")"
  elif grep -q 'note:' "$T/serve.err"; then t_fail "a note for the default address: $(cat "$T/serve.err")"
  else t_ok; fi
fi

t_begin caption_body_equals_cli
if [ -n "$PID" ]; then
  c=$(code /v1/caption -H 'Content-Type: image/jpeg' --data-binary @"$S/dog.jpg")
  if [ "$c" != 200 ]; then t_fail "status $c: $(cat "$T/body")"
  elif [ "$(field "$T/body" caption)" != "$WANT" ]; then t_fail "'$(field "$T/body" caption)' != cli '$WANT'"
  elif [ "$(field "$T/body" confidence)" != "$(field "$T/cli.json" confidence)" ]; then t_fail "confidence differs"
  elif grep -q '"alternatives"' "$T/body"; then t_fail "alternatives without nbest"
  else t_ok; fi
fi

t_begin caption_multipart_equals_cli
if [ -n "$PID" ]; then
  c=$(code /v1/caption -F "photo=@$S/dog.jpg;type=image/jpeg")
  c2=$(code /v1/caption -F "other=@$S/dog.jpg")
  if [ "$c" != 200 ]; then t_fail "status $c: $(cat "$T/body")"
  elif [ "$(curl -s -F "photo=@$S/dog.jpg" "${URL}v1/caption" | $PY -c 'import json,sys; print(json.load(sys.stdin)["caption"])')" != "$WANT" ]; then
    t_fail "multipart caption differs from '$WANT'"
  elif [ "$c2" != 400 ]; then t_fail "a form without 'photo': $c2"
  else t_ok; fi
fi

# attention=1: one grid per word, each summing to 1, equal to the CLI's --attention grids; nbest=3: at most 2
# runners-up, the best caption unchanged
t_begin caption_attention_and_nbest
if [ -n "$PID" ]; then
  "$A" caption --json --attention --model "$ROOT/models/attncap.safetensors" "$S/dog.jpg" >"$T/cli_att.json" 2>/dev/null
  c=$(code '/v1/caption?attention=1&nbest=3' -H 'Content-Type: image/jpeg' --data-binary @"$S/dog.jpg")
  why=$($PY - "$T/body" "$T/cli_att.json" <<'EOF'
import json, sys
s, c = json.load(open(sys.argv[1])), json.load(open(sys.argv[2]))
h, w = s["grid"]
if len(s["attention"]) != len(s["tokens"]): print("rows", len(s["attention"]), "words", len(s["tokens"]))
elif any(len(r) != h * w or abs(sum(r) - 1) > 1e-2 for r in s["attention"]): print("a grid is not", h, "x", w, "summing to 1")
elif s["attention"] != c["attention"]: print("attention differs from caption --attention's")
elif s["caption"] != c["caption"]: print("caption changed with nbest")
elif len(s.get("alternatives", [])) > 2: print("more than 2 alternatives")
EOF
)
  c2=$(code '/v1/caption?nbest=0' -H 'Content-Type: image/jpeg' --data-binary @"$S/dog.jpg")
  if [ "$c" != 200 ]; then t_fail "status $c: $(head -c 300 "$T/body")"
  elif [ -n "$why" ]; then t_fail "$why"
  elif [ "$c2" != 400 ]; then t_fail "nbest=0 gave $c2"
  else t_ok; fi
fi

t_begin hostile_requests
if [ -n "$PID" ]; then
  head -c 50000000 /dev/zero >"$T/big"
  head -c 20000 "$S/dog.jpg" >"$T/trunc.jpg"
  c1=$(code /v1/caption -H 'Content-Type: image/jpeg' --data-binary @"$T/big")
  c1b=$(code /v1/caption -H 'Content-Type: image/jpeg' -H 'Transfer-Encoding: chunked' --data-binary @"$T/big")
  c2=$(code /v1/caption -H 'Content-Type: text/plain' --data-binary @"$S/dog.jpg")
  c3=$(code /v1/caption -H 'Content-Type: image/jpeg' --data-binary @"$T/trunc.jpg"); e3=$(field "$T/body" error)
  c4=$(code /v1/caption -H 'Content-Type: image/jpeg' --data-binary '')
  c5=$(code /v1/caption)
  c6=$(code '/../../../etc/passwd' --path-as-is); c7=$(code /web/index.html)
  c8=$(code /v1/caption -H 'Content-Type: image/png' --data-binary 'not a photo at all')
  if [ "$c1" != 413 ] || [ "$c1b" != 413 ]; then t_fail "50 MB body: $c1 (chunked $c1b)"
  elif [ "$c2" != 415 ]; then t_fail "text/plain: $c2"
  elif [ "$c3" != 400 ] || [ -z "$e3" ]; then t_fail "truncated JPEG: $c3 '$e3'"
  elif [ "$c4" != 400 ] || [ "$c5" != 405 ]; then t_fail "empty body $c4, GET $c5"
  elif [ "$c6" != 404 ] || [ "$c7" != 404 ]; then t_fail "paths: $c6 $c7"
  elif [ "$c8" != 400 ]; then t_fail "garbage: $c8"
  elif [ "$(code /v1/health)" != 200 ]; then t_fail "not healthy after"
  else t_ok; fi
fi

t_begin evaluate_against_hand_computed
if [ -n "$PID" ]; then
  # identical candidate and reference: BLEU-1..4 and ROUGE-L are 1; "a b" against "a c": BLEU-1 = 1/2
  # (clipped unigram precision 1/2, no brevity penalty)
  c=$(code /v1/evaluate -H 'Content-Type: application/json' \
        --data '{"references": [["a dog runs on the grass"]], "candidates": ["a dog runs on the grass"], "meteor": false}')
  why=$($PY -c 'import json,sys; m=json.load(open(sys.argv[1])); ok=all(abs(b-1)<1e-6 for b in m["bleu"]) and abs(m["rouge_l"]-1)<1e-6 and m["meteor"] is None and m["n"]==1; print("" if ok else m)' "$T/body")
  J=(-H 'Content-Type: application/json')
  c2=$(code /v1/evaluate "${J[@]}" --data '{"references": [["a b"]], "candidates": ["a c"], "meteor": false}')
  b1=$($PY -c 'import json,sys; print(round(json.load(open(sys.argv[1]))["bleu"][0], 6))' "$T/body")
  c3=$(code /v1/evaluate "${J[@]}" --data '{"references": [["a"]], "candidates": ["a", "b"]}')
  c4=$(code /v1/evaluate "${J[@]}" --data '{not json')
  c5=$(code /v1/evaluate --data '{"references": [["a"]], "candidates": ["a"]}')  # form-urlencoded
  if [ "$c" != 200 ] || [ -n "$why" ]; then t_fail "identical: $c $why"
  elif [ "$c2" != 200 ] || [ "$b1" != 0.5 ]; then t_fail "BLEU-1 of 'a c' vs 'a b': $c2 $b1"
  elif [ "$c3" != 400 ] || [ "$c4" != 400 ] || [ "$c5" != 415 ]; then t_fail "bad bodies: $c3 $c4 $c5"
  else t_ok; fi
fi

t_begin metrics_count_requests
if [ -n "$PID" ]; then
  code /metrics >/dev/null
  m=$(cat "$T/body")
  ok=$(grep -c '^attncap_requests_total{path="/v1/caption",status="200"} [1-9]' <<<"$m")
  if [ "$ok" != 1 ]; then t_fail "no caption 200 count: $(grep requests_total <<<"$m" | head -5)"
  elif ! grep -q '^attncap_requests_total{path="/v1/caption",status="413"} 2$' <<<"$m"; then t_fail "413s: $(grep 413 <<<"$m")"
  elif ! grep -q '^attncap_request_seconds_bucket{le="+Inf"} ' <<<"$m" || ! grep -q '^attncap_batch_size_count [1-9]' <<<"$m"; then
    t_fail "histograms missing"
  elif ! grep -q '^attncap_errors_total [1-9]' <<<"$m"; then t_fail "errors not counted"
  else t_ok; fi
fi

# a request in flight when SIGTERM comes (half its body sent) is still answered, then the server exits 0
t_begin sigterm_drains_in_flight
if [ -n "$PID" ]; then
  port=${URL##*:}; port=${port%/}
  $PY - "$port" "$S/dog.jpg" "$T/ready" >"$T/late" <<'EOF2' &
import socket, sys, time, os
body = open(sys.argv[2], "rb").read()
s = socket.create_connection(("127.0.0.1", int(sys.argv[1])))
s.sendall(b"POST /v1/caption HTTP/1.1\r\nHost: x\r\nContent-Type: image/jpeg\r\nConnection: close\r\n"
          b"Content-Length: %d\r\n\r\n" % len(body) + body[:len(body) // 2])
open(sys.argv[3], "w").close()
time.sleep(1)
s.sendall(body[len(body) // 2:])
data = b""
while True:
    k = s.recv(65536)
    if not k: break
    data += k
print(data.split(b" ")[1].decode() if data else "none")
print(data.split(b"\r\n\r\n", 1)[-1].decode())
EOF2
  cpid=$!
  for i in $(seq 1 100); do [ -e "$T/ready" ] && break; sleep 0.05; done
  sleep 0.2
  serve_stop
  wait $cpid
  got=$(head -1 "$T/late"); tail -n +2 "$T/late" >"$T/late.json"
  if [ "$RC" != 0 ]; then t_fail "exit $RC: $(tail -2 "$T/serve.err")"
  elif [ "$got" != 200 ]; then t_fail "the request in flight got '$got'"
  elif [ "$(field "$T/late.json" caption)" != "$WANT" ]; then t_fail "in flight caption differs"
  else t_ok; fi
fi

# three senders of a body one byte a second, one silent after its headers and one sending its headers
# one byte a second hold connections while three photos are captioned one after another: each photo is
# answered (the CLI's caption) while the slow ones are still connected, and each slow one is answered
# 408 (written before the connection is closed: libmicrohttpd 0.9.75 cannot queue an answer before a
# body has ended) within --timeout + 2 s of its start, the silent one closed as soon; /metrics counts
# the four on /v1/caption as 408 and the one whose headers never ended under "other"
t_begin slow_senders_cut_off_others_served
if have && serve_start --model "$ROOT/models/attncap.safetensors" --timeout 5; then
  port=${URL##*:}; port=${port%/}
  why=$($PY - "$port" "$S/dog.jpg" "$WANT" 2>&1 <<'EOF2'
import http.client, json, socket, sys, threading, time
port, photo, want, timeout = int(sys.argv[1]), open(sys.argv[2], "rb").read(), sys.argv[3], 5
head = b"POST /v1/caption HTTP/1.1\r\nHost: x\r\nContent-Type: image/jpeg\r\nContent-Length: 1000\r\n\r\n"
slow = []

def sender(bytes_per_s):
    s = socket.create_connection(("127.0.0.1", port))
    s.settimeout(1)
    t0, data, k = time.time(), b"", 0
    if bytes_per_s != "headers": s.sendall(head)
    try:
        while time.time() - t0 < timeout + 10:
            if bytes_per_s == "headers": s.sendall(head[k:k + 1]); k += 1
            elif bytes_per_s: s.sendall(b"x")
            try:
                got = s.recv(4096)
                if not got: break
                data += got
            except socket.timeout:
                pass
    except OSError:
        pass
    slow.append((bytes_per_s, data.split(b" ")[1].decode() if data.startswith(b"HTTP/") else "none", time.time() - t0, time.time()))

threads = [threading.Thread(target=sender, args=(b,)) for b in (1, 1, 1, 0, "headers")]
for t in threads: t.start()
time.sleep(0.5)
answered = []
for i in range(3):
    c = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
    t = time.time()
    c.request("POST", "/v1/caption", photo, {"Content-Type": "image/jpeg"})
    r = c.getresponse()
    body = r.read()
    answered.append((r.status, json.loads(body).get("caption"), time.time() - t, time.time()))
for t in threads: t.join()
first_cut = min(s[3] for s in slow)
for st, cap, dt, end in answered:
    if st != 200 or cap != want: print("a photo beside the slow senders: %s %r" % (st, cap)); break
    if end >= first_cut: print("a photo answered %.1f s after the first slow sender was cut off" % (end - first_cut)); break
else:
    for b, st, dt, end in slow:
        if b and st != "408": print("a slow sender got %s after %.1f s, not 408" % (st, dt)); break
        if dt > timeout + 2: print("a %s sender held its connection %.1f s (--timeout %d)" % (b if b == "headers" else "slow" if b else "silent", dt, timeout)); break
EOF2
)
  code /metrics >/dev/null
  if [ -n "$why" ]; then t_fail "$why"
  elif ! grep -q '^attncap_requests_total{path="/v1/caption",status="408"} 4$' "$T/body" ||
       ! grep -q '^attncap_requests_total{path="other",status="408"} 1$' "$T/body"; then
    t_fail "408s counted: $(grep 'status="408"' "$T/body")"
  else t_ok; fi
  serve_stop
fi

t_begin pixels_413
if have && ATTNCAP_MAX_IMAGE_PIXELS=300000 serve_start --model "$ROOT/models/attncap.safetensors"; then
  c=$(code /v1/caption -H 'Content-Type: image/jpeg' --data-binary @"$S/dog.jpg")  # 768x576 > 300000 pixels
  if [ "$c" != 413 ]; then t_fail "too many pixels: $c $(cat "$T/body")"
  else t_ok; fi
  serve_stop
fi

t_begin queue_full_503
if have && serve_start --model "$ROOT/models/attncap.safetensors" --queue 1 --batch 1 --threads 1; then
  for i in $(seq 1 12); do
    curl -s -o /dev/null -D "$T/h$i" -w '%{http_code}\n' -H 'Content-Type: image/jpeg' --data-binary @"$S/dog.jpg" "${URL}v1/caption" >"$T/q$i" &
  done
  wait_for=$(jobs -p | grep -v "^$PID\$"); for j in $wait_for; do wait "$j"; done
  n503=$(cat "$T"/q* | grep -c 503); n200=$(cat "$T"/q* | grep -c 200)
  ra=$(cat "$T"/h* | grep -ci '^retry-after: 1')
  if [ "$n503" -lt 1 ] || [ "$n200" -lt 1 ] || [ $((n503 + n200)) != 12 ]; then t_fail "200: $n200, 503: $n503 of 12"
  elif [ "$ra" != "$n503" ]; then t_fail "Retry-After on $ra of $n503"
  else t_ok; fi
  serve_stop
fi

t_begin other_address_noted
if have; then
  if serve_start --model "$ROOT/models/attncap.safetensors" --host 0.0.0.0; then
    serve_stop
    if ! grep -q 'note: listening on 0.0.0.0, not 127.0.0.1' "$T/serve.err"; then t_fail "no note: $(cat "$T/serve.err")"
    elif [ "$RC" != 0 ]; then t_fail "exit $RC"
    else t_ok; fi
  fi
fi
t_end
