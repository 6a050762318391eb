#!/usr/bin/env python3
"""bench/depth.py on the tables recorded in tests/data/depth (two rounds on
a shared, loaded VM) and tests/data/depth_reaping (two quiet rounds, with
the bench's own io_uring sender that reaps as the depth says beside
liburing's example): every depth class judged for every method on every
reference the recording has, the order of the classes accounted for, the
per-class policy no worse than the stream threshold at depth 1 where the
recording's README says so, and bad options refused with one line. The
figures themselves are the bench's to print, not asserted.

usage: depth_bench_test.py ZCAL SOURCE_ROOT"""
import os
import re
import subprocess
import sys
import tempfile
from pathlib import Path

METHODS = ("msg_zerocopy", "uring_send_zc", "uring_send_zc_fixed")


def check(condition, what):
    if not condition:
        print(f"FAIL: {what}")
        sys.exit(1)


def run(root, *options):
    return subprocess.run([sys.executable, str(root / "bench" / "depth.py"), *options],
                          capture_output=True, text=True, timeout=100)


# The references each method is judged on, by the start of their name.
OWN_URING = "fidelity_ref_uring, reaping as the depth says"
REFERENCES = {"msg_zerocopy": ["fidelity_ref_sendmsg"],
              "uring_send_zc": [OWN_URING, "liburing's example"],
              "uring_send_zc_fixed": [OWN_URING, "liburing's example"]}


def check_table(what, block, depth_1_no_worse):
    classes = re.findall(r"^  (1|4|16|stream)\s+\S+\s+\S+\s+(-?\d+\.\d\d)\s+(-?\d+\.\d\d)",
                         block, re.M)
    check([c for c, _, _ in classes] == ["1", "4", "16", "stream"],
          f"{what}: every class, in order: {classes}\n{block}")
    check(all(re.search(r"\s(yes|NO) \(\d+ of 4 pairs\)$", line) for line in
              block.splitlines() if re.match(r"  (1|4|16|stream) ", line)),
          f"{what}: each class says whether it is within 0.5 pp\n{block}")
    check("classes that do not differ from stream here: zcal " in block,
          f"{what}: says which classes do not differ from stream")
    one = re.search(r"depth 1: per-class (\d+\.\d\d) pp, stream at every depth "
                    r"(\d+\.\d\d) pp: per-class (no worse|WORSE)", block)
    check(one is not None, f"{what}: compares the per-class policy with stream at depth 1")
    if depth_1_no_worse:
        check(one.group(3) == "no worse" and float(one.group(1)) <= float(one.group(2)),
              f"{what}: per-class no worse than stream at depth 1\n{block}")


def test_recorded_tables(zcal, root, folder, with_own_uring, depth_1_no_worse,
                         least_inversions):
    """`with_own_uring`: whether the recording has the bench's own io_uring
    reference (uring_R_D.csv); one made before it had only the example.
    `depth_1_no_worse` (the (method, reference) pairs whose per-class policy
    costs no more than the stream threshold at depth 1) and
    `least_inversions`: what the recording's README says of its figures, so
    that the checks cannot pass on nothing."""
    done = run(root, "--zcal", zcal, "--from", str(folder))
    check(done.returncode == 0, f"depth.py exit {done.returncode}: {done.stderr}")
    out = done.stdout
    blocks = re.split(r"\n(?=\S)", out)
    for method in METHODS:
        for reference in REFERENCES[method]:
            title = f"{method} (reference: {reference}"
            block = next((b for b in blocks if b.startswith(title)), None)
            check(block is not None, f"{folder.name}: no table for {title}:\n{out}")
            if reference == OWN_URING and not with_own_uring:
                check("not in this recording (no uring_R_D.csv)" in block,
                      f"{folder.name}: says the recording lacks it: {block}")
                continue
            check_table(f"{folder.name}: {title}", block,
                        (method, reference) in depth_1_no_worse)
    order = out[out.index("order of the classes"):]
    inversions = [line for line in order.splitlines()
                  if re.match(r"    \S+: depth \S+ takes ", line)]
    check(len(inversions) >= least_inversions,
          f"{folder.name}: these tables have inversions of the class order; each is accounted "
          f"for:\n{order}")
    for line in inversions:
        check(re.search(r"; (its measured costs say so: .*\d\.\d\d"
                        r"|placed by its curve fit \(no size probed between them.*\))$", line),
              f"an inversion without a reason its costs give: {line}")


