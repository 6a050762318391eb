#!/usr/bin/env python3
"""bench/depth.py --buffers pages,hugepages on the tables recorded in
tests/data/depth, with huge-page tables made from them: identical tables
never differ beyond the noise, zerocopy made twice as cheap does, and bad
--buffers options are refused with one line.

usage: depth_buffers_bench_test.py ZCAL SOURCE_ROOT"""
import csv
import io
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

METHODS = ("msg_zerocopy", "uring_send_zc", "uring_send_zc_fixed")
BOTH = ("--buffers", "pages,hugepages")


def check(condition, what):
    if not condition:
        print(f"FAIL: {what}")
        sys.exit(1)


def run(root, *options):
    return subprocess.run([sys.executable, str(root / "bench" / "depth.py"), *options],
                          capture_output=True, text=True, timeout=100)


def huge_tables(root, tmp, transform):
    """tests/data/depth with zcal_R_hugepages.csv = transform(zcal_R.csv)."""
    out = Path(tmp) / "tables"
    shutil.copytree(root / "tests" / "data" / "depth", out)
    for pages in sorted(out.glob("zcal_*.csv")):
        (out / f"{pages.stem}_hugepages.csv").write_text(transform(pages.read_text()))
    return out


def halve_method_cpu(method):
    def transform(text):
        rows = list(csv.reader(io.StringIO(text)))
        header = rows[0]
        m, columns = header.index("method"), [header.index(c) for c in ("cpu_pct", "cpu_ns")]
        for row in rows[1:]:
            if len(row) == len(header) and row[m] == method:
                for c in columns:
                    if row[c]:
                        row[c] = str(float(row[c]) / 2 if "." in row[c] else int(row[c]) // 2)
        out = io.StringIO()
        csv.writer(out, lineterminator="\n").writerows(rows)
        return out.getvalue()
    return transform


def method_blocks(out):
    section = out[out.index("buffer memory:"):]
    blocks = {}
    for method in METHODS:
        start = section.index(f"\n{method} (against ")
        end = section.find("\n\n", start + 1)
        blocks[method] = section[start:end if end >= 0 else None]
    return section, blocks


def noise_lines(block):
    return [line.strip() for line in block.splitlines() if line.strip().startswith("crossover")]


def test_identical_tables_never_differ(zcal, root):
    with tempfile.TemporaryDirectory(prefix="zcal-buffers-test-") as tmp:
        tables = huge_tables(root, tmp, lambda text: text)
        done = run(root, "--zcal", zcal, "--from", str(tables), *BOTH)
    check(done.returncode == 0, f"exit {done.returncode}: {done.stderr}")
    section, blocks = method_blocks(done.stdout)
    for method, block in blocks.items():
        for depth in ("1", "4", "16", "stream"):
            check(re.search(rf"^  depth {depth} +buffers +4K .* crossover per round$", block, re.M),
                  f"{method}: class {depth} with the ratios at the sizes every round probed\n"
                  f"{block}")
        for kind in ("pages", "hugepages"):
            check(len(re.findall(rf"^ +{kind} +\d", block, re.M)) == 4,
                  f"{method}: a {kind} row per class\n{block}")
        lines = noise_lines(block)
        check(len(lines) == 4 and all("within the noise; ratios beyond the noise at no size"
                                      in line for line in lines),
              f"{method}: the same tables are never apart\n{block}")
    check("verdict: huge pages move no answer beyond the noise here (ratios apart at 0 of"
          in section, f"the verdict of identical tables\n{section[-400:]}")


def test_cheaper_zerocopy_differs(zcal, root):
    with tempfile.TemporaryDirectory(prefix="zcal-buffers-test-") as tmp:
        tables = huge_tables(root, tmp, halve_method_cpu("msg_zerocopy"))
        done = run(root, "--zcal", zcal, "--from", str(tables), *BOTH)
    check(done.returncode == 0, f"exit {done.returncode}: {done.stderr}")
    section, blocks = method_blocks(done.stdout)
    moved = [line for line in noise_lines(blocks["msg_zerocopy"])
             if re.search(r"ratios beyond the noise at \d.*\(-0\.\d\d\)", line)]
    check(len(moved) == 4, f"msg_zerocopy at half the CPU: its ratios apart in every class\n"
          f"{blocks['msg_zerocopy']}")
    for method in ("uring_send_zc", "uring_send_zc_fixed"):
        check(all("within the noise; ratios beyond the noise at no size" in line
                  for line in noise_lines(blocks[method])), f"{method}: untouched, not apart")
    check(re.search(r"verdict: huge pages move (an|no) answer beyond the noise here", section),
          f"a verdict line\n{section[-400:]}")


def test_apart_rule(root):
    sys.path.insert(0, str(root / "bench"))
    import depth  # noqa: E402 (found through the path above)
    check(depth.apart([1.0, 1.2], [0.5, 0.9]), "every round below every other: apart")
    check(not depth.apart([1.0, 1.2], [0.5, 1.1]), "overlapping rounds: not apart")
    check(depth.apart([None, None], [8192, 16384]), "never lies above every size")
    check(not depth.apart([None, 8192], [8192]), "a tie is not apart")
    check(depth.median_size([None, None, 8192]) == "never", "the median of mostly never")


def test_bad_buffers_refused(zcal, root):
    with tempfile.TemporaryDirectory(prefix="zcal-buffers-test-") as tmp:
        tables = Path(tmp) / "tables"
        shutil.copytree(root / "tests" / "data" / "depth", tables)
        cases = [
            (["--buffers", "bogus"], r"--buffers bogus: pages or pages,hugepages"),
            (["--buffers", "hugepages"], r"--buffers hugepages: pages or pages,hugepages"),
            (["--buffers", "pages,pages"], r"--buffers pages,pages: pages or"),
            (["--from", str(tables), *BOTH],
             r"missing zcal_1_hugepages\.csv, zcal_2_hugepages\.csv \(--record with --buffers "
             r"pages,hugepages writes them\)"),
        ]
        for options, expected in cases:
            done = run(root, "--zcal", zcal, *options)
            what = " ".join(options)
            check(done.returncode == 2, f"{what}: exit {done.returncode}\n{done.stderr}")
            check(re.search(expected, done.stderr) and len(done.stderr.strip().splitlines()) == 1,
                  f"{what}: one line that names it: {done.stderr}")
            check(done.stdout == "", f"{what}: nothing of a report printed")


def main():
    zcal, root = sys.argv[1], Path(sys.argv[2])
    sys.dont_write_bytecode = True  # no __pycache__ in the source tree
    test_apart_rule(root)
    test_bad_buffers_refused(zcal, root)
    test_identical_tables_never_differ(zcal, root)
    test_cheaper_zerocopy_differs(zcal, root)
    print("depth bench --buffers: identical tables within the noise, a halved cost apart, "
          "bad options refused")


if __name__ == "__main__":
    main()
