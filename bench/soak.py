#!/usr/bin/env python3
"""Soak: the real `zcal agent` under everything at once, for a long time.

For --seconds (default 1800) the agent runs in a network namespace of its
own with the loopback and discard paths and a peers: section that names a
DNS name, calibrating every --calibrate-every (default 60 s), while:
  - /metrics, / and /api/v1/thresholds are each scraped --scrape-hz times a
    second (default 10), every latency recorded;
  - every --sighup-every (5 s) the configuration file is rewritten,
    alternating two configurations A and B, and SIGHUP sent; the reload
    counter must catch up before the next one;
  - 4 reader processes (bench/soak_reader.c) call zcal_lookup and
    zcal_should_zerocopy in paced batches and check every answer against
    the table they copied from the segment themselves (see there);
  - peers join and leave every --peer-every (15 s): `zcal sink` or `zcal
    agent` processes in peer namespaces on one bridge (198.18.9.0/24),
    started and killed (SIGTERM and SIGKILL in turn), and dnsmasq's answer
    for the peers' name rewritten to the peers that run.
Everything lives in a temporary directory and namespaces named zsk<PID>-*
(segment, state file, keys, logs), removed at the end, also on failure or
Ctrl-C. Traffic is bounded: budget.bytes_per_second and 3 s of probing per
calibration.

Printed (and written to --json FILE): the agent's resident memory (VmRSS)
and open files at start, after the warm-up and at the end, with their
maxima; threads; calibrations done and failed; peer probes by outcome;
reloads; lookups and wrong reads; scrape latency p50/p99 per endpoint;
crashes. PASS needs:
  - RSS growth after the warm-up (the first 5 minutes, or the first fifth
    of a shorter run) <= --rss-growth-kib (1024): the largest RSS sampled
    between calibrations after the warm-up minus the largest before;
  - no more open files at the end than at start (both with the load
    stopped);
  - 0 wrong reads and 0 reader errors; 0 failed scrapes;
  - busy reads (zcal_lookup's -EAGAIN: the writer held the seqlock past
    the retry bound, as a writer preempted mid-publish does on a loaded
    host; the caller's fallback answers) at most 1 in 100,000 lookups;
  - every SIGHUP counted as a successful reload;
  - 0 crashes: the agent alive to the end and exit 0 on SIGTERM;
  - at least one successful calibration.
Exit status 0 PASS, 1 FAIL, 2 the soak could not be set up, 77 the host
lacks root, iproute2 or dnsmasq (meson counts it as skipped).

Needs root (namespaces), iproute2 and dnsmasq (dnsmasq-base).
"""
import argparse
import json
import os
import re
import signal
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request

sys.dont_write_bytecode = True  # no __pycache__ in the source tree
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import soak_net  # noqa: E402
from soak_figures import (fd_targets, metric_by, metric_sum, percentile,  # noqa: E402
                          proc_status, report, settled_status)
from soak_peers import DNSMASQ, PEER_NAME, SINK_PORT, setup  # noqa: E402

METRICS_PORT = 9464  # inside the agent's own namespace: always free
ENDPOINTS = ("/metrics", "/", "/api/v1/thresholds")
BUSY_SHARE_LIMIT = 100_000  # see the check "busy reads"


def find_default(candidates):
    for path in candidates:
        if os.access(path, os.X_OK):
            return path
    return candidates[0]


