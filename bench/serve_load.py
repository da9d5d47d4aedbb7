#!/usr/bin/python3
"""Load on `attncap serve` over loopback, bounded in requests and time (issue 34, section 3).

C clients (threads, one keep-alive connection each) send N requests over the given photos; a fraction
are hostile, in turn: a truncated JPEG (400), a 50 MB body announced by Content-Length (413), a wrong
content type (415), a sender of one byte a second (answered 408 and cut off after the server's
--timeout), a client that disconnects mid-body. Checked: the server never dies, every good answer's caption equals the one
`attncap caption --json` gives for that photo (run first, over the same photos, which also times the
CLI), every hostile request gets its status, and the server does not grow (issue 35, section 2): every
--sample-every requests (500) its RSS, open descriptors and threads are read from /proc; the RSS at every
later sample (and at the end) is within --rss-growth (5 %) of the first sample's, the threads are the
same at every sample, and the descriptors at no later sample more than at the first (fewer once
clients that are done close their connections; with --hostile, whose connections come and go, only
the end's is compared). Reports p50/p99 latency and
throughput beside the CLI's, timed before and after the server's run (serve_vs_cli: the server's
photos/s over the CLI's over both runs), and the CPU seconds each spends per photo (all its threads:
user + system; on a shared machine this moves less with the load than wall-clock time does; the
server's include receiving and answering HTTP, the client's own work excluded). Exit 0 when every
check passes.

With --pairs K (and no load run): K pairs of runs over P photos at a time (--pair-photos, taken in
turn from the list), the CLI's (`caption --verbose`: its photos/s without loading the model) and the
server's (--clients clients sending those P photos once each, the server started once), the order
within a pair alternating; each pair's ratio (server photos/s over the CLI's) is printed, then the
median, best and worst, with the CPU the server and this client (its load generator, on the same
machine) spend per photo. Short pairs follow a shared machine's load more closely than one long run.

usage: serve_load.py --bin build/attncap [--model M] [--requests 5000] [--clients 32] [--hostile 0.02]
                     PHOTO...
       serve_load.py --bin build/attncap --pairs 10 [--pair-photos 100] [--clients 8] PHOTO...
"""
import argparse, http.client, json, os, random, re, resource, socket, statistics, subprocess, sys, threading, time

HOSTILE = ["truncated", "huge", "wrong_type", "slow", "disconnect"]
WANT = {"truncated": {400}, "huge": {413}, "wrong_type": {415}, "slow": {408}, "disconnect": {None}}


def rss_kb(pid):
    with open("/proc/%d/status" % pid) as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    return 0


def cpu_s(pid):
    """User + system CPU seconds of process pid so far (all its threads)."""
    with open("/proc/%d/stat" % pid) as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def child_cpu_s():
    r = resource.getrusage(resource.RUSAGE_CHILDREN)
    return r.ru_utime + r.ru_stime


def fds(pid):
    return len(os.listdir("/proc/%d/fd" % pid))


def threads_of(pid):
    with open("/proc/%d/status" % pid) as f:
        for line in f:
            if line.startswith("Threads:"):
                return int(line.split()[1])
    return 0


def sample(pid, done):
    """One sample of the server's footprint after `done` requests."""
    return {"requests": done, "rss_kb": rss_kb(pid), "fds": fds(pid), "threads": threads_of(pid)}


def raw(port, head, body=b"", read=True, timeout=120):
    """Sends head (+ body) on a new socket; returns the status code answered, or None."""
    s = socket.create_connection(("127.0.0.1", port), timeout=timeout)
    try:
        s.sendall(head + body)
        if not read:
            return None
        data = s.recv(4096)
        m = re.match(rb"HTTP/1\.[01] (\d+)", data)
        return int(m.group(1)) if m else None
    except OSError:
        return None
    finally:
        s.close()


