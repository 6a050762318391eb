#!/usr/bin/env python3
"""A full calibration of the discard path with all five methods:
runs `zcal calibrate --path discard --json` ROUNDS times for each budget,
the budgets interleaved (side by side under the same load), and prints per
run the probes, the wall seconds (of the whole command, as a user waits for
it, and the calibration's own), the load average, the probes' scatter (copy's
CPU per byte, relative: between repeats, or between neighbouring sizes where
each was probed once, `scatter_of`; this VM's neighbours move it from a few
percent to over 30 %), and per zerocopy method
its verdict, threshold, 95 % interval (relative to the threshold), what the
threshold may cost over the best one (regret_excess, 95 %), the rule, and
why the calibration stopped probing it (the JSON's stop: at the resolution,
limited by noise, its probes spent, or the budget), and
whether it reached the planner's stated resolution (model: interval within
1/8 of the threshold, or regret_excess within 0.05 percentage points;
per-size rule: the bracket of probed sizes within 1/8, and both of its
comparisons decisive or regret_excess within 0.05 pp; without a bracket,
as `never`, regret_excess within 0.05 pp).
Ends with a summary per budget. A larger budget that changes nothing shows that the
planner, not the budget, ends the calibration. Several --zcal binaries
(comma-separated: two builds of one change) run interleaved too, and the
summary is per binary and budget.

--path loopback times the calibration of loopback instead, which ends
once the kernel's copies are measured, far inside its budget: the duration
tests/integration/calibrate_cli_test.cc prints but does not assert.

--depth 1,4,16,stream calibrates those depth classes in each run (the
agent's default classes) and judges each class's methods; a method not
probed at a class (its neighbours give its answer) counts as stopped for a
stated reason.

usage: bench/calibration_seconds.py [--zcal BUILD/agent/cli/zcal[,OTHER]] [--rounds N]
                                    [--budgets 5,30] [--path discard|loopback]
                                    [--depth LIST] [--json FILE]
"""
import argparse
import json
import math
import os
import statistics
import subprocess
import sys
import time

RESOLUTION = 0.125          # PlannerOptions::resolution
REGRET_RESOLUTION = 0.0005  # PlannerOptions::regret_resolution
ZEROCOPY = ["msg_zerocopy", "uring_send_zc", "uring_send_zc_fixed"]


def scatter_of(copy_sizes):
    """How much the machine scattered during a run, as copy's CPU per byte
    relative to its median (the probes' own noise, which decides how far
    the planner can narrow anything in the budget). Where copy was probed
    more than once at three sizes or more: the median over those sizes of
    the spread between repeats. Where it was probed once a size (the
    discard path's grid of three sizes per octave): from neighbouring
    sizes, each size's log CPU per byte against the mean of its two
    neighbours' (a smooth curve's own bend there is a few tenths of a
    percent), their median absolute difference as a standard deviation
    (x 1.4826, over sqrt(1.5) for the neighbours' noise): a step in the
    curve moves one or two of them, not the median. None: too few sizes."""
    repeated = [c["baseline"]["cpu_ns_per_byte_spread"] / c["baseline"]["cpu_ns_per_byte"]
                for c in copy_sizes
                if c["baseline"]["samples"] >= 2 and c["baseline"]["cpu_ns_per_byte"] > 0]
    if len(repeated) >= 3:
        return statistics.median(repeated)
    logs = [math.log(c["baseline"]["cpu_ns_per_byte"])
            for c in sorted(copy_sizes, key=lambda c: c["size"])
            if c["baseline"]["cpu_ns_per_byte"] > 0]
    if len(logs) < 5:
        return statistics.median(repeated) if repeated else None
    bends = [abs(logs[i] - (logs[i - 1] + logs[i + 1]) / 2) for i in range(1, len(logs) - 1)]
    return 1.4826 * statistics.median(bends) / math.sqrt(1.5)


