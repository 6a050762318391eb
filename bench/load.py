#!/usr/bin/env python3
"""The discard path under controlled load: does a calibration on a busy host
agree with one on an idle host?

For each load condition (none; stress-ng CPU-bound, memory-bound, and both,
pinned to 1 and to 2 cores), interleaved round by round so that the other
users of the machine hit every condition alike, it runs, in the same
minutes under the same stressor:

  - `zcal calibrate --path discard --json` with all five methods: zcal's
    thresholds, and the host's load as zcal measured it (busy, own and
    steal shares of all CPUs, runnable tasks);
  - the reference senders of bench/fidelity_discard.py (a tight sendmsg
    loop with and without MSG_ZEROCOPY, a batched io_uring sender with
    SEND, SEND_ZC and SEND_ZC from registered buffers) at a grid of sizes
    from 2 KiB to 65,507 bytes, inside `unshare -n` with lo up and a
    blackhole root qdisc: their CPU per byte, zerocopy against the copying
    send of its transport, per size.

Then it judges thresholds on the reference senders' curves with the
calibrator's cost (docs/calibrator.md, "The threshold rule": at each size
the choice costs its excess over the cheaper send's CPU per byte; averaged
uniformly in log size over the grid). The regret of a threshold under a
condition is that cost minus the least any single threshold on the grid
achieves there, in percentage points. Printed per condition and method:
zcal's thresholds (median [min, max] over the rounds), the reference's best
grid threshold, the regret under that load of the thresholds zcal measured
on the idle host, and the regret of the ones it measured under that load.
The idle thresholds judged on the idle curves are the noise floor.

usage: bench/load.py [--build DIR] [--zcal ZCAL] [--rounds N]
                     [--seconds S] [--json FILE]
Needs root (unshare -n, tc), stress-ng and iproute2, and the bench
executables built (meson compile -C build bench/fidelity_ref_sendmsg
bench/fidelity_ref_uring agent/cli/zcal); it checks all of that before it
starts, and ends with one line (exit 2) naming what is missing.
"""
import argparse
import json
import math
import os
import shutil
import signal
import statistics
import subprocess
import sys
import time
from pathlib import Path

from fidelity import run_json

UDP_MAX = 65507
# 2 KiB to the largest datagram by half octaves: uniform in log size.
SIZES = [2048, 2896, 4096, 5793, 8192, 11585, 16384, 23170, 32768, 46341, UDP_MAX]
BASELINE = {"msg_zerocopy": "copy", "uring_send_zc": "uring_send",
            "uring_send_zc_fixed": "uring_send"}
METHODS = ["copy", "msg_zerocopy", "uring_send", "uring_send_zc", "uring_send_zc_fixed"]
NAMESPACE = "ip link set lo up && tc qdisc add dev lo root blackhole && exec "
VM_BYTES = "256M"

# name, stress-ng arguments, workers stress-ng forks
CONDITIONS = [
    ("idle", [], 0),
    ("cpu, 1 core", ["--cpu", "1", "--taskset", "0"], 1),
    ("cpu, 2 cores", ["--cpu", "2", "--taskset", "0,1"], 2),
    ("vm, 1 core", ["--vm", "1", "--vm-bytes", VM_BYTES, "--taskset", "0"], 1),
    ("vm, 2 cores", ["--vm", "2", "--vm-bytes", VM_BYTES, "--taskset", "0,1"], 2),
    ("cpu+vm, 1 core", ["--cpu", "1", "--vm", "1", "--vm-bytes", VM_BYTES, "--taskset", "0"], 2),
    ("cpu+vm, 2 cores",
     ["--cpu", "2", "--vm", "2", "--vm-bytes", VM_BYTES, "--taskset", "0,1"], 4),
]


class Stressor:
    """stress-ng in a process group of its own, stopped by that group's id."""

    def __init__(self, args, workers):
        self.process = None
        if not args:
            return
        self.process = subprocess.Popen(["stress-ng", "--timeout", "900", "--quiet"] + args,
                                        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                                        start_new_session=True)
        # Running once its workers are forked (stress-ng's own children and
        # the vm workers' helpers), at most 10 s.
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline and self.workers() < workers:
            time.sleep(0.05)
        if self.workers() < workers:
            self.stop()
            sys.exit(f"stress-ng {' '.join(args)} did not start its {workers} workers")

    def workers(self):
        path = Path(f"/proc/{self.process.pid}/task/{self.process.pid}/children")
        try:
            return len(path.read_text().split())
        except OSError:
            return 0

    def stop(self):
        if self.process is None:
            return
        try:
            os.killpg(self.process.pid, signal.SIGTERM)
        except ProcessLookupError:
            pass
        try:
            self.process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            os.killpg(self.process.pid, signal.SIGKILL)
            self.process.wait()
        self.process = None


