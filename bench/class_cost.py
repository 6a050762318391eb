#!/usr/bin/env python3
"""What each depth class costs per send over the stream class, size by size.

Reads the samples of a calibration of several depth classes (`zcal
calibrate --path discard --depth 1,4,16,stream --samples-out FILE`; the
full CSV, with its bytes, cpu_ns, wall_ns and depth columns) and prints, per
zerocopy method and numeric class, at every size both the class and the
stream probed: the median CPU per send of the class's samples less the
stream's median there (ns), and the share of the wall time the senders ran.
Then the spread of those differences over the sizes. It is the measurement
behind docs/calibrator.md, "A cost per send": where a class costs the same
amount more at every size, zcal decides it as the stream class plus that
cost (calibrator/src/class_offset.h); the decision's own figures are in
`zcal analyze FILE`.

Nothing is run; the file is read. Exit status: 0, or 2 with one line for a
file that cannot be read, lacks a column, or has no class to compare.

usage: bench/class_cost.py SAMPLES.csv
"""
import argparse
import os
import signal
import statistics
import sys
from collections import defaultdict

sys.dont_write_bytecode = True  # no __pycache__ beside the bench
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from regret import BenchError, read_rows  # noqa: E402  the samples CSV reader

ZEROCOPY = ("msg_zerocopy", "uring_send_zc", "uring_send_zc_fixed")
NEEDED = ("method", "size", "bytes", "cpu_ns", "wall_ns")


def read(path):
    """{(method, depth, size): [(ns per send, run share)]} of the ok samples."""
    cells = defaultdict(list)
    for number, row in read_rows(path, NEEDED,
                                 " (zcal calibrate --samples-out writes the full table)"):
        if row["method"] not in ZEROCOPY:
            continue
        try:
            size, sent = int(row["size"]), int(row["bytes"])
            cpu, wall = float(row["cpu_ns"]), float(row["wall_ns"])
        except ValueError:
            raise BenchError(f"{path}:{number}: size, bytes, cpu_ns and wall_ns must be "
                             f"numbers") from None
        if size <= 0 or sent < size or cpu <= 0 or wall <= 0:
            continue
        depth = row.get("depth") or "stream"
        cells[(row["method"], depth, size)].append((cpu / (sent / size), cpu / wall))
    return cells


def depth_key(depth):
    return (1, 0) if depth == "stream" else (0, int(depth))


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("samples", help="the CSV of zcal calibrate --samples-out")
    args = parser.parse_args()
    try:
        cells = read(args.samples)
    except BenchError as error:
        print(f"class_cost.py: {error}", file=sys.stderr)
        return 2
    compared = 0
    for method in ZEROCOPY:
        depths = sorted({d for (m, d, _) in cells if m == method and d != "stream"}, key=depth_key)
        for depth in depths:
            rows = []
            for size in sorted({s for (m, d, s) in cells if m == method and d == depth}):
                mine, stream = cells[(method, depth, size)], cells.get((method, "stream", size))
                if not stream:
                    continue
                here = statistics.median(x for x, _ in mine)
                there = statistics.median(x for x, _ in stream)
                rows.append((size, here - there, there, len(mine),
                             statistics.median(s for _, s in mine),
                             statistics.median(s for _, s in stream)))
            if not rows:
                continue
            compared += 1
            print(f"{method} at depth {depth} against stream")
            print(f"  {'size':>8} {'ns/send over stream':>20} {'stream ns/send':>15} "
                  f"{'n':>3} {'ran (class/stream)':>19}")
            for size, diff, there, n, ran, ran_stream in rows:
                print(f"  {size:>8} {diff:>+20.0f} {there:>15.0f} {n:>3} "
                      f"{100 * ran:>9.0f} %/{100 * ran_stream:.0f} %")
            diffs = [r[1] for r in rows]
            spread = (max(diffs) - min(diffs)) if len(diffs) > 1 else 0.0
            print(f"  over {len(rows)} size(s): median {statistics.median(diffs):+.0f} ns, "
                  f"range {min(diffs):+.0f} to {max(diffs):+.0f} ns ({spread:.0f} ns wide)\n")
    if compared == 0:
        print(f"class_cost.py: {args.samples}: no zerocopy method has samples of a numeric "
              f"depth class at a size the stream class measured (calibrate with --depth "
              f"1,4,16,stream --samples-out FILE)", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    signal.signal(signal.SIGPIPE, signal.SIG_DFL)  # `| head` ends it quietly
    sys.exit(main())
