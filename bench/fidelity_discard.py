#!/usr/bin/env python3
"""Fidelity of the zcal probes on the discard path (UDP to 127.0.0.2 in a
private network namespace whose lo drops everything in a blackhole qdisc):
does each probe drive its method as well as a sender written for the bench?
Runs, interleaved in one run, N rounds of every probe and its yardstick at
each size:

  copy                 against a tight send loop (bench/fidelity_ref_sendmsg)
  msg_zerocopy         against the same loop with MSG_ZEROCOPY
  uring_send           against a batched io_uring sender (bench/fidelity_ref_uring --udp)
  uring_send_zc        against the same with SEND_ZC
  uring_send_zc_fixed  against the same with SEND_ZC from registered buffers

The probes run in fidelity_probe --discard (zcal's own namespace helper);
the yardsticks inside `unshare -n` with lo up and `tc qdisc add dev lo root
blackhole`, set up by ip(8) and tc(8), independent of the probe code. Prints
the median ratios probe / yardstick of throughput and of bytes per CPU
second (the inverse of CPU per byte, so that >= 0.95 is the target for
both) at 4, 16 and 64 KiB, the copied share of the zerocopy completions,
and the crossover that the probes and that the yardsticks find (the
calibrator's default rule: zerocopy wins at a size when its CPU per byte is
at least 3 % lower and its throughput at most 2 % lower than the
baseline's; the crossover is the smallest size from which it wins at every
larger size). 64 KiB stands for 65,507 bytes, the largest UDP payload.

With --zcal BUILD/agent/cli/zcal, it also times `zcal calibrate --path discard`
with all five methods and prints its verdicts.

usage: bench/fidelity_discard.py [--build DIR] [--rounds N] [--seconds S]
                                 [--zcal ZCAL] [--json FILE]
"""
import argparse
import json
import statistics
import subprocess
import sys
import time
from pathlib import Path

from fidelity import run_json

KIB = 1024
UDP_MAX = 65507
SIZES = [4 * KIB, 8 * KIB, 16 * KIB, 32 * KIB, UDP_MAX]
TARGET_SIZES = [4 * KIB, 16 * KIB, UDP_MAX]
BASELINE = {"msg_zerocopy": "copy", "uring_send_zc": "uring_send",
            "uring_send_zc_fixed": "uring_send"}
METHODS = ["copy", "msg_zerocopy", "uring_send", "uring_send_zc", "uring_send_zc_fixed"]
NAMESPACE = "ip link set lo up && tc qdisc add dev lo root blackhole && exec "
MARGIN, TOLERANCE = 0.03, 0.02


def label(size):
    return "64K" if size == UDP_MAX else f"{size // KIB}K"


class Runner:
    def __init__(self, build, seconds):
        bench = Path(build) / "bench"
        self.probe = str(bench / "fidelity_probe")
        self.ref_uring = str(bench / "fidelity_ref_uring")
        self.ref_sendmsg = str(bench / "fidelity_ref_sendmsg")
        self.seconds = seconds

    def probe_run(self, method, size):
        return run_json([self.probe, method, str(size), str(self.seconds), "--discard"],
                        timeout=self.seconds + 30)

    def ref_run(self, method, size):
        target = "127.0.0.2:9"
        if method in ("copy", "msg_zerocopy"):
            command = [self.ref_sendmsg, target, str(size), str(self.seconds), "16", "--udp"]
            if method == "msg_zerocopy":
                command.append("--zerocopy")
        else:
            op = {"uring_send": "send", "uring_send_zc": "send_zc",
                  "uring_send_zc_fixed": "send_zc_fixed"}[method]
            command = [self.ref_uring, target, str(size), str(self.seconds), "16", "8",
                       "--udp", "--op", op]
        return run_json(["unshare", "-n", "sh", "-c", NAMESPACE + " ".join(command)],
                        timeout=self.seconds + 30)