def run_once(zcal, budget, path, depth=None):
    load = os.getloadavg()[0]
    start = time.monotonic()
    try:
        done = subprocess.run([zcal, "calibrate", "--path", path, "--json",
                               "--budget", str(budget)] + (["--depth", depth] if depth else []),
                              capture_output=True, text=True, check=False)
    except OSError as error:
        sys.exit(f"calibration_seconds.py: --zcal {zcal}: cannot run it: {error.strerror}")
    wall = time.monotonic() - start
    if done.returncode != 0:
        sys.exit(f"zcal calibrate --path {path} failed ({done.returncode}): "
                 f"{done.stderr.strip()}")
    doc = json.loads(done.stdout)
    copy_sizes = (doc["paths"][path]["methods"].get("msg_zerocopy") or {}).get("sizes", [])
    run = {"zcal": zcal, "budget": budget, "wall_seconds": wall, "load": load,
           "seconds": doc["timings"]["duration_seconds"],
           "probes": doc["timings"]["probes_run"], "methods": {},
           "scatter": scatter_of(copy_sizes)}
    classes = doc["depths"] if depth else [doc]
    for c in classes:
        for name in ZEROCOPY:
            key = f"{name} at {c['depth']}" if depth else name
            if name in c.get("not_probed", {}):
                # Its neighbours' answer holds, for the reason given: the
                # planner stopped for a stated reason.
                run["methods"][key] = {
                    "verdict": "not probed", "threshold": None, "low": None, "high": None,
                    "level": None, "half": None, "excess": None, "rule": None,
                    "resolved": True, "exceptions": 0, "rule_detail": c["not_probed"][name]}
                continue
            r = c["paths"].get(path, {}).get("methods", {}).get(name)
            if r is not None:
                run["methods"][key] = judged(r)
    return run


def judged(r):
    """A zerocopy method's result: its verdict, interval, and whether it
    reached the planner's stated resolution."""
    t = r.get("threshold_bytes")
    interval = r.get("interval") or {}
    low, high = interval.get("low_bytes"), interval.get("high_bytes")
    half = None
    if t and low and high and interval.get("level", 0) > 0:
        half = max(t / low, high / t) - 1
    excess = r.get("regret_excess")
    exceptions = len((r.get("model") or {}).get("exceptions") or [])
    if r.get("rule") == "per_size":
        # The per-size rule's interval is the bracket between the
        # probed size below the threshold and it (level 0): at the
        # planner's resolution when it is within 1/8 and either both
        # comparisons at its ends are decisive or the threshold costs
        # at most 0.05 pp over the best (the per-size bootstrap).
        ends = [c for c in r.get("sizes", []) if c["size"] in (low, t)]
        # (t - low) / t, as the planner bisects: 7168..8192 is 1/8.
        bracket = (1 - low / t) if t and low and low <= t else None
        cheap = excess is not None and excess <= REGRET_RESOLUTION
        decided = (len(ends) == 2 and all(c["decisive"] for c in ends)) or cheap
        # A never (or a threshold with no probed size below it) has no
        # bracket: the planner holds it at the resolution when it costs at
        # most 0.05 pp over the best (AtStatedResolution,
        # calibrator/src/planner_stop.cc), and so does this judge.
        resolved = (bracket <= RESOLUTION and decided) if bracket is not None else cheap
    else:
        resolved = ((half is not None and half <= RESOLUTION) or
                    (excess is not None and excess <= REGRET_RESOLUTION))
    # Why the calibration stopped probing it (absent from builds before the
    # planner said so): at the resolution, limited by noise, its probes
    # spent, or the budget.
    stop = r.get("stop") or {}
    return {
        "verdict": r["verdict"], "threshold": t, "low": low, "high": high,
        "level": interval.get("level"), "half": half, "excess": excess,
        "rule": r.get("rule"), "resolved": resolved, "exceptions": exceptions,
        "rule_detail": r.get("rule_detail", ""), "stop": stop.get("reason"),
        "stop_detail": stop.get("detail", "")}


def stated(m):
    """At the resolution, or stopped for a stated reason other than the
    budget (the noise, a method its neighbours answer for)."""
    return m["resolved"] or m.get("stop") == "noise"