def hostile(kind, port, photo_bytes, server_timeout):
    if kind == "truncated":
        body = photo_bytes[: len(photo_bytes) // 3]
        return raw(port, b"POST /v1/caption HTTP/1.1\r\nHost: l\r\nContent-Type: image/jpeg\r\nContent-Length: %d\r\n"
                   b"Connection: close\r\n\r\n" % len(body), body)
    if kind == "huge":  # the answer comes before the body is sent (Expect: 100-continue)
        return raw(port, b"POST /v1/caption HTTP/1.1\r\nHost: l\r\nContent-Type: image/jpeg\r\nContent-Length: 50000000\r\n"
                   b"Expect: 100-continue\r\n\r\n")
    if kind == "wrong_type":
        return raw(port, b"POST /v1/caption HTTP/1.1\r\nHost: l\r\nContent-Type: text/plain\r\nContent-Length: %d\r\n"
                   b"Connection: close\r\n\r\n" % len(photo_bytes), photo_bytes)
    if kind == "slow":  # one byte a second: answered 408 and cut off soon after the server's --timeout
        s = socket.create_connection(("127.0.0.1", port), timeout=1)
        t0, data = time.time(), b""
        try:
            s.sendall(b"POST /v1/caption HTTP/1.1\r\nHost: l\r\nContent-Type: image/jpeg\r\nContent-Length: 1000\r\n\r\n")
            while time.time() - t0 < server_timeout + 10:
                s.sendall(b"x")
                try:
                    got = s.recv(4096)
                    if not got:
                        break
                    data += got
                except socket.timeout:
                    pass
        except OSError:
            pass
        finally:
            s.close()
        if time.time() - t0 >= server_timeout + 5:
            return "held"
        m = re.match(rb"HTTP/1\.[01] (\d+)", data)
        return int(m.group(1)) if m else "closed without an answer"
    if kind == "disconnect":
        half = photo_bytes[: len(photo_bytes) // 2]
        return raw(port, b"POST /v1/caption HTTP/1.1\r\nHost: l\r\nContent-Type: image/jpeg\r\nContent-Length: %d\r\n\r\n"
                   % len(photo_bytes), half, read=False)


def serve_photos(port, sel, data, clients, want):
    """Sends each photo of sel once, over `clients` keep-alive connections; returns (seconds, bad answers)."""
    lock, nxt, bad = threading.Lock(), [0], []

    def client():
        conn = http.client.HTTPConnection("127.0.0.1", port, timeout=300)
        while True:
            with lock:
                i = nxt[0]
                nxt[0] += 1
            if i >= len(sel):
                break
            try:
                conn.request("POST", "/v1/caption", data[sel[i]], {"Content-Type": "image/jpeg"})
                r = conn.getresponse()
                body = r.read()
                ok = r.status == 200 and json.loads(body)["caption"] == want[sel[i]]
            except (OSError, http.client.HTTPException, ValueError, KeyError):
                ok = False
            if not ok:
                with lock:
                    bad.append(sel[i])
        conn.close()

    t0 = time.time()
    threads = [threading.Thread(target=client) for _ in range(clients)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return time.time() - t0, bad


def cli_photos(a, model, sel, want):
    """The CLI over sel: its photos/s after loading the model (its --verbose report); fills want."""
    out = subprocess.run([a.bin, "caption", "--json", "--quiet", "--verbose", *model, *sel], capture_output=True, text=True)
    m = re.search(r"(\d+) photos \(\d+ ok\) in ([\d.]+) s", out.stderr)
    if out.returncode != 0 or not m:
        sys.exit("serve_load: attncap caption failed: " + out.stderr.strip()[:300])
    for line in out.stdout.splitlines():
        j = json.loads(line)
        want[j["image"]] = j["caption"]
    return int(m.group(1)) / float(m.group(2))


def start_server(a, model):
    srv = subprocess.Popen([a.bin, "serve", "--port", "0", "--queue", "256", "--timeout", str(a.timeout), *model,
                            *a.serve_args.split()],
                           stderr=subprocess.PIPE, text=True)
    for _ in range(600):
        line = srv.stderr.readline()
        m = re.search(r"http://127\.0\.0\.1:(\d+)/", line)
        if m:
            threading.Thread(target=lambda: [None for _ in srv.stderr], daemon=True).start()  # drain its stderr
            return srv, int(m.group(1))
        if not line and srv.poll() is not None:
            break
    srv.kill()
    sys.exit("serve_load: the server did not start")


def pairs(a, model, photos, data):
    want, ratios, bad = {}, [], []
    srv, port = start_server(a, model)
    try:
        for k in range(a.pairs):
            start = (k * a.pair_photos) % len(photos)
            sel = (photos[start:] + photos[:start])[: a.pair_photos]
            res = {}
            for what in (("cli", "serve") if k % 2 == 0 else ("serve", "cli")):
                if what == "cli":
                    res["cli"] = cli_photos(a, model, sel, want)
                else:
                    if not all(p in want for p in sel):  # the reference captions first
                        cli_photos(a, model, sel, want)
                    r0, s0 = resource.getrusage(resource.RUSAGE_SELF), cpu_s(srv.pid)
                    wall, b = serve_photos(port, sel, data, a.clients, want)
                    r1 = resource.getrusage(resource.RUSAGE_SELF)
                    res["serve"] = len(sel) / wall
                    res["server_cpu_ms"] = 1000 * (cpu_s(srv.pid) - s0) / len(sel)
                    res["client_cpu_ms"] = 1000 * (r1.ru_utime + r1.ru_stime - r0.ru_utime - r0.ru_stime) / len(sel)
                    bad += b
            ratios.append(res["serve"] / res["cli"])
            print(json.dumps({"pair": k, "photos": len(sel), "serve_photos_per_s": round(res["serve"], 2),
                              "cli_photos_per_s": round(res["cli"], 2), "ratio": round(ratios[-1], 3),
                              "cpu_ms_per_photo": {"server": round(res["server_cpu_ms"], 1),
                                                   "client": round(res["client_cpu_ms"], 1)},
                              "load": round(os.getloadavg()[0], 1)}), flush=True)
    finally:
        srv.terminate()
        rc = srv.wait(timeout=60)
    print(json.dumps({"pairs": len(ratios), "clients": a.clients, "median": round(statistics.median(ratios), 3),
                      "best": round(max(ratios), 3), "worst": round(min(ratios), 3), "bad": len(bad), "exit": rc}))
    for p in bad[:5]:
        print("bad answer:", p, file=sys.stderr)
    sys.exit(0 if not bad and rc == 0 else 1)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--bin", required=True)
    ap.add_argument("--model")
    ap.add_argument("--requests", type=int, default=5000)
    ap.add_argument("--clients", type=int, default=32)
    ap.add_argument("--hostile", type=float, default=0.02)
    ap.add_argument("--timeout", type=int, default=3, help="the server's --timeout")
    ap.add_argument("--rss-growth", type=float, default=0.05, help="the RSS's largest deviation allowed from the first sample's")
    ap.add_argument("--sample-every", type=int, default=500, help="read the server's RSS, fds and threads every N requests")
    ap.add_argument("--max-seconds", type=float, default=3600)
    ap.add_argument("--json", help="write the numbers here")
    ap.add_argument("--serve-args", default="", help="more flags for attncap serve (\"--workers 2\")")
    ap.add_argument("--pairs", type=int, default=0, help="pairs of CLI and server runs instead of the load run")
    ap.add_argument("--pair-photos", type=int, default=100)
    ap.add_argument("photos", nargs="+")
    a = ap.parse_args()
    model = ["--model", a.model] if a.model else []
    photos = sorted(a.photos)
    data = {p: open(p, "rb").read() for p in photos}
    if a.pairs:
        return pairs(a, model, photos, data)

    # the CLI over the same photos: the reference captions and its throughput
    t0, c0 = time.time(), child_cpu_s()
    out = subprocess.run([a.bin, "caption", "--json", "--quiet", *model, *photos], capture_output=True, text=True)
    cli_s, cli_cpu = time.time() - t0, child_cpu_s() - c0
    if out.returncode != 0:
        sys.exit("serve_load: attncap caption failed: " + out.stderr.strip()[:300])
    want = {}
    for line in out.stdout.splitlines():
        j = json.loads(line)
        want[j["image"]] = j["caption"]

    srv = subprocess.Popen([a.bin, "serve", "--port", "0", "--queue", "256", "--timeout", str(a.timeout), *model,
                            *a.serve_args.split()],
                           stderr=subprocess.PIPE, text=True)
    port = None
    for _ in range(600):
        line = srv.stderr.readline()
        m = re.search(r"http://127\.0\.0\.1:(\d+)/", line)
        if m:
            port = int(m.group(1))
            break
        if not line and srv.poll() is not None:
            break
    if not port:
        srv.kill()
        sys.exit("serve_load: the server did not start")
    threading.Thread(target=lambda: [None for _ in srv.stderr], daemon=True).start()  # drain its stderr

    rng = random.Random(34)
    n_hostile = int(round(a.requests * a.hostile))
    plan = [("good", photos[i % len(photos)]) for i in range(a.requests)]
    for k, i in enumerate(rng.sample(range(a.requests), n_hostile)):
        plan[i] = (HOSTILE[k % len(HOSTILE)], photos[i % len(photos)])
    lock = threading.Lock()
    nxt = [0]
    done = [0]
    lat, bad, hostile_bad = [], [], []
    every = max(1, min(a.sample_every, a.requests // 2))  # at least two samples in a short run
    samples = []  # the server's footprint every `every` requests, then at the end
    deadline = time.time() + a.max_seconds

    def client():
        conn = http.client.HTTPConnection("127.0.0.1", port, timeout=120)
        while True:
            with lock:
                i = nxt[0]
                nxt[0] += 1
            if i >= len(plan) or time.time() > deadline:
                break
            kind, p = plan[i]
            if kind == "good":
                t = time.time()
                for attempt in range(2):
                    try:
                        conn.request("POST", "/v1/caption", data[p], {"Content-Type": "image/jpeg"})
                        r = conn.getresponse()
                        body = r.read()
                        break
                    except (OSError, http.client.HTTPException) as e:
                        conn.close()
                        conn = http.client.HTTPConnection("127.0.0.1", port, timeout=120)
                        r, body = None, str(e).encode()
                dt = time.time() - t
                with lock:
                    if r is None or r.status != 200:
                        bad.append((p, r.status if r else None, body[:200]))
                    elif json.loads(body)["caption"] != want[p]:
                        bad.append((p, 200, "caption %r != cli %r" % (json.loads(body)["caption"], want[p])))
                    else:
                        lat.append(dt)
            else:
                got = hostile(kind, port, data[p], a.timeout)
                if got not in WANT[kind]:
                    with lock:
                        hostile_bad.append((kind, got))
            with lock:
                done[0] += 1
                if done[0] % every == 0:
                    samples.append(sample(srv.pid, done[0]))

    t0, srv_cpu0 = time.time(), cpu_s(srv.pid)
    threads = [threading.Thread(target=client) for _ in range(a.clients)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    wall = time.time() - t0
    alive = srv.poll() is None
    srv_cpu = cpu_s(srv.pid) - srv_cpu0 if alive else float("nan")
    batch_mean = float("nan")
    if alive:  # the mean batch size, from the server's own counters
        try:
            c = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
            c.request("GET", "/metrics")
            m = c.getresponse().read().decode()
            tot = float(re.search(r"^attncap_batch_size_sum (\S+)$", m, re.M).group(1))
            cnt = float(re.search(r"^attncap_batch_size_count (\S+)$", m, re.M).group(1))
            batch_mean = tot / cnt if cnt else float("nan")
        except (OSError, AttributeError, http.client.HTTPException):
            pass
    last = sample(srv.pid, done[0]) if alive else {"requests": done[0], "rss_kb": 0, "fds": 0, "threads": 0}
    if alive:
        srv.terminate()
    try:
        rc = srv.wait(timeout=60)
    except subprocess.TimeoutExpired:
        srv.kill()
        rc = "hung"

    # the CLI again, after: the load of a shared machine drifts, so the server is set beside both
    t1, c1 = time.time(), child_cpu_s()
    subprocess.run([a.bin, "caption", "--json", "--quiet", *model, *photos], capture_output=True, text=True)
    cli_after_s, cli_cpu = time.time() - t1, cli_cpu + child_cpu_s() - c1

    lat.sort()
    q = lambda f: lat[min(len(lat) - 1, int(f * len(lat)))] * 1000 if lat else float("nan")
    first = samples[0] if samples else last
    dev = lambda x: (x["rss_kb"] - first["rss_kb"]) / max(1, first["rss_kb"])
    growth = dev(last)
    max_dev = max((dev(x) for x in samples[1:] + [last]), key=abs, default=0.0)
    threads_ok = all(x["threads"] == first["threads"] for x in samples[1:] + [last])
    # no more descriptors than at the first sample (fewer near the end: clients done close their
    # connections); with hostile requests, whose connections come and go, only at the end
    fds_ok = last["fds"] <= first["fds"] and (n_hostile > 0 or all(x["fds"] <= first["fds"] for x in samples[1:]))
    res = {
        "requests": done[0], "good_ok": len(lat), "good_bad": len(bad), "hostile": n_hostile, "hostile_bad": len(hostile_bad),
        "clients": a.clients, "photos": len(photos), "wall_s": round(wall, 2),
        "serve_photos_per_s": round(len(lat) / wall, 2) if wall else 0,
        "cli_photos_per_s": round(len(photos) / cli_s, 2), "cli_after_photos_per_s": round(len(photos) / cli_after_s, 2),
        "serve_vs_cli": round((len(lat) / wall) / (2 * len(photos) / (cli_s + cli_after_s)), 3) if wall else 0, "cpu_ms_per_photo": {"serve": round(1000 * srv_cpu / max(1, done[0]), 1),
                             "cli": round(1000 * cli_cpu / (2 * len(photos)), 1)},
        "p50_ms": round(q(0.50), 1), "p99_ms": round(q(0.99), 1), "mean_batch": round(batch_mean, 2),
        "sample_every": every, "rss_first_kb": first["rss_kb"], "rss_last_kb": last["rss_kb"], "rss_growth": round(growth, 4),
        "rss_max_deviation": round(max_dev, 4),
        "rss_min_max_kb": [min(x["rss_kb"] for x in samples + [last]), max(x["rss_kb"] for x in samples + [last])],
        "fds_first": first["fds"], "fds_min_max": [min(x["fds"] for x in samples), max(x["fds"] for x in samples)] if samples else None,
        "fds_last": last["fds"], "fds_ok": fds_ok,
        "threads_min_max": [min(x["threads"] for x in samples + [last]), max(x["threads"] for x in samples + [last])],
        "threads_ok": threads_ok, "samples": [[x["requests"], x["rss_kb"], x["fds"], x["threads"]] for x in samples],
        "end": [last["requests"], last["rss_kb"], last["fds"], last["threads"]],
        "exit": rc, "load": os.getloadavg()[0],
    }
    print(json.dumps(res))
    for b in bad[:5]:
        print("bad answer:", b, file=sys.stderr)
    for b in hostile_bad[:5]:
        print("hostile not refused as expected:", b, file=sys.stderr)
    if a.json:
        with open(a.json, "w") as f:
            json.dump(res, f)
    ok = (alive and rc == 0 and not bad and not hostile_bad and abs(max_dev) < a.rss_growth and threads_ok and fds_ok
          and len(samples) >= 1 and done[0] == a.requests)
    sys.exit(0 if ok else 1)


if __name__ == "__main__":
    main()