def parse_args():
    p = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter,
        epilog="Targets and figures: docs/operations.md, \"Soak\".")
    p.add_argument("--zcal", default=find_default(["build/agent/cli/zcal"]),
                   help="the zcal binary (default: %(default)s)")
    p.add_argument("--reader", default=find_default(
        ["build/bench/soak_reader", "build/tests/integration/soak_reader"]),
        help="the soak_reader binary built by meson from bench/soak_reader.c "
             "(default: %(default)s)")
    p.add_argument("--seconds", type=float, default=1800, help="run time (default: 1800)")
    p.add_argument("--calibrate-every", type=float, default=60,
                   help="schedule.interval of the agent, seconds (default: 60)")
    p.add_argument("--scrape-hz", type=float, default=10,
                   help="scrapes per second of each endpoint (default: 10)")
    p.add_argument("--sighup-every", type=float, default=5,
                   help="seconds between reloads, configurations A and B in turn (default: 5)")
    p.add_argument("--peer-every", type=float, default=15,
                   help="seconds between a peer joining or leaving (default: 15)")
    p.add_argument("--peers", type=int, default=3, help="peer namespaces (default: 3)")
    p.add_argument("--readers", type=int, default=4, help="reader processes (default: 4)")
    p.add_argument("--rss-growth-kib", type=float, default=1024,
                   help="largest RSS growth after the warm-up that passes, KiB (default: 1024)")
    p.add_argument("--startup-timeout", type=float, default=120,
                   help="seconds the agent may take to start and finish its first "
                        "calibration (default: 120)")
    p.add_argument("--json", metavar="FILE", help="also write the figures to FILE as JSON")
    return p.parse_args()


def agent_config(tmp, segment, keys, variant):
    """Configurations A and B differ only in keys that a reload applies
    without a new segment, a new listener or a rescheduled calibration."""
    b = variant == "B"
    return f"""\
paths:
  - {{name: loopback, type: loopback}}
  - {{name: discard, type: discard}}
methods: [copy, msg_zerocopy, uring_send, uring_send_zc, uring_send_zc_fixed]
sizes: {{min: 4KiB, max: 64KiB}}
decision: {{margin: {0.05 if b else 0.03}}}
schedule:
  at_startup: true
  interval: {ARGS.calibrate_every}s
  jitter: 0
  retry_after_failure: 10s
  fingerprint_poll: 30s
budget:
  seconds_per_calibration: 3
  seconds_per_hour: 3600
  bytes_per_second: 200MB
segment: {{name: {segment}, heartbeat: {"1s" if b else "2s"}}}
metrics: {{listen: "127.0.0.1:{METRICS_PORT}"}}
state: {{path: {tmp}/state.json}}
peers:
  key_file: {keys}
  dns: "{PEER_NAME}:{SINK_PORT}"
  refresh: {"3s" if b else "5s"}
  per_calibration: 2
  keep: 4
log: {{level: info}}
"""


# --- load ---------------------------------------------------------------

class Scraper(threading.Thread):
    """GETs one endpoint of the agent at a fixed rate from inside its
    namespace; keeps every latency and the last body of /metrics."""

    def __init__(self, netns, path, hz, stop):
        super().__init__(daemon=True)
        self.netns, self.path, self.period, self.stop = netns, path, 1.0 / hz, stop
        self.latencies, self.errors, self.last_error, self.body = [], 0, "", ""

    def run(self):
        soak_net.enter_netns(self.netns)
        url = f"http://127.0.0.1:{METRICS_PORT}{self.path}"
        due = time.monotonic()
        while not self.stop.is_set():
            start = time.monotonic()
            try:
                with urllib.request.urlopen(url, timeout=10) as r:
                    body = r.read()
                    if r.status != 200:
                        raise RuntimeError(f"status {r.status}")
                self.latencies.append(time.monotonic() - start)
                if self.path == "/metrics":
                    self.body = body.decode()
            except Exception as e:  # counted and reported, never fatal
                self.errors += 1
                self.last_error = f"{type(e).__name__}: {e}"
            due = max(due + self.period, time.monotonic())
            self.stop.wait(due - time.monotonic())


def fetch_in_netns(netns, path):
    """GET path from the agent, from a thread in its namespace (the main
    thread stays in the host's, where it starts and deletes namespaces)."""
    out = {}

    def get():
        soak_net.enter_netns(netns)
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{METRICS_PORT}{path}",
                                        timeout=10) as r:
                out["body"] = r.read().decode()
        except Exception as e:  # reported as an empty body
            out["error"] = e
    thread = threading.Thread(target=get)
    thread.start()
    thread.join()
    return out.get("body", "")