def bytes_per_cpu(result):
    per_byte = result.get("cpu_ns_per_byte")
    return 1 / per_byte if per_byte else None


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--build", default="build", help="meson build directory (default: build)")
    parser.add_argument("--rounds", type=int, default=5, help="rounds (default: 5, at least 5)")
    parser.add_argument("--seconds", type=float, default=0.5,
                        help="seconds per run (default: 0.5)")
    parser.add_argument("--zcal", help="also time `ZCAL calibrate --path discard`")
    parser.add_argument("--json", help="also write every measurement to this file")
    args = parser.parse_args()
    if args.rounds < 5:
        parser.error("--rounds: at least 5, for a median worth the name")

    r = Runner(args.build, args.seconds)
    jobs = []
    for size in SIZES:
        for method in METHODS:
            jobs.append((("probe", method, size), lambda m=method, s=size: r.probe_run(m, s)))
            jobs.append((("ref", method, size), lambda m=method, s=size: r.ref_run(m, s)))
    rounds = []
    for i in range(args.rounds):
        # Rotate the order each round, so that drift hits all alike.
        shift = (i * 7) % len(jobs)
        results = {}
        for key, job in jobs[shift:] + jobs[:shift]:
            results[key] = job()
            print(f"round {i + 1}/{args.rounds}: {key[0]:5} {key[1]:20} {label(key[2]):>3} "
                  f"{results[key]['mb_per_s']:9.1f} MB/s", file=sys.stderr)
        rounds.append(results)

    def ratio(a, b, value):
        values = [value(x[a]) / value(x[b]) for x in rounds
                  if value(x[a]) is not None and value(x[b])]
        return statistics.median(values) if values else float("nan")

    def median(key, field):
        return statistics.median(x[key][field] for x in rounds)

    print(f"zcal probe fidelity on the discard path: {args.rounds} interleaved rounds of "
          f"{args.seconds} s runs (medians; 64K = {UDP_MAX} bytes)")
    print("  probe / yardstick     size   MB/s probe    MB/s ref   throughput  bytes/cpu-s"
          "  copied")
    unmet = []
    for method in METHODS:
        for size in TARGET_SIZES:
            p, q = ("probe", method, size), ("ref", method, size)
            tput = ratio(p, q, lambda x: x["mb_per_s"])
            cpu = ratio(p, q, bytes_per_cpu)
            copied = statistics.median(
                x[p]["zc_copied"] / x[p]["zc_completions"] if x[p]["zc_completions"] else 0
                for x in rounds)
            flag = "" if tput >= 0.95 and cpu >= 0.95 else "  < 0.95"
            if flag:
                unmet.append(f"{method}@{label(size)}")
            print(f"  {method:20} {label(size):>4} {median(p, 'mb_per_s'):12.1f} "
                  f"{median(q, 'mb_per_s'):11.1f} {tput:12.3f} {cpu:12.3f} "
                  f"{100 * copied:6.2f}%{flag}")
    print(f"  target >= 0.95 for both ratios: "
          f"{'met everywhere' if not unmet else 'NOT met for ' + ', '.join(unmet)}")

    print("  crossover (CPU per byte and throughput, zerocopy / baseline, per size)")
    for side in ("probe", "ref"):
        for method, baseline in BASELINE.items():
            wins, cells = [], []
            for size in SIZES:
                a, b = (side, method, size), (side, baseline, size)
                cpu = ratio(a, b, lambda x: x["cpu_ns_per_byte"])
                tput = ratio(a, b, lambda x: x["mb_per_s"])
                wins.append(cpu <= 1 - MARGIN and tput >= 1 - TOLERANCE)
                cells.append(f"{label(size)} {cpu:.2f}/{tput:.2f}{'+' if wins[-1] else ' '}")
            start = len(SIZES)
            while start > 0 and wins[start - 1]:
                start -= 1
            found = ("never (up to 64K)" if start == len(SIZES)
                     else "always (from 4K)" if start == 0 else f"from {label(SIZES[start])}")
            name = method if side == "probe" else "ref " + method
            print(f"  {name:24} {found:18} " + "  ".join(cells))

    if args.zcal:
        start = time.monotonic()
        out = subprocess.run([args.zcal, "calibrate", "--path", "discard", "--json"],
                             capture_output=True, text=True, timeout=120)
        wall = time.monotonic() - start
        print(f"  zcal calibrate --path discard: exit {out.returncode}, {wall:.2f} s wall "
              f"(target <= 10 s)")
        if out.returncode == 0:
            doc = json.loads(out.stdout)
            for path in doc.get("paths", {}).values():
                for method, result in path.get("methods", {}).items():
                    print(f"    {method:20} {result.get('verdict')} "
                          f"{result.get('threshold_bytes') or result.get('reason') or ''}")
            if doc.get("size_clamp"):
                print(f"    size clamp: {doc['size_clamp']}")
        else:
            print("    " + out.stderr.strip())
    if args.json:
        flat = [{"side": k[0], "method": k[1], "size": k[2], **v}
                for x in rounds for k, v in x.items()]
        Path(args.json).write_text(json.dumps(flat, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
