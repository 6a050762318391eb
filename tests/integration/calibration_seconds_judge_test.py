#!/usr/bin/env python3
"""What bench/calibration_seconds.py counts as a result at the planner's
stated resolution, on hand-made results (nothing is measured here): a model
interval within 1/8, or a regret_excess within 0.05 pp; a per-size bracket
within 1/8 with decisive ends or that excess; and a per-size `never`, which
has no bracket, by its excess alone, as the planner judges it.

usage: calibration_seconds_judge_test.py SOURCE_ROOT"""
import importlib.util
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
    for f in failures:
        print("FAIL:", f)
    print(f"{10 - len(failures)} of 10 judged as the planner judges")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
