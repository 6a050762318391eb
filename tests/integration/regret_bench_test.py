#!/usr/bin/env python3
"""bench/regret.py on recorded runs (tests/data/tables, the quiet VM's
four runs of each sender): its target rule, and a whole judgement with the
real `zcal analyze`, so that the bench keeps working with the command's
JSON, and its refusal of a folder that lacks a run. The figures themselves are the bench's to print, not asserted here.

usage: regret_bench_test.py ZCAL SOURCE_ROOT"""
import math
import os
import re
import subprocess
import sys
import tempfile
from pathlib import Path

# Recorded in one bench run: zcal_N with liburing_(N-3).
RUNS = {1: (8, 5), 2: (9, 6), 3: (10, 7), 4: (11, 8)}


def check(condition, what):
    if not condition:
        print(f"FAIL: {what}")
        sys.exit(1)


def test_target_rule(regret):
    judge = regret.judge_pair
    # fixed policies in the bench's order: 10 KB, 16 KiB, always, never
    check(judge(0.10, 0.0, [3.0, 4.0, 5.0, 30.0]) == (True, ""), "below every fixed policy")
    check(judge(0.62, 0.1, [3.0, 4.0, 5.0, 30.0]) == (False, "+0.52 pp"),
          "more than 0.5 pp over the best misses")
    check(judge(0.06, 0.0, [27.0, 27.0, 0.03, 125.0]) ==
          (False, "0.03 pp above always"), "above always misses")
    check(judge(0.06, 0.0, [27.0, 27.0, 0.03, 125.0], [0.5, 0.5, 0.37, 3.0]) ==
          (True, "within the noise: 0.03 pp above always, resolution 0.37 pp"),
          "above always by less than the judgement's resolution is within the noise")
    check(judge(0.45, 0.0, [0.05, 27.0, 0.03, 125.0], [0.3, 0.5, 0.5, 3.0]) ==
          (False, "0.40 pp above 10 KB"),
          "above one fixed policy beyond its resolution misses, whatever the others allow")
    check(judge(0.9, 0.0, [27.0, 27.0, 0.03, 125.0], [5.0, 5.0, 5.0, 5.0]) ==
          (False, "+0.90 pp"), "the 0.5 pp to the best has no allowance for noise")
    check(judge(0.0, 0.0, [23.0, 23.0, 0.0, 242.0]) == (True, "at the best"),
          "a tie with a fixed policy that is the best meets the target")
    check(judge(1.0, 0.8, [1.0, 5.0, 6.0, 7.0]) == (False, "tied with a fixed policy"),
          "a tie with a fixed policy that is not the best misses")
    check(judge(0.004, 0.0, [0.0, 1.0, 2.0, 3.0]) == (True, "at the best"),
          "within rounding of the figures printed is a tie")


def test_resolution(regret):
    weights = {1024: 0.2, 2048: 0.3, 4096: 0.5}
    # From 2 KiB and always differ at 1024 B only; never and always everywhere.
    check(abs(regret.resolution_pp(weights, 2048, 0, 0.02) - 2 * 100 * 0.02 * 0.2) < 1e-9,
          "two thresholds differ at the sizes between them")
    check(abs(regret.resolution_pp(weights, None, 0, 0.02) - 4 * math.sqrt(0.38)) < 1e-9,
          "never and always differ at every size")
    check(regret.resolution_pp(weights, 4096, 4096, 0.02) == 0.0, "a policy against itself")
    with tempfile.TemporaryDirectory(prefix="zcal-regret-test-") as tmp:
        header = "path,method,size,repeat,mb_per_s,cpu_pct,copied_pct\n"
        runs = []
        # log(zc / base) at 1024 B: +0.1 and -0.1 (sd 0.1414 with one degree
        # of freedom); 2048 B is in one run only and adds none.
        for n, (zc, extra) in enumerate([(100.0 / math.exp(0.1), "liburing,uring_send_zc,2048,0,50,50,\n"),
                                         (100.0 * math.exp(0.1), "")]):
            path = Path(tmp) / f"liburing_{n}.csv"
            path.write_text(header + f"liburing,uring_send,1024,0,100,50,\n"
                            f"liburing,uring_send_zc,1024,0,{zc},50,\n"
                            "liburing,uring_send,2048,0,100,50,\n" + extra)
            runs.append({"liburing": path})
        tables = {run["liburing"]: regret.read_costs(run["liburing"]) for run in runs}
        scatter, dof = regret.ratio_scatter(runs, "liburing", tables)
        check(dof == 1 and abs(scatter - 0.2 / math.sqrt(2)) < 1e-9,
              f"pooled run-to-run scatter: {scatter} with {dof} degrees of freedom")