# --- the run ------------------------------------------------------------

def run(res, tmp, figures):
    agent_ns, keys, peers = setup(res, tmp, ARGS.zcal, ARGS.peers)
    segment = f"/zcal-soak-{os.getpid()}"
    for path in (f"/dev/shm{segment}", f"/dev/shm{segment}.lock"):
        res.remove_later(path)
    config = f"{tmp}/agent.yaml"
    with open(config, "w") as f:
        f.write(agent_config(tmp, segment, keys, "A"))
    log = f"{tmp}/agent.log"
    agent = res.start([ARGS.zcal, "agent", "--config", config], log, netns=agent_ns)
    figures["log"] = log
    if not soak_net.wait_for_file_text(log, "calibration finished", ARGS.startup_timeout):
        raise RuntimeError(f"the agent did not finish its first calibration within "
                           f"{ARGS.startup_timeout:.0f} s")
    start_status = settled_status(agent.pid)
    start_fds = fd_targets(agent.pid)
    stop = threading.Event()
    scrapers = [Scraper(agent_ns, path, ARGS.scrape_hz, stop) for path in ENDPOINTS]
    for s in scrapers:
        s.start()
    readers = [res.start([ARGS.reader, segment], f"{tmp}/reader{i}.log", stdout=subprocess.PIPE)
               for i in range(ARGS.readers)]

    warmup = min(300.0, ARGS.seconds / 5)
    loads = [os.getloadavg()[0]]
    began = time.monotonic()
    samples, warm_status = [], None
    sighups = reloads_late = 0
    next_hup = began + ARGS.sighup_every
    next_peer = began + ARGS.peer_every
    next_sample = began
    hup_pending_since = None
    crash = None
    while time.monotonic() - began < ARGS.seconds:
        now = time.monotonic()
        if agent.poll() is not None:
            crash = f"the agent exited with status {agent.returncode} after {now - began:.0f} s"
            break
        if now >= next_sample:
            if len(samples) % 60 == 0:
                loads.append(os.getloadavg()[0])
            status = proc_status(agent.pid)
            if status:
                samples.append((now - began, status))
                if warm_status is None and now - began >= warmup:
                    warm_status = status
            next_sample += 1
        body = scrapers[0].body
        done = metric_sum(body, "zcal_config_reloads_total", result="success") or 0
        if hup_pending_since is not None and done >= sighups:
            hup_pending_since = None
        if now >= next_hup:
            if hup_pending_since is not None:
                reloads_late += 1  # not counted within a whole period
            with open(config + ".new", "w") as f:
                f.write(agent_config(tmp, segment, keys, "B" if sighups % 2 == 0 else "A"))
            os.replace(config + ".new", config)
            agent.send_signal(signal.SIGHUP)
            sighups += 1
            hup_pending_since = now
            next_hup += ARGS.sighup_every
        if now >= next_peer:
            peers.churn()
            next_peer += ARGS.peer_every
        time.sleep(0.1)
    ran = time.monotonic() - began

    # The load stops; what is left open now was leaked.
    stop.set()
    for s in scrapers:
        s.join()
    reader_results = []
    for i, r in enumerate(readers):
        r.send_signal(signal.SIGTERM)
        out, _ = r.communicate(timeout=30)
        res.stop(r)
        reader_results.append(dict((k, int(v)) for k, v in
                                   re.findall(r"(\w+)=(\d+)", out.decode())))
        # A reader names each error and wrong read it counts (the first
        # ten) on its stderr: shown here, or a failure says only a count.
        with open(f"{tmp}/reader{i}.log", errors="replace") as log:
            said = log.read().strip()
        if said:
            print(f"soak: reader {i} said:\n{said}", file=sys.stderr)
    for i in list(peers.running):
        peers.stop(i)
    body = ""
    end_status = end_fds = None
    if crash is None:
        # The last SIGHUP may still be in progress: wait (bounded) for it.
        deadline = time.monotonic() + 15
        while True:
            body = fetch_in_netns(agent_ns, "/metrics")
            counted = sum(metric_by(body, "zcal_config_reloads_total", "result").values())
            if counted >= sighups or time.monotonic() > deadline:
                break
            time.sleep(0.2)
        # Wait for a running calibration and the scrapes' connections to end
        # (a condition, bounded): no more open files than at start, or the
        # last count after 30 s.
        deadline = time.monotonic() + 30
        while True:
            end_status = proc_status(agent.pid)
            if end_status is None or end_status["fds"] <= start_status["fds"] or \
                    time.monotonic() > deadline:
                break
            time.sleep(0.2)
        end_fds = fd_targets(agent.pid)
        exit_status = res.stop(agent, signal.SIGTERM, timeout=30)
        if exit_status != 0:
            crash = f"the agent exited {exit_status} on SIGTERM"

    # Growth is judged between calibrations (the agent's idle threads only):
    # a calibration's peak depends on which probes it ran, a leak shows in
    # what stays after it.
    rss = [s["rss_kib"] for _, s in samples]
    idle = [(t, s["rss_kib"]) for t, s in samples if s["threads"] <= start_status["threads"]]
    before = [r for t, r in idle if t < warmup] or [start_status["rss_kib"]]
    after = [r for t, r in idle if t >= warmup]
    growth = (max(after) - max(before)) if after else 0
    wrong = sum(r.get("wrong", 0) for r in reader_results)
    reader_errors = sum(r.get("errors", 0) for r in reader_results)
    if len(reader_results) != ARGS.readers or any("lookups" not in r for r in reader_results):
        reader_errors += 1
    reloads_ok = metric_sum(body, "zcal_config_reloads_total", result="success") or 0
    reloads_failed = metric_sum(body, "zcal_config_reloads_total", result="failure") or 0
    figures.update({
        "seconds": round(ran, 1), "warmup_seconds": warmup, "cpus": os.cpu_count(),
        "load_1min": {"min": min(loads), "mean": round(sum(loads) / len(loads), 2),
                      "max": max(loads)},
        "calibrate_every": ARGS.calibrate_every,
        "rss_kib": {"start": start_status["rss_kib"],
                    "warm": (warm_status or {}).get("rss_kib"),
                    "end": (end_status or {}).get("rss_kib"),
                    "max": max(rss, default=None),
                    "idle_at_warmup": max(before), "idle_at_end": after[-1] if after else None,
                    "growth_after_warmup": growth},
        "open_files": {"start": start_status["fds"], "end": (end_status or {}).get("fds"),
                       "max": max((s["fds"] for _, s in samples), default=None),
                       "start_by_kind": start_fds, "end_by_kind": end_fds},
        "threads": {"start": start_status["threads"],
                    "end": (end_status or {}).get("threads"),
                    "max": max((s["threads"] for _, s in samples), default=None)},
        "series": [{"t": round(t), **s} for t, s in samples[::10]],
        "calibrations": metric_by(body, "zcal_calibrations_total", "result"),
        "peer_probes": metric_by(body, "zcal_peer_probes_total", "outcome"),
        "peers_started": peers.started, "peers_stopped": peers.killed,
        "sighups": sighups, "reloads_success": reloads_ok, "reloads_failure": reloads_failed,
        "reloads_late": reloads_late,
        "readers": reader_results,
        "lookups": sum(r.get("lookups", 0) for r in reader_results),
        **{key: sum(r.get(key, 0) for r in reader_results)
           for key in ("batches", "spanning", "skipped", "busy")},
        "wrong_reads": wrong, "reader_errors": reader_errors,
        "scrapes": {s.path: {"count": len(s.latencies), "errors": s.errors,
                             "last_error": s.last_error,
                             "p50_ms": round(1e3 * (percentile(s.latencies, 0.5) or 0), 2),
                             "p99_ms": round(1e3 * (percentile(s.latencies, 0.99) or 0), 2)}
                    for s in scrapers},
        "crashes": 0 if crash is None else 1, "crash": crash,
    })
    checks = {
        f"RSS growth after the first {warmup:.0f} s <= {ARGS.rss_growth_kib:.0f} KiB":
            growth <= ARGS.rss_growth_kib,
        "open files at the end no more than at start":
            end_status is not None and end_status["fds"] <= start_status["fds"],
        "0 wrong reads, 0 reader errors": wrong == 0 and reader_errors == 0,
        # -EAGAIN is the documented answer while a writer preempted
        # mid-publish holds the seqlock past the retry bound (the caller
        # uses its fallback): it happens under load, a few times a run at
        # most; a reader or writer that keeps it odd shows as many more.
        f"busy reads (-EAGAIN) at most 1 in {BUSY_SHARE_LIMIT:,} lookups":
            figures["busy"] * BUSY_SHARE_LIMIT <= max(1, figures["lookups"]),
        "0 failed scrapes": all(s.errors == 0 for s in scrapers),
        "every SIGHUP a successful reload": reloads_ok == sighups and reloads_failed == 0,
        "0 crashes": crash is None,
        "calibrations succeeded": figures["calibrations"].get("success", 0) >= 1,
    }
    figures["checks"] = checks
    return all(checks.values())


