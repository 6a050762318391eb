#!/usr/bin/env python3
"""The benches a user runs by hand (bench/load.py, bench/calibration_seconds.py)
refuse a bad option or a missing tool with one line naming it and a non-zero
exit, before they measure anything, never with a traceback. (bench/regret.py's
own refusals are in regret_bench_test.py.)

usage: bench_errors_test.py ZCAL SOURCE_ROOT"""
import re
import subprocess
import sys
from pathlib import Path


def main():
    zcal, root = sys.argv[1], Path(sys.argv[2])
    bench = root / "bench"
    cases = [
        ("calibration_seconds.py", ["--budgets", "x"], 2,
         r"--budgets x: seconds separated by commas"),
        ("calibration_seconds.py", ["--budgets", "3,0"], 2,
         r"--budgets 3,0: each from above 0 to 3600 seconds"),
        ("calibration_seconds.py", ["--rounds", "0"], 2, r"--rounds: at least 1"),
        ("calibration_seconds.py", ["--zcal", "/nonexistent/zcal", "--rounds", "1",
                                    "--budgets", "1"], 1,
         r"--zcal /nonexistent/zcal: cannot run it: No such file or directory"),
        ("load.py", ["--rounds", "0", "--zcal", zcal], 2, r"--rounds: at least 1"),
        ("load.py", ["--seconds", "0", "--zcal", zcal], 2, r"--seconds: above 0"),
        ("load.py", ["--zcal", "/nonexistent/zcal"], 2,
         r"/nonexistent/zcal: not an executable \(--zcal"),
        ("load.py", ["--zcal", zcal, "--build", "/nonexistent"], 2,
         r"/nonexistent/bench/fidelity_ref_sendmsg: not an executable \(--build /nonexistent"),
    ]
    failed = 0
    for script, options, code, expected in cases:
        done = subprocess.run([sys.executable, str(bench / script), *options],
                              capture_output=True, text=True, timeout=60)
        what = f"{script} {' '.join(options)}"
        if done.returncode != code or not re.search(expected, done.stderr) \
                or "Traceback" in done.stderr or done.stdout:
            print(f"FAIL: {what}: exit {done.returncode} (want {code})\n"
                  f"stderr: {done.stderr}\nstdout: {done.stdout[:300]}")
            failed += 1
    if failed:
        sys.exit(1)
    print(f"bench refusals: {len(cases)} cases OK")


if __name__ == "__main__":
    main()