def test_judging_recorded_runs(zcal, root):
    tables = root / "tests" / "data" / "tables"
    with tempfile.TemporaryDirectory(prefix="zcal-regret-test-") as tmp:
        for n, (z, l) in RUNS.items():
            os.symlink(tables / f"discard_zcal_{z}.csv", Path(tmp) / f"zcal_{n}.csv")
            os.symlink(tables / f"discard_liburing_{l}.csv", Path(tmp) / f"liburing_{n}.csv")
        done = subprocess.run([sys.executable, str(root / "bench" / "regret.py"), "--zcal", zcal,
                               "--from", tmp], capture_output=True, text=True, timeout=100)
    check(done.returncode == 0, f"regret.py exit {done.returncode}: {done.stderr}")
    totals = [int(m.group(2)) for m in
              re.finditer(r"pairs meeting the target: (\d+) of (\d+)", done.stdout)]
    # Four runs, twelve ordered pairs; three methods on zcal's probes, two
    # on the example; equal weights and the mix.
    check(totals == [36, 36, 24, 24], f"summary lines: {totals}\n{done.stdout}")
    rows = [line for line in done.stdout.splitlines()
            if re.match(r"\s+(msg_zerocopy|uring_send_zc|uring_send_zc_fixed)\s+\d+>\d+", line)]
    check(len(rows) == 120, f"{len(rows)} rows of pairs")
    check(all(re.search(r"\s(yes|NO)( \(.*\))?$", r) for r in rows), "every row says yes or NO")
    check(done.stdout.startswith("decided with zcal analyze --objective cpu --margin 0\n"),
          "the bench decides on what it judges, and says so")
    check(len(re.findall(r"decided under zcal's default objective instead: \d+ of (36|24)",
                         done.stdout)) == 4, "each figure also under the default objective")
    check(len(re.findall(r"resolution: the zerocopy/baseline cost ratio at one size scatters by "
                         r"\d+\.\d % from run to run \((\d+) degrees", done.stdout)) == 2,
          "each sender's run-to-run scatter is printed")


def test_a_folder_without_runs_is_refused(zcal, root):
    with tempfile.TemporaryDirectory(prefix="zcal-regret-test-") as tmp:
        Path(tmp, "zcal_1.csv").write_text("")
        Path(tmp, "zcal_2.csv").write_text("")
        Path(tmp, "liburing_1.csv").write_text("")
        done = subprocess.run([sys.executable, str(root / "bench" / "regret.py"), "--zcal", zcal,
                               "--from", tmp], capture_output=True, text=True, timeout=100)
    check(done.returncode == 2, f"exit {done.returncode} for a folder missing a run")
    check("no liburing_N.csv for N = 2" in done.stderr and "Traceback" not in done.stderr,
          f"the message names what is missing: {done.stderr}")


def test_bad_inputs_end_with_a_message(zcal, root):
    """Each bad file or option: exit 2, one line that names it, nothing
    printed on stdout, no traceback."""
    tables = root / "tests" / "data" / "tables"
    good_zcal = (tables / "discard_zcal_8.csv").read_text()
    good_ref = (tables / "discard_liburing_5.csv").read_text()
    cases = [
        ("a number that is not one", good_ref + "liburing,uring_send_zc,2048,0,abc,99.8,\n",
         [], r"liburing_2\.csv:\d+: could not convert string to float: 'abc'"),
        ("a table without the judged columns", "path,method,size\nliburing,copy,1024\n", [],
         r"liburing_2\.csv:1: not a samples table: no column mb_per_s, cpu_pct"),
        ("a row short of cells", good_ref + "liburing,uring_send_zc,2048\n", [],
         r"liburing_2\.csv:\d+: 3 cells where the header has 7"),
        ("an empty table", "", [], r"liburing_2\.csv: no samples table in it \(empty\)"),
        ("a table without the baseline", "path,method,size,repeat,mb_per_s,cpu_pct,copied_pct\n"
         "liburing,uring_send_zc,1024,0,1000,99,\n", [],
         r"liburing_2\.csv: no size at which both uring_send_zc and uring_send were probed"),
        ("a traffic mix that is not one", good_ref, ["--traffic", "16K"],
         r"--traffic 16K: '16K' is not SIZE:WEIGHT"),
        ("an option zcal analyze refuses", good_ref, ["--analyze-args", "--objective bogus"],
         r"zcal analyze .*zcal_1\.csv: exit 2: --objective: bogus"),
        ("no zcal", good_ref, ["--zcal", "/nonexistent/zcal"],
         r"--zcal /nonexistent/zcal: cannot run it: No such file or directory"),
    ]
    for what, second_ref, options, expected in cases:
        with tempfile.TemporaryDirectory(prefix="zcal-regret-test-") as tmp:
            for n in (1, 2):
                Path(tmp, f"zcal_{n}.csv").write_text(good_zcal)
            Path(tmp, "liburing_1.csv").write_text(good_ref)
            Path(tmp, "liburing_2.csv").write_text(second_ref)
            done = subprocess.run([sys.executable, str(root / "bench" / "regret.py"), "--zcal", zcal,
                                   "--from", tmp, *options],
                                  capture_output=True, text=True, timeout=100)
        check(done.returncode == 2, f"{what}: exit {done.returncode}\n{done.stderr}")
        check(re.search(expected, done.stderr) and "Traceback" not in done.stderr,
              f"{what}: the message names it: {done.stderr}")
        check(done.stdout == "", f"{what}: nothing of a report printed: {done.stdout[:200]}")


def main():
    zcal, root = sys.argv[1], Path(sys.argv[2])
    sys.path.insert(0, str(root / "bench"))
    sys.dont_write_bytecode = True  # no __pycache__ in the source tree
    import regret  # noqa: E402 (found through the path above)
    test_target_rule(regret)
    test_resolution(regret)
    test_judging_recorded_runs(zcal, root)
    test_a_folder_without_runs_is_refused(zcal, root)
    test_bad_inputs_end_with_a_message(zcal, root)
    print("regret bench: target rule and recorded runs OK")


if __name__ == "__main__":
    main()