def reference(build, method, size, seconds):
    bench = Path(build) / "bench"
    target = "127.0.0.2:9"
    if method in ("copy", "msg_zerocopy"):
        command = [str(bench / "fidelity_ref_sendmsg"), target, str(size), str(seconds), "16",
                   "--udp"]
        if method == "msg_zerocopy":
            command.append("--zerocopy")
    else:
        op = {"uring_send": "send", "uring_send_zc": "send_zc",
              "uring_send_zc_fixed": "send_zc_fixed"}[method]
        command = [str(bench / "fidelity_ref_uring"), target, str(size), str(seconds), "16", "8",
                   "--udp", "--op", op]
    return run_json(["unshare", "-n", "sh", "-c", NAMESPACE + " ".join(command)],
                    timeout=seconds + 30)


def calibrate(zcal):
    done = subprocess.run([zcal, "calibrate", "--path", "discard", "--json"],
                          capture_output=True, text=True, timeout=120, check=False)
    if done.returncode != 0:
        sys.exit(f"zcal calibrate --path discard failed ({done.returncode}): "
                 f"{done.stderr.strip()}")
    doc = json.loads(done.stdout)
    thresholds = {}
    for name in BASELINE:
        r = doc["paths"]["discard"]["methods"].get(name) or {}
        verdict = r.get("verdict")
        if verdict == "threshold":
            thresholds[name] = r["threshold_bytes"]
        elif verdict == "always":
            thresholds[name] = 0
        elif verdict == "never":
            thresholds[name] = math.inf
        else:
            thresholds[name] = None  # inconclusive: nothing to judge
    return {"thresholds": thresholds, "load": doc.get("host_load"),
            "seconds": doc["timings"]["duration_seconds"]}


def measure(args, condition, round_index):
    name, stress, workers = condition
    load_average = os.getloadavg()[0]
    stressor = Stressor(stress, workers)
    try:
        run = {"condition": name, "round": round_index, "load_average": load_average}
        run.update(calibrate(args.zcal))
        run["reference"] = {}
        order = METHODS[round_index % len(METHODS):] + METHODS[:round_index % len(METHODS)]
        for size in SIZES:
            for method in order:
                result = reference(args.build, method, size, args.seconds)
                run["reference"][f"{method}@{size}"] = result["cpu_ns_per_byte"]
    finally:
        stressor.stop()
    return run


def ratios(runs, method):
    """zerocopy / baseline CPU per byte per size: the median over the runs."""
    baseline = BASELINE[method]
    out = []
    for size in SIZES:
        values = [r["reference"][f"{method}@{size}"] / r["reference"][f"{baseline}@{size}"]
                  for r in runs if r["reference"][f"{baseline}@{size}"] > 0]
        out.append(statistics.median(values))
    return out


def regret(curve, threshold):
    """The calibrator's cost of `threshold` on a curve of ratios, over the grid."""
    total = 0.0
    for size, r in zip(SIZES, curve):
        total += max(0.0, r - 1) if size >= threshold else max(0.0, 1 / r - 1)
    return total / len(SIZES)


def best(curve):
    candidates = SIZES + [math.inf]
    return min(candidates, key=lambda t: regret(curve, t))


def excess(curve, threshold):
    return 100 * (regret(curve, threshold) - regret(curve, best(curve)))


def spell(threshold):
    if threshold is None:
        return "inconcl."
    if threshold == 0:
        return "always"
    if threshold == math.inf:
        return "never"
    return str(threshold)


def spread(values, fmt):
    if not values:
        return "-"
    return (f"{fmt.format(statistics.median(values))} "
            f"[{fmt.format(min(values))}, {fmt.format(max(values))}]")