def test_inversion_rule(root):
    sys.path.insert(0, str(root / "bench"))
    import depth  # noqa: E402 (found through the path above)
    decided = {"1": {"msg_zerocopy": (16384, "threshold")},
               "4": {"msg_zerocopy": (32768, "threshold")},
               "16": {"msg_zerocopy": (32768, "threshold")},
               "stream": {"msg_zerocopy": (8192, "threshold")}}
    def costs(ratio_at_24k):
        return {("msg_zerocopy", 24576): ratio_at_24k, ("copy", 24576): 1.0,
                ("msg_zerocopy", 32768): 0.8, ("copy", 32768): 1.0}
    lines = depth.inversions(decided, {d: costs(1.05) for d in depth.DEPTHS})
    check(len(lines) == 1 and "depth 4 takes 32K above depth 1's 16K; its measured costs say "
          "so: zerocopy/baseline CPU per byte at depth 4: 24K 1.05" in lines[0], f"{lines}")
    lines = depth.inversions(decided, {d: costs(0.9) for d in depth.DEPTHS})
    check(len(lines) == 1 and "CONTRADICTED by its measured costs" in lines[0] and "24K 0.90"
          in lines[0], f"zerocopy cheaper in between contradicts the inversion: {lines}")
    decided["4"]["msg_zerocopy"] = (None, "never")
    decided["16"]["msg_zerocopy"] = (None, "never")
    lines = depth.inversions(decided, {d: {} for d in depth.DEPTHS})
    check(len(lines) == 1 and "takes never above depth 1's 16K; placed by its curve fit"
          in lines[0], f"never after a threshold, nothing probed: {lines}")


def test_bad_options_refused(zcal, root):
    with tempfile.TemporaryDirectory(prefix="zcal-depth-test-") as tmp:
        Path(tmp, "zcal_1.csv").write_text("")
        Path(tmp, "ref_1_1.csv").write_text("")
        short = Path(tmp, "short")
        short.mkdir()
        for n in ("zcal_1.csv", *(f"ref_1_{d}.csv" for d in ("1", "4", "16", "stream"))):
            Path(short, n).write_text("")
        cases = [
            (["--rounds", "0"], r"--rounds 0: 1 to 10"),
            (["--seconds", "99"], r"--seconds 99\.0: 0\.2 to 10"),
            (["--sizes", "3,4K"], r"--sizes 3,4K: '3' is not a size"),
            (["--sizes", "4K"], r"--sizes 4K: at least two different sizes"),
            (["--bogus"], r"unrecognized arguments: --bogus"),
            (["--record", tmp, "--from", tmp], r"--record and --from: one or the other"),
            (["--from", str(Path(tmp, "none"))], r"--from .*none: not a folder"),
            (["--from", tmp], r"missing ref_1_4\.csv, ref_1_16\.csv, ref_1_stream\.csv"),
            (["--from", str(short)], r"ref_1_1\.csv: no samples table in it \(empty\)"),
            (["--zcal", "/nonexistent/zcal", "--from", str(root / "tests" / "data" / "depth")],
             r"--zcal /nonexistent/zcal: cannot run it"),
        ]
        # Measuring checks its tools before it enters a namespace or sends
        # a byte (and refuses to measure without root).
        cases.append((["--zcal", "/nonexistent/zcal", "--rounds", "1"],
                      r"/nonexistent/zcal: not an executable" if os.geteuid() == 0
                      else r"measuring needs root"))
        if os.geteuid() == 0:
            # A build folder with the sendmsg reference but not the io_uring one.
            partial = Path(tmp, "partial", "bench")
            partial.mkdir(parents=True)
            Path(partial, "fidelity_ref_sendmsg").write_text("#!/bin/sh\nexit 1\n")
            Path(partial, "fidelity_ref_sendmsg").chmod(0o755)
            cases.append((["--zcal", zcal, "--build", str(partial.parent), "--rounds", "1"],
                          r"partial/bench/fidelity_ref_uring: not an executable; build it"))
        for options, expected in cases:
            if "--zcal" not in options:
                options = ["--zcal", zcal, *options]
            done = run(root, *options)
            what = " ".join(options)
            check(done.returncode == 2, f"{what}: exit {done.returncode}\n{done.stderr}")
            check(re.search(expected, done.stderr) and "Traceback" not in done.stderr and
                  len(done.stderr.strip().splitlines()) == 1,
                  f"{what}: one line that names it: {done.stderr}")
            check(done.stdout == "", f"{what}: nothing of a report printed: {done.stdout[:200]}")


def main():
    zcal, root = sys.argv[1], Path(sys.argv[2])
    sys.dont_write_bytecode = True  # no __pycache__ in the source tree
    data = root / "tests" / "data"
    # A loaded hour, the example alone for io_uring; on it the per-class
    # policy is no worse than stream's at depth 1 for every method, and the
    # class order has inversions, each accounted for (its README).
    test_recorded_tables(zcal, root, data / "depth", False,
                         {(m, r) for m in METHODS for r in REFERENCES[m]}, 1)
    # A quiet hour with the bench's own io_uring reference beside the
    # example; the example's depth 1 never waits for a notification, so the
    # per-class policy is no worse only on the senders that reap.
    test_recorded_tables(zcal, root, data / "depth_reaping", True,
                         {("msg_zerocopy", "fidelity_ref_sendmsg"),
                          ("uring_send_zc", OWN_URING), ("uring_send_zc_fixed", OWN_URING)}, 0)
    test_inversion_rule(root)
    test_bad_options_refused(zcal, root)
    print("depth bench: every class judged, order accounted for, bad options refused")


if __name__ == "__main__":
    main()
