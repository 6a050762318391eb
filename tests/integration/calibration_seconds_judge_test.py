#!/usr/bin/env python3
"""What bench/calibration_seconds.py counts as a result at the planner's
stated resolution, and how it reads the probes' scatter, on hand-made
results (nothing is measured here). At the resolution: a model
interval within 1/8, or a regret_excess within 0.05 pp; a per-size bracket
within 1/8 with decisive ends or that excess; and a per-size `never`, which
has no bracket, by its excess alone, as the planner judges it.

usage: calibration_seconds_judge_test.py SOURCE_ROOT"""
import importlib.util
import math
import random
import sys
from pathlib import Path


def load(root):
    spec = importlib.util.spec_from_file_location(
        "calibration_seconds", Path(root, "bench", "calibration_seconds.py"))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def result(verdict, threshold, low, high, level, rule, excess, sizes=()):
    return {"verdict": verdict, "threshold_bytes": threshold,
            "interval": {"low_bytes": low, "high_bytes": high, "level": level},
            "regret_excess": excess, "rule": rule,
            "sizes": [{"size": s, "decisive": d} for s, d in sizes]}


def main():
    bench = load(sys.argv[1])
    failures = []

    def expect(name, r, want):
        got = bench.judged(r)["resolved"]
        if got != want:
            failures.append(f"{name}: resolved {got}, expected {want}")

    expect("model within 1/8", result("threshold", 8192, 7600, 8800, 0.95, "model", 0.01), True)
    expect("model at 20 %", result("threshold", 8192, 6800, 9800, 0.95, "model", 0.01), False)
    expect("model wide but cheap", result("threshold", 8192, 4096, 16384, 0.95, "model", 0.0004),
           True)
    expect("model never, cheap", result("never", None, 65507, None, 0.95, "model", 0.0), True)
    expect("per-size bracket 1/8, decisive ends",
           result("threshold", 8192, 7168, 8192, 0, "per_size", 0.01,
                  [(7168, True), (8192, True)]), True)
    expect("per-size bracket 1/8, ends within noise, dear",
           result("threshold", 8192, 7168, 8192, 0, "per_size", 0.01,
                  [(7168, False), (8192, True)]), False)
    expect("per-size bracket 1/2, cheap",
           result("threshold", 8192, 4096, 8192, 0, "per_size", 0.0), False)
    expect("per-size never, cheap", result("never", None, 65507, None, 0, "per_size", 0.0), True)
    expect("per-size never, dear", result("never", None, 65507, None, 0, "per_size", 0.003),
           False)
    expect("per-size never, no excess", result("never", None, 65507, None, 0, "per_size", None),
           False)
    judged_failures = len(failures)

    # The probes' scatter: between repeats where copy has them at three
    # sizes, else between neighbouring sizes of a grid probed once a size.
    def copy_at(size, cpu, samples=1, spread=0.0):
        return {"size": size, "baseline": {"cpu_ns_per_byte": cpu, "samples": samples,
                                           "cpu_ns_per_byte_spread": spread}}

    def near(name, got, want, tolerance):
        if got is None or abs(got - want) > tolerance:
            failures.append(f"scatter {name}: {got}, expected {want} +- {tolerance}")

    grid = [round(1024 * 2 ** (k / 3)) for k in range(19)]
    smooth = [0.03 + 2180 / size for size in grid]
    near("repeats", bench.scatter_of([copy_at(s, 1.0, 2, 0.04) for s in grid[:3]]), 0.04, 1e-9)
    near("a smooth curve probed once", bench.scatter_of([copy_at(s, c) for s, c in
                                                         zip(grid, smooth)]), 0.0, 0.005)
    # Independent noise of 5 % (log-normal, seeded) on a finer grid, whose
    # many sizes pin the median down: read back as about 5 %.
    rng = random.Random(7)
    fine = [round(1024 * 2 ** (k / 30)) for k in range(181)]
    noisy = [(0.03 + 2180 / size) * math.exp(rng.gauss(0, 0.05)) for size in fine]
    near("5 % noise", bench.scatter_of([copy_at(s, c) for s, c in zip(fine, noisy)]), 0.05, 0.01)
    # A 30 % step at one size moves one or two bends, not the median.
    stepped = [c * (1.3 if s >= 8192 else 1.0) for s, c in zip(grid, smooth)]
    near("a step", bench.scatter_of([copy_at(s, c) for s, c in zip(grid, stepped)]), 0.0, 0.005)
    if bench.scatter_of([copy_at(s, 1.0) for s in grid[:3]]) is not None:
        failures.append("scatter of three sizes probed once: expected none")

    for f in failures:
        print("FAIL:", f)
    print(f"{10 - judged_failures} of 10 judged as the planner judges; "
          f"{5 - (len(failures) - judged_failures)} of 5 scatter figures as expected")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