def describe(m):
    if m["half"] is not None:
        interval = (f"[{m['low']}, {m['high']}] "
                    f"-{100 * (1 - m['low'] / m['threshold']):.0f}/"
                    f"+{100 * (m['high'] / m['threshold'] - 1):.0f} %")
    elif m["low"] is not None:
        interval = f"probed sizes {m['low']}..{m['high']} (per size, no level)"
    else:
        interval = "none"
    excess = "-" if m["excess"] is None else f"{100 * m['excess']:.3f} pp"
    return (f"{m['verdict']:<12} {str(m['threshold']):>6}  {interval:<32} "
            f"excess {excess:<10} {m['rule'] or '-':<8} "
            f"{'at resolution' if m['resolved'] else ''}"
            f"{' stop: ' + m['stop'] if m.get('stop') else ''}"
            f"{' (' + str(m['exceptions']) + ' exception(s) in the model)' if m['exceptions'] else ''}")


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--zcal", default="build/agent/cli/zcal")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--budgets", default="5,30")
    parser.add_argument("--path", choices=["discard", "loopback"], default="discard")
    parser.add_argument("--depth", help="depth classes, as zcal calibrate --depth takes them "
                        "(e.g. 1,4,16,stream): every class's methods are judged")
    parser.add_argument("--json", help="also write every run here")
    args = parser.parse_args()
    try:
        budgets = [float(b) for b in args.budgets.split(",")]
    except ValueError:
        parser.error(f"--budgets {args.budgets}: seconds separated by commas, e.g. 3,5")
    if any(not 0 < b <= 3600 for b in budgets):
        parser.error(f"--budgets {args.budgets}: each from above 0 to 3600 seconds")
    if args.rounds < 1:
        parser.error("--rounds: at least 1")
    zcals = args.zcal.split(",")
    runs = []
    for r in range(args.rounds):
        for zcal, budget in [(z, b) for z in zcals for b in budgets]:
            run = run_once(zcal, budget, args.path, args.depth)
            runs.append(run)
            print(f"round {r + 1}, {zcal if len(zcals) > 1 else ''} budget {budget:g} s: "
                  f"{run['probes']} probes, "
                  f"{run['seconds']:.2f} s calibrating ({100 * run['seconds'] / budget:.0f} % "
                  f"of the budget), {run['wall_seconds']:.2f} s wall; "
                  f"load average {run['load']:.1f}; probe scatter "
                  f"{'-' if run['scatter'] is None else format(100 * run['scatter'], '.0f') + ' %'}")
            for name, m in run["methods"].items():
                print(f"  {name:<26} {describe(m)}")
                if (m["rule"] == "per_size" or m["verdict"] == "not probed") and m["rule_detail"]:
                    print(f"  {'':<26} ({m['rule_detail'][:110]})")
                if m.get("stop") == "noise":
                    print(f"  {'':<26} ({m['stop_detail'][:160]})")
    print("\nsummary (median [min, max] over the rounds)")
    for zcal, budget in [(z, b) for z in zcals for b in budgets]:
        mine = [x for x in runs if x["budget"] == budget and x["zcal"] == zcal]
        if len(zcals) > 1:
            print(zcal)

        def spread(values, fmt):
            return (f"{fmt.format(statistics.median(values))} "
                    f"[{fmt.format(min(values))}, {fmt.format(max(values))}]")
        scatters = [100 * x["scatter"] for x in mine if x["scatter"] is not None]
        whole = sum(all(m["resolved"] for m in x["methods"].values()) for x in mine)
        accounted = sum(all(stated(m) for m in x["methods"].values()) for x in mine)
        within_two = sum(x["wall_seconds"] <= 2.0 for x in mine)
        print(f"budget {budget:g} s: probes {spread([x['probes'] for x in mine], '{:.0f}')}, "
              f"wall s {spread([x['wall_seconds'] for x in mine], '{:.2f}')}, "
              f"probe scatter {spread(scatters, '{:.0f} %') if scatters else '-'}; "
              f"every method at the stated resolution in {whole} of {len(mine)} runs, "
              f"at it or stopped by the noise in {accounted}, "
              f"within 2 s of wall in {within_two}")
        names = sorted({k for x in mine for k in x["methods"]},
                       key=lambda k: [x for x in runs[0]["methods"]].index(k)
                       if k in runs[0]["methods"] else 99)
        for name in names:
            ms = [x["methods"][name] for x in mine if name in x["methods"]]
            halves = [m["half"] for m in ms if m["half"] is not None]
            thresholds = [m["threshold"] for m in ms if m["threshold"]]
            resolved = sum(m["resolved"] for m in ms)
            per_size = sum(m["rule"] == "per_size" for m in ms)
            stops = {}
            for m in ms:
                if m.get("stop"):
                    stops[m["stop"]] = stops.get(m["stop"], 0) + 1
            print(f"  {name:<26} thresholds {thresholds}; interval half-width "
                  f"{spread([100 * h for h in halves], '{:.0f} %') if halves else '-'}; "
                  f"at the stated resolution in {resolved} of {len(ms)}; "
                  f"per-size rule in {per_size}"
                  + (f"; probes ended: " + ", ".join(f"{k} {v}" for k, v in sorted(stops.items()))
                     if stops else ""))
    if args.json:
        with open(args.json, "w", encoding="utf-8") as out:
            json.dump(runs, out, indent=2)


if __name__ == "__main__":
    main()