def report(runs):
    by_condition = {name: [r for r in runs if r["condition"] == name] for name, _, _ in CONDITIONS}
    idle = by_condition["idle"]
    print("\nload per condition as zcal measured it (median over the rounds; shares of all CPUs)")
    print("| condition | load average | busy | this calibration | steal | runnable | calibration s |")
    print("|---|---|---|---|---|---|---|")
    for name, mine in by_condition.items():
        loads = [r["load"] for r in mine if r["load"]]

        def med(field):
            return statistics.median(x[field] for x in loads) if loads else float("nan")
        print(f"| {name} | {statistics.median(r['load_average'] for r in mine):.1f} | "
              f"{100 * med('busy_share'):.0f} % | {100 * med('own_share'):.0f} % | "
              f"{100 * med('steal_share'):.0f} % | {med('runnable_mean'):.1f} | "
              f"{statistics.median(r['seconds'] for r in mine):.2f} |")
    print("\nthresholds and regrets (regret: extra CPU per byte of using a threshold over the "
          "best single one on the reference curves of that load, percentage points)")
    print("| condition | method | zcal threshold | reference best | regret of idle thresholds "
          "| regret of its own thresholds |")
    print("|---|---|---|---|---|---|")
    for method in BASELINE:
        for name, mine in by_condition.items():
            curve = ratios(mine, method)
            own = [r["thresholds"][method] for r in mine if r["thresholds"][method] is not None]
            idle_t = [r["thresholds"][method] for r in idle
                      if r["thresholds"][method] is not None]
            finite = [t for t in own if 0 < t < math.inf]
            shown = spread(finite, "{:.0f}") if finite else ""
            others = [spell(t) for t in own if not 0 < t < math.inf]
            if others:
                shown += (" " if shown else "") + "+ " + ", ".join(others)
            print(f"| {name} | {method} | {shown or '-'} | {spell(best(curve))} | "
                  f"{spread([excess(curve, t) for t in idle_t], '{:.2f}')} | "
                  f"{spread([excess(curve, t) for t in own], '{:.2f}')} |")


def fail(message):
    print(f"load.py: {message}", file=sys.stderr)
    sys.exit(2)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--build", default="build", help="meson build directory (default: build)")
    parser.add_argument("--zcal", default=None,
                        help="zcal binary (default: BUILD/agent/cli/zcal)")
    parser.add_argument("--rounds", type=int, default=3, help="rounds (default: 3)")
    parser.add_argument("--seconds", type=float, default=0.2,
                        help="seconds per reference run (default: 0.2)")
    parser.add_argument("--json", help="also write every run here")
    args = parser.parse_args()
    args.zcal = args.zcal or str(Path(args.build) / "agent" / "cli" / "zcal")
    if args.rounds < 1:
        parser.error("--rounds: at least 1")
    if not 0 < args.seconds <= 60:
        parser.error("--seconds: above 0 and at most 60 per reference run")
    # Everything the rounds need, checked before the first one: a missing
    # tool would otherwise end the bench minutes in, with a stressor running.
    needs = [(args.zcal, "--zcal")] + [
        (str(Path(args.build) / "bench" / name), f"--build {args.build}")
        for name in ("fidelity_ref_sendmsg", "fidelity_ref_uring")]
    for path, option in needs:
        if not os.access(path, os.X_OK):
            fail(f"{path}: not an executable ({option}; build it with meson compile -C BUILD)")
    for tool in ("stress-ng", "unshare", "tc", "ip"):
        if shutil.which(tool) is None:
            fail(f"{tool}: not found (scripts/install-deps.sh installs it)")
    if os.geteuid() != 0:
        fail("needs root, for unshare -n and tc in a namespace of its own")
    runs = []
    for i in range(args.rounds):
        # Rotate the order each round, so that drift hits all alike.
        shift = (i * 3) % len(CONDITIONS)
        for condition in CONDITIONS[shift:] + CONDITIONS[:shift]:
            run = measure(args, condition, i)
            runs.append(run)
            load = run["load"] or {}
            print(f"round {i + 1}/{args.rounds} {run['condition']:<16} load average "
                  f"{run['load_average']:4.1f}, busy {100 * load.get('busy_share', math.nan):3.0f} %, "
                  f"calibration {run['seconds']:.2f} s: " +
                  ", ".join(f"{m} {spell(t)}" for m, t in run["thresholds"].items()),
                  file=sys.stderr, flush=True)
    report(runs)
    if args.json:
        Path(args.json).write_text(json.dumps(runs, indent=1, default=str))
    return 0


if __name__ == "__main__":
    sys.exit(main())