def main():
    global ARGS
    ARGS = parse_args()
    # What the host lacks is a skip (77, meson's code), not a failure.
    if os.geteuid() != 0:
        print("soak: needs root (network namespaces); skipped", file=sys.stderr)
        return 77
    if not os.access(DNSMASQ, os.X_OK):
        print(f"soak: needs {DNSMASQ} (package dnsmasq-base); skipped", file=sys.stderr)
        return 77
    if not soak_net.ip_binary():
        print("soak: needs iproute2's ip (package iproute2); skipped", file=sys.stderr)
        return 77
    for path in (ARGS.zcal, ARGS.reader):
        if not os.access(path, os.X_OK):
            print(f"soak: {path} is not an executable (see --help)", file=sys.stderr)
            return 2
    # Ctrl-C and SIGTERM both unwind through the clean-up below.
    # (SIGINT too: a shell starts background jobs with it ignored.)
    signal.signal(signal.SIGTERM, signal.default_int_handler)
    signal.signal(signal.SIGINT, signal.default_int_handler)
    soak_net.sweep_leftovers()
    res = soak_net.Resources()
    figures, passed, status = {}, False, 1
    with tempfile.TemporaryDirectory(prefix=f"zcal-soak-{os.getpid()}-") as tmp:
        os.chmod(tmp, 0o755)
        try:
            passed = run(res, tmp, figures)
            status = 0 if passed else 1
        except KeyboardInterrupt:
            print("soak: interrupted; cleaning up", file=sys.stderr)
            status = 1
        except (RuntimeError, OSError, subprocess.SubprocessError) as e:
            print(f"soak: {e}", file=sys.stderr)
            status = 2 if not figures.get("checks") else 1
        finally:
            res.close()
            if status != 0 and os.path.exists(figures.get("log", "")):
                with open(figures["log"], errors="replace") as log:
                    tail = log.readlines()[-40:]
                print("soak: the agent's log ends with:\n" + "".join(tail), file=sys.stderr)
    if figures.get("checks"):
        report(figures, passed)
    if ARGS.json:
        with open(ARGS.json, "w") as f:
            json.dump({**figures, "passed": passed}, f, indent=2, default=str)
    return status


if __name__ == "__main__":
    sys.exit(main())
