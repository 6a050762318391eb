"""What bench/soak.py measures and prints: the agent's /proc figures, the
Prometheus text it scrapes, percentiles, and the report."""
import json
import os
import re
import time


def proc_status(pid):
    """VmRSS (KiB), open files, threads of pid; None when it is gone."""
    try:
        with open(f"/proc/{pid}/status") as f:
            rss = int(re.search(r"^VmRSS:\s+(\d+)", f.read(), re.M)[1])
        return {"rss_kib": rss, "fds": len(os.listdir(f"/proc/{pid}/fd")),
                "threads": len(os.listdir(f"/proc/{pid}/task"))}
    except (OSError, TypeError):
        return None


def settled_status(pid, timeout=10):
    """proc_status once the open files stayed the same for a second (the
    start-up's threads and sockets wound down), or after `timeout`."""
    deadline = time.monotonic() + timeout
    last, same_since = proc_status(pid), time.monotonic()
    while time.monotonic() < deadline:
        time.sleep(0.1)
        now = proc_status(pid)
        if now is None or last is None or now["fds"] != last["fds"]:
            same_since = time.monotonic()
        elif time.monotonic() - same_since >= 1:
            return now
        last = now
    return last


def fd_targets(pid):
    out = {}
    for fd in os.listdir(f"/proc/{pid}/fd"):
        try:
            target = os.readlink(f"/proc/{pid}/fd/{fd}")
        except OSError:
            continue
        kind = re.sub(r"\d+", "N", target)
        out[kind] = out.get(kind, 0) + 1
    return out


def metric_sum(text, name, **labels):
    total = None
    for m in re.finditer(rf"^{name}(?:\{{([^}}]*)\}})? (\S+)$", text or "", re.M):
        have = dict(re.findall(r'(\w+)="([^"]*)"', m[1] or ""))
        if all(have.get(k) == v for k, v in labels.items()):
            total = (total or 0) + float(m[2])
    return total


def metric_by(text, name, label):
    out = {}
    for m in re.finditer(rf"^{name}\{{([^}}]*)\}} (\S+)$", text or "", re.M):
        have = dict(re.findall(r'(\w+)="([^"]*)"', m[1]))
        key = have.get(label, "")
        out[key] = out.get(key, 0) + float(m[2])
    return out


def percentile(values, q):
    if not values:
        return None
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def report(f, passed):
    r, o, t = f.get("rss_kib", {}), f.get("open_files", {}), f.get("threads", {})
    print(f"zcal soak: {f.get('seconds', 0):.0f} s, recalibrating every "
          f"{f.get('calibrate_every', 0):.0f} s, warm-up {f.get('warmup_seconds', 0):.0f} s")
    if "load_1min" in f:
        print(f"  host              {f['cpus']} CPUs, 1-min load average min "
              f"{f['load_1min']['min']:.2f}, mean {f['load_1min']['mean']:.2f}, "
              f"max {f['load_1min']['max']:.2f} (sampled each minute)")
    if r:
        print(f"  resident memory   start {r['start']} KiB, after warm-up {r['warm']} KiB, "
              f"end {r['end']} KiB, max {r['max']} KiB")
        print(f"  ... between calibrations: {r['idle_at_warmup']} KiB at most in the warm-up, "
              f"{r['idle_at_end']} KiB at the end; growth after warm-up "
              f"{r['growth_after_warmup']} KiB")
        print(f"  open files        start {o['start']}, end {o['end']}, max {o['max']}")
        print(f"  threads           start {t['start']}, end {t['end']}, max {t['max']}")
        print(f"  calibrations      {json.dumps(f['calibrations'])}")
        print(f"  peer probes       {json.dumps(f['peer_probes'])} "
              f"(peers started {f['peers_started']}, stopped {f['peers_stopped']})")
        print(f"  reloads           {f['sighups']} SIGHUPs: {f['reloads_success']:.0f} success, "
              f"{f['reloads_failure']:.0f} failure, {f['reloads_late']} counted late")
        print(f"  readers           {f['lookups']} lookups, {f['wrong_reads']} wrong reads, "
              f"{f['reader_errors']} errors, {f.get('busy', 0)} busy; {f['batches']} batches judged "
              f"({f['spanning']} across a write), {f['skipped']} across more than one")
        for path, s in f["scrapes"].items():
            print(f"  scrape {path:<19} {s['count']} ok, {s['errors']} failed, "
                  f"p50 {s['p50_ms']} ms, p99 {s['p99_ms']} ms"
                  + (f" (last error: {s['last_error']})" if s["errors"] else ""))
        print(f"  crashes           {f['crashes']}" + (f" ({f['crash']})" if f["crash"] else ""))
        if o["start_by_kind"] != o["end_by_kind"]:
            print(f"  open files by kind: start {o['start_by_kind']}, end {o['end_by_kind']}")
        for name, ok in f["checks"].items():
            print(f"  {'PASS' if ok else 'FAIL'}  {name}")
    print("PASS" if passed else "FAIL")
