#!/usr/bin/env python3
"""bench/class_cost.py on the quiet calibrations recorded in
tests/data/depth_quiet: per method, the numeric classes' cost per send over
the stream class is printed size by size, shallower classes cost more, and
its median agrees with the cost zcal analyze decides with (class_offset of
--json). Files it cannot use are refused with one line and exit status 2.
Nothing is measured here.

usage: class_cost_bench_test.py ZCAL SOURCE_ROOT"""
import json
import re
import subprocess
import sys
import tempfile
from pathlib import Path

failures = []


def check(condition, what):
    if not condition:
        failures.append(what)
        print(f"FAIL: {what}")


def run(*args):
    return subprocess.run([sys.executable, *args], capture_output=True, text=True, timeout=60)


def main():
    zcal, root = sys.argv[1], Path(sys.argv[2])
    bench = root / "bench" / "class_cost.py"
    for name in ("zcal_1.csv", "zcal_2.csv"):
        table = root / "tests" / "data" / "depth_quiet" / name
        r = run(str(bench), str(table))
        check(r.returncode == 0, f"{name}: exit {r.returncode}: {r.stderr}")
        medians = {}
        for method, depth, median in re.findall(
                r"^(\S+) at depth (\d+) against stream\n(?:.*\n)*?  over \d+ size\(s\): "
                r"median ([+-]\d+) ns", r.stdout, re.M):
            medians[(method, int(depth))] = int(median)
        analyzed = json.loads(subprocess.run([zcal, "analyze", "--json", str(table)],
                                             capture_output=True, text=True,
                                             check=True).stdout)
        for method in ("msg_zerocopy", "uring_send_zc", "uring_send_zc_fixed"):
            got = [medians.get((method, d)) for d in (1, 4, 16)]
            check(None not in got, f"{name} {method}: a class missing from {r.stdout[:400]}")
            if None in got:
                continue
            check(got[0] > got[1] > got[2], f"{name} {method}: 1 > 4 > 16 per send: {got}")
            for depth in (1, 4):
                doc = next(c for c in analyzed["depths"] if c["depth"] == str(depth))
                offset = doc["paths"]["discard"]["methods"][method]["class_offset"]
                want = offset["ns_per_send"]
                check(abs(medians[(method, depth)] - want) <= max(60, 0.25 * abs(want)),
                      f"{name} {method} at {depth}: bench {medians[(method, depth)]} ns, "
                      f"zcal analyze {want:.0f} ns")
    with tempfile.TemporaryDirectory() as tmp:
        cases = [
            (Path(tmp, "absent.csv"), None, r"absent\.csv: .*No such file"),
            (Path(tmp, "short.csv"), "method,size\nmsg_zerocopy,4096\n", r"no column bytes, cpu_ns, wall_ns in its header \(zcal calibrate --samples-out"),
            (Path(tmp, "stream.csv"), (root / "tests/data/tables/discard_zcal_1.csv").read_text(),
             r"no zerocopy method has samples of a numeric depth class.*--depth"),
            (Path(tmp, "garbage.csv"), "method,size,bytes,cpu_ns,wall_ns\nmsg_zerocopy,x,1,1,1\n",
             r"garbage\.csv:2: size, bytes, cpu_ns and wall_ns must be numbers"),
        ]
        for path, text, said in cases:
            if text is not None:
                path.write_text(text)
            r = run(str(bench), str(path))
            check(r.returncode == 2 and r.stdout == "" and re.search(said, r.stderr)
                  and r.stderr.count("\n") == 1,
                  f"{path.name}: exit {r.returncode}, stderr {r.stderr!r}")
    print(f"{len(failures)} failure(s)")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
