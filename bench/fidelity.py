#!/usr/bin/env python3
"""Fidelity of the zcal probes: does each probe drive its method as well as
a tuned sender would? Runs, interleaved in one run, N pairs of:

  - iperf3 on loopback (64 KiB writes, one stream) against the `copy` probe
    at 64 KiB for the same duration (target: copy >= 0.95 x iperf3);
  - a batched io_uring sender (bench/fidelity_ref_uring: 8 SQEs per submit,
    registered ring fd, 16 requests in flight) and the `uring_send` probe at
    64 KiB (target: uring_send >= 1.6 x iperf3 in the same run);
  - every zerocopy method against its baseline at 4, 16 and 64 KiB
    (throughput and CPU per byte ratios).

Prints the median of each ratio over the pairs (pairs are formed within a
round, and each round rotates the order, so that drift on a shared machine
hits all alike). Exit status 0 when it ran, whatever the ratios.

usage: bench/fidelity.py [--build DIR] [--pairs N] [--seconds S] [--json FILE]
"""
import argparse
import json
import socket
import statistics
import subprocess
import sys
import time
from pathlib import Path

KIB = 1024
ZEROCOPY = {"msg_zerocopy": "copy", "uring_send_zc": "uring_send",
            "uring_send_zc_fixed": "uring_send"}


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def run_json(command, timeout):
    out = subprocess.run(command, capture_output=True, text=True, timeout=timeout)
    if out.returncode != 0:
        raise RuntimeError(f"{' '.join(command)} failed ({out.returncode}): {out.stderr.strip()}")
    return json.loads(out.stdout)


class Runner:
    def __init__(self, build, seconds):
        self.probe = str(Path(build) / "bench" / "fidelity_probe")
        self.ref = str(Path(build) / "bench" / "fidelity_ref_uring")
        self.seconds = seconds
        self.iperf_port = free_port()
        self.sink_port = free_port()
        self.children = []

    def __enter__(self):
        self.children.append(subprocess.Popen(
            ["iperf3", "-s", "-p", str(self.iperf_port)],
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL))
        sink = subprocess.Popen([self.probe, "sink", str(self.sink_port)],
                                stdout=subprocess.PIPE, text=True)
        self.children.append(sink)
        sink.stdout.readline()  # the sink prints its address once listening
        time.sleep(0.3)  # iperf3 listening too
        return self

    def __exit__(self, *exc):
        for child in self.children:
            child.terminate()
            child.wait(timeout=5)

    def iperf3(self):
        doc = run_json(["iperf3", "-c", "127.0.0.1", "-p", str(self.iperf_port), "-l", "64K",
                        "-t", str(self.seconds), "-J"], timeout=self.seconds + 30)
        sent = doc["end"]["sum_sent"]
        # The sending process's user + system time, in percent of the run.
        cpu_pct = doc["end"]["cpu_utilization_percent"]["host_total"]
        cpu_ns = cpu_pct / 100 * sent["seconds"] * 1e9
        return {"mb_per_s": sent["bits_per_second"] / 8e6,
                "cpu_ns_per_byte": cpu_ns / sent["bytes"] if sent["bytes"] else None}

    def probe_run(self, method, size):
        doc = run_json([self.probe, method, str(size), str(self.seconds),
                        "--sink", f"127.0.0.1:{self.sink_port}"], timeout=self.seconds + 30)
        return doc

    def ref_uring(self, size):
        return run_json([self.ref, f"127.0.0.1:{self.sink_port}", str(size), str(self.seconds),
                         "16", "8"], timeout=self.seconds + 30)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--build", default="build", help="meson build directory (default: build)")
    parser.add_argument("--pairs", type=int, default=5, help="rounds (default: 5, at least 5)")
    parser.add_argument("--seconds", type=int, default=1, help="seconds per run (default: 1)")
    parser.add_argument("--json", help="also write every measurement to this file")
    args = parser.parse_args()
    if args.pairs < 5:
        parser.error("--pairs: at least 5, for a median worth the name")

    # (name, thunk) per round; rotated from round to round.
    sizes = [4 * KIB, 16 * KIB, 64 * KIB]
    rounds = []
    with Runner(args.build, args.seconds) as r:
        jobs = [("iperf3", r.iperf3), ("ref_uring_send@64K", lambda: r.ref_uring(64 * KIB))]
        for size in sizes:
            for method in ["copy", "uring_send", *ZEROCOPY]:
                jobs.append((f"{method}@{size // KIB}K",
                             lambda m=method, s=size: r.probe_run(m, s)))
        for i in range(args.pairs):
            shift = (i * 3) % len(jobs)
            order = jobs[shift:] + jobs[:shift]
            results = {}
            for name, job in order:
                results[name] = job()
                print(f"round {i + 1}/{args.pairs}: {name:28} "
                      f"{results[name]['mb_per_s']:9.1f} MB/s", file=sys.stderr)
            rounds.append(results)

    def ratio(a, b, key="mb_per_s"):
        values = []
        for results in rounds:
            x, y = results[a].get(key), results[b].get(key)
            if x is not None and y:
                values.append(x / y)
        return statistics.median(values) if values else float("nan")

    def median(name, key="mb_per_s"):
        return statistics.median(r[name][key] for r in rounds)

    print(f"zcal probe fidelity on loopback: {args.pairs} interleaved rounds of "
          f"{args.seconds} s runs (medians)")
    print(f"  iperf3 64K            {median('iperf3'):9.1f} MB/s")
    print(f"  copy probe 64K        {median('copy@64K'):9.1f} MB/s")
    print(f"  ref batched uring 64K {median('ref_uring_send@64K'):9.1f} MB/s")
    print(f"  uring_send probe 64K  {median('uring_send@64K'):9.1f} MB/s")
    print(f"  CPU per byte, copy probe / iperf3 sender: "
          f"{ratio('copy@64K', 'iperf3', 'cpu_ns_per_byte'):.3f}")
    checks = [
        ("copy / iperf3", ratio("copy@64K", "iperf3"), 0.95),
        ("uring_send / iperf3", ratio("uring_send@64K", "iperf3"), 1.6),
        ("uring_send / batched reference", ratio("uring_send@64K", "ref_uring_send@64K"), None),
        ("batched reference / iperf3", ratio("ref_uring_send@64K", "iperf3"), None),
    ]
    for name, value, target in checks:
        verdict = "" if target is None else (
            f"  (target >= {target}: {'met' if value >= target else 'NOT met'})")
        print(f"  {name:32} {value:6.3f}{verdict}")
    print("  zerocopy vs baseline       size  throughput  cpu/byte  copied")
    for method, baseline in ZEROCOPY.items():
        for size in sizes:
            a, b = f"{method}@{size // KIB}K", f"{baseline}@{size // KIB}K"
            copied = statistics.median(
                r[a]["zc_copied"] / r[a]["zc_completions"] if r[a]["zc_completions"] else 0
                for r in rounds)
            print(f"  {method + ' / ' + baseline:26} {size // KIB:3}K  {ratio(a, b):10.3f}  "
                  f"{ratio(a, b, 'cpu_ns_per_byte'):8.3f}  {100 * copied:5.1f}%")
    if args.json:
        Path(args.json).write_text(json.dumps(rounds, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
