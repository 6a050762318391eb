#!/usr/bin/env python3
"""The same answer twice: N calibrations of the discard path back to back.

Runs `zcal calibrate --path discard --json [--budget S] [--depth LIST]` N
times in a row (default 10; budget and classes: the command's defaults,
5 s and 1, 4, 16 and stream) and judges, per zerocopy method and depth
class, how far the answers scatter from run to run. Needs root (the discard
path sends into a network namespace of its own); --from re-judges a
recorded file without running anything.

Printed per run: the wall seconds, the probes, the load (the load average
before the run, and the share of the CPUs other processes took during it:
the calibration's host_load, busy less its own), and per (method, class) the
verdict, threshold, rule, confidence and, when the JSON has one, why the
planner stopped probing the method ("stop": resolution, noise, probes or
budget, with its detail).

Printed per (method, class), over the runs:
  thresholds   each run's threshold_bytes (an `always` verdict's is the
               smallest size, where zerocopy begins), their median and
               max/min, and each run's threshold against the median;
  within       how many runs' thresholds lie within x1.25 of the median
               (median/1.25 <= t <= 1.25 median); the median orders a
               never above every threshold, so where half the runs or more
               say never it is never and the runs that say never are within
               it; otherwise a run without a threshold (never, inconclusive,
               not probed) is outside. When no run has a threshold, the runs
               with the most common verdict count;
  verdicts     the kinds counted: threshold, always, never, inconclusive,
               not probed (the class's neighbours answered for it);
  flip         whether the runs hold both an `always` and a threshold above
               16 KiB (any two runs, not only neighbours);
  hysteresis   what the agent would have published had it calibrated these
               runs in this order, replayed through its own rule
               (calibrator::ApplyHysteresis, by the helper
               BUILD/bench/hysteresis_replay; options as configs/default.yaml's
               `hysteresis:`, threshold_tolerance 0.5 and high_confidence 0.9
               unless given): per run P published, C confirmed, K kept (the
               fresh result disagrees; it may become the candidate), D
               dropped (not probed at this class: readers get the stream
               class's entry), - nothing; and how many runs changed what a
               reader of the class is given (verdict, threshold or reason;
               the first run does not count);
  stop         the planner's stop reasons counted, when the JSON has them.

Then one line per target of issue 31 (per method and class, every class):
  "threshold within x1.25 of the median in 9 of 10": met or not met, and
  which; with N runs other than 10, in at least 90 % of them (rounded up);
  "no always <-> >16 KiB flip": met or not met, and which.
Exit status 0 when it ran, whatever the figures; 2 with one line on stderr
for a bad option, a missing binary, a recorded file it cannot use, or
measuring without root; 1 when a calibration fails (its message).

Figures are those of the machine as it was: on a shared host, a run during
which other processes took more than 10 % of the CPUs is marked "busy".

Out-of-sample regret (the other half of the target) is bench/regret.py's:
run it in the same minutes, right after this bench, on the same binary:
    sudo python3 bench/regret.py --zcal build/agent/cli/zcal
or pass --regret here, which runs it afterwards (about 3 minutes with its
default 4 runs) and prints its summary. Its target: zcal within 0.5 pp of
the best single threshold in hindsight and below every fixed policy in
every pair.

usage: bench/stability.py [--zcal BUILD/agent/cli/zcal] [--replay HELPER] [--runs N]
                          [--budget S] [--depth LIST] [--threshold-tolerance X]
                          [--high-confidence Y] [--json FILE] [--from FILE] [--regret]
"""
import argparse
import json
import math
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

PATH = "discard"
ZEROCOPY = ["msg_zerocopy", "uring_send_zc", "uring_send_zc_fixed"]
KINDS = ["threshold", "always", "never", "inconclusive", "not probed", "absent"]
WITHIN = 1.25          # the target's factor around the median
SHARE = 0.9            # of the runs, rounded up: 9 of 10
FLIP_BYTES = 16 * 1024  # an `always` and a threshold above this in one series
BUSY_SHARE = 0.10      # other processes' share of the CPUs that marks a run busy
# What a run keeps of each method's result: what is judged and replayed.
# The per-size comparisons and the model's fits (most of a document's
# 300 KB) are zcal report's, not this bench's.
KEPT = ("verdict", "threshold_bytes", "reason", "confidence", "rule", "rule_detail",
        "interval", "regret_excess", "detail", "stop")
LETTER = {"published": "P", "confirmed": "C", "kept": "K", "dropped": "D",
          "not probed": "-", "absent": "-"}


class BenchError(Exception):
    """An option, binary or file the bench cannot use: one line, exit 2."""


class Parser(argparse.ArgumentParser):
    def error(self, message):
        # One line, not argparse's usage block, as the other benches.
        print(f"stability.py: {message} (see bench/stability.py --help)", file=sys.stderr)
        sys.exit(2)


def trimmed(doc):
    """The run's document with what this bench judges: every class's
    verdicts, not-probed methods and stop reasons, the timings and load."""
    classes = doc.get("depths") or [dict(doc, depth=doc.get("depth", "stream"))]
    out = {key: doc[key] for key in ("timings", "host_load", "objective", "tolerance",
                                     "margin", "buffers", "probes") if key in doc}
    out["depths"] = []
    for c in classes:
        paths = {}
        for path, entry in (c.get("paths") or {}).items():
            paths[path] = {"methods": {
                name: {k: r[k] for k in KEPT if k in r}
                for name, r in (entry.get("methods") or {}).items()}}
        out["depths"].append({"depth": c.get("depth", "stream"),
                              "not_probed": c.get("not_probed") or {}, "paths": paths})
    return out


def results(doc):
    """{(method, class): result} of one run, in the classes' order; a
    method not probed at a class is {"verdict": "not probed"}."""
    out = {}
    for c in doc["depths"]:
        methods = c["paths"].get(PATH, {}).get("methods", {})
        skipped = c.get("not_probed") or {}
        depth = c.get("depth", "stream")
        for name in ZEROCOPY:
            if name in skipped:
                out[(name, depth)] = {"verdict": "not probed", "detail": skipped[name]}
            else:
                out[(name, depth)] = methods.get(name, {"verdict": "absent"})
    return out


def other_share(doc):
    load = doc.get("host_load") or {}
    if "busy_share" not in load or "own_share" not in load:
        return None
    return max(0.0, load["busy_share"] - load["own_share"])


def run_once(zcal, budget, depth):
    load = os.getloadavg()[0]
    command = [zcal, "calibrate", "--path", PATH, "--json"]
    command += (["--budget", f"{budget:g}"] if budget is not None else [])
    command += (["--depth", depth] if depth else [])
    start = time.monotonic()
    try:
        done = subprocess.run(command, capture_output=True, text=True, check=False)
    except OSError as error:
        raise BenchError(f"--zcal {zcal}: cannot run it: {error.strerror}") from None
    wall = time.monotonic() - start
    if done.returncode != 0:
        lines = [line for line in done.stderr.splitlines() if line.strip()]
        message = lines[-1] if lines else "(nothing on stderr)"
        if done.returncode == 2:
            # zcal's bad-arguments status: a --depth or --budget it refuses.
            raise BenchError(f"{' '.join(command[1:])}: {message}")
        print(f"stability.py: {' '.join(command[1:])} failed (exit {done.returncode}): "
              f"{message}", file=sys.stderr)
        sys.exit(1)
    try:
        doc = json.loads(done.stdout)
    except json.JSONDecodeError as error:
        raise BenchError(f"{' '.join(command)}: its output is not JSON ({error})") from None
    return {"wall_seconds": wall, "load_average": load, "document": trimmed(doc)}


def fmt_bytes(value):
    return "-" if value is None else str(value)


def print_run(index, count, run):
    doc = run["document"]
    timings = doc.get("timings", {})
    share = other_share(doc)
    busy = share is not None and share > BUSY_SHARE
    print(f"run {index} of {count}: {run['wall_seconds']:.2f} s wall "
          f"({timings.get('duration_seconds', 0):.2f} s calibrating), "
          f"{timings.get('probes_run', '?')} probes; load average {run['load_average']:.2f}, "
          f"other processes {'-' if share is None else f'{100 * share:.0f} %'} of the CPUs"
          f"{' (busy)' if busy else ''}")
    for (name, depth), r in results(doc).items():
        confidence = r.get("confidence")
        line = (f"  {name:<20} {depth:>6}  {r['verdict']:<12} "
                f"{fmt_bytes(r.get('threshold_bytes')):>6}  {r.get('rule') or '-':<8} "
                f"{'' if confidence is None else f'confidence {confidence:.2f}'}")
        stop = r.get("stop")
        if stop:
            line += f"  stop {stop.get('reason', '?')}: {stop.get('detail', '')}"
        if r["verdict"] == "not probed":
            line += f"  ({r['detail']})"
        print(line.rstrip())


def judge_series(rs):
    """The figures of one (method, class) over the runs, in run order."""
    thresholds = [r.get("threshold_bytes") if r["verdict"] in ("threshold", "always") else None
                  for r in rs]
    kinds = Counter(r["verdict"] for r in rs)
    given = [t for t in thresholds if t]
    out = {"thresholds": thresholds,
           "kinds": {k: kinds[k] for k in KINDS if kinds[k]},
           "needed": math.ceil(SHARE * len(rs) - 1e-9)}
    # A never is a threshold above every size: ordered after all of them, a
    # series that says never in half its runs or more has never for its
    # median, and its runs that say never are the ones at it.
    if given and statistics.median(sorted(given) + [math.inf] * kinds["never"]) == math.inf:
        out["median"] = out["max_over_min"] = None
        out["against_median"] = [None] * len(rs)
        out["most_common"] = "never"
        out["median_never"] = True
        inside = [r["verdict"] == "never" for r in rs]
    elif given:
        median = statistics.median(sorted(given) + [math.inf] * kinds["never"])
        out["median"] = median
        out["max_over_min"] = max(given) / min(given)
        out["against_median"] = [None if t is None else t / median for t in thresholds]
        inside = [t is not None and median / WITHIN <= t <= median * WITHIN
                  for t in thresholds]
    else:
        # No threshold anywhere: a stable series repeats its verdict.
        common = kinds.most_common(1)[0][0]
        out["median"] = out["max_over_min"] = None
        out["against_median"] = [None] * len(rs)
        out["most_common"] = common
        inside = [r["verdict"] == common for r in rs]
    out["within"] = sum(inside)
    out["outside_runs"] = [i + 1 for i, ok in enumerate(inside) if not ok]
    always = [i + 1 for i, r in enumerate(rs) if r["verdict"] == "always"]
    above = [i + 1 for i, r in enumerate(rs)
             if r["verdict"] == "threshold" and r.get("threshold_bytes", 0) > FLIP_BYTES]
    out["flip"] = bool(always and above)
    out["flip_runs"] = {"always": always, "above_16KiB": above} if out["flip"] else None
    stops = Counter((r.get("stop") or {}).get("reason") for r in rs if r.get("stop"))
    out["stops"] = dict(stops)
    return out


def replay(helper, runs, tolerance, confidence, source):
    """The hysteresis helper's series, keyed by (method, class); `source`
    names the runs in its errors."""
    with tempfile.NamedTemporaryFile("w", suffix=".json", prefix="zcal-stability-") as tmp:
        json.dump([run["document"] for run in runs], tmp)
        tmp.flush()
        command = [helper, tmp.name]
        if tolerance is not None:
            command += ["--threshold-tolerance", f"{tolerance:g}"]
        if confidence is not None:
            command += ["--high-confidence", f"{confidence:g}"]
        try:
            done = subprocess.run(command, capture_output=True, text=True, check=False)
        except OSError as error:
            raise BenchError(f"--replay {helper}: cannot run it: {error.strerror}") from None
    if done.returncode != 0:
        lines = done.stderr.strip().splitlines()
        if not lines:
            raise BenchError(f"{helper}: exit {done.returncode}")
        # The helper names the temporary file and an index: name the run.
        message = re.sub(r"^hysteresis_replay: " + re.escape(tmp.name) + r"\[(\d+)\]",
                         lambda m: f"{source}: run {int(m.group(1)) + 1}", lines[-1])
        raise BenchError(message)
    replayed = json.loads(done.stdout)
    return replayed["options"], {(s["method"], s["depth"]): s for s in replayed["series"]
                                 if s["path"] == PATH}


def summarize(runs, replayed):
    per_run = [results(run["document"]) for run in runs]
    keys = []
    for rs in per_run:
        keys += [k for k in rs if k not in keys]
    summary = {}
    for key in keys:
        rs = [r.get(key, {"verdict": "absent"}) for r in per_run]
        s = judge_series(rs)
        series = replayed.get(key)
        if series:
            s["hysteresis"] = {
                "decisions": [e["decision"] for e in series["runs"]],
                "readers": [e["readers"] for e in series["runs"]],
                "changes": series["changes"],
                "changed_runs": [i + 1 for i, e in enumerate(series["runs"]) if e["changed"]]}
        summary[key] = s
    return summary


def answer(r):
    if r is None:
        return "nothing"
    return r["verdict"] + (f" {r['threshold_bytes']}" if r.get("threshold_bytes") else "")


def print_summary(summary, runs, options):
    n = len(runs)
    print(f"\nover {n} runs, per method and depth class (hysteresis: threshold_tolerance "
          f"{options['threshold_tolerance']:g}, high_confidence {options['high_confidence']:g})")
    for (name, depth), s in summary.items():
        print(f"{name} at {depth}")
        print(f"  thresholds   {' '.join(fmt_bytes(t) for t in s['thresholds'])}")
        if s["median"] is not None:
            ratios = " ".join("-" if x is None else f"{x:.2f}" for x in s["against_median"])
            print(f"  vs median    {ratios}  (median {s['median']:g}, "
                  f"max/min {s['max_over_min']:.2f})")
            rule = "of the median"
        elif s.get("median_never"):
            rule = "(the median is never, a threshold above every size: runs that say never)"
        else:
            rule = f"(no threshold in any run: runs that say {s['most_common']})"
        outside = f" (outside: run {', '.join(map(str, s['outside_runs']))})" \
            if s["outside_runs"] else ""
        print(f"  within x{WITHIN:g} {rule}: {s['within']} of {n}{outside}")
        print(f"  verdicts     {', '.join(f'{k} {v}' for k, v in s['kinds'].items())}")
        if s["flip"]:
            runs_of = {k: ", ".join(map(str, v)) for k, v in s["flip_runs"].items()}
            print(f"  flip         always (run {runs_of['always']}) and a threshold above "
                  f"16 KiB (run {runs_of['above_16KiB']})")
        h = s.get("hysteresis")
        if h:
            changes = "; ".join(f"run {i}: {answer(h['readers'][i - 2])} -> "
                                f"{answer(h['readers'][i - 1])}" for i in h["changed_runs"])
            print(f"  hysteresis   {' '.join(LETTER[d] for d in h['decisions'])}: "
                  f"{h['changes']} change(s) of what readers get"
                  f"{' (' + changes + ')' if changes else ''}")
        if s["stops"]:
            print(f"  stop         {', '.join(f'{k} {v}' for k, v in sorted(s['stops'].items()))}")


def targets(summary, runs):
    n = len(runs)
    short = [f"{name} at {depth}: {s['within']} of {n}"
             for (name, depth), s in summary.items() if s["within"] < s["needed"]]
    flips = [f"{name} at {depth}" for (name, depth), s in summary.items() if s["flip"]]
    needed = math.ceil(SHARE * n - 1e-9)
    changes = sum(s.get("hysteresis", {}).get("changes", 0) for s in summary.values())
    busy = [i + 1 for i, run in enumerate(runs)
            if (other_share(run["document"]) or 0) > BUSY_SHARE]
    print(f"\nhysteresis: {changes} change(s) of what readers get over {len(summary)} "
          f"(method, class) series of {n} runs")
    if busy:
        print(f"busy: other processes took more than {100 * BUSY_SHARE:.0f} % of the CPUs in "
              f"run {', '.join(map(str, busy))}: figures of a shared machine")
    print(f"target: threshold within x{WITHIN:g} of the median in {needed} of {n}: "
          + ("met" if not short else f"not met ({'; '.join(short)})"))
    print("target: no always <-> >16 KiB flip: "
          + ("met" if not flips else f"not met ({', '.join(flips)})"))
    return {"within": {"needed": needed, "met": not short, "not_met": short},
            "no_flip": {"met": not flips, "not_met": flips},
            "hysteresis_changes": changes, "busy_runs": busy}


def load_recorded(path):
    try:
        with open(path, encoding="utf-8") as f:
            recorded = json.load(f)
    except OSError as error:
        raise BenchError(f"--from {path}: cannot read it: {error.strerror}") from None
    except json.JSONDecodeError as error:
        raise BenchError(f"--from {path}: not JSON ({error.msg} at line {error.lineno}); "
                         "give a file that --json wrote") from None
    runs = recorded.get("runs") if isinstance(recorded, dict) else None
    if not isinstance(runs, list) or not all(isinstance(r, dict) and "document" in r
                                             for r in runs):
        raise BenchError(f"--from {path}: no \"runs\" with their \"document\"s; give a file "
                         "that --json wrote")
    if len(runs) < 2:
        raise BenchError(f"--from {path}: {len(runs)} run(s); at least 2 to compare")
    for i, run in enumerate(runs):
        if not isinstance(run["document"].get("depths"), list):
            raise BenchError(f"--from {path}: run {i + 1}: its document has no \"depths\" list")
    return runs


def executable(path, option, hint):
    if not (os.path.isfile(path) and os.access(path, os.X_OK)):
        raise BenchError(f"{path}: not an executable ({option}; {hint})")


def run_regret(zcal):
    regret = Path(__file__).resolve().parent / "regret.py"
    print(f"\nout-of-sample regret, bench/regret.py --zcal {zcal} (same binary, right after):",
          flush=True)
    done = subprocess.run([sys.executable, str(regret), "--zcal", zcal],
                          capture_output=True, text=True, check=False)
    if done.returncode != 0:
        lines = done.stderr.strip().splitlines()
        print(f"stability.py: bench/regret.py failed (exit {done.returncode}): "
              f"{lines[-1] if lines else ''}", file=sys.stderr)
        sys.exit(1)
    # Its per-run measurement lines are its own; the judgement follows them.
    out = done.stdout
    start = out.find("decided with zcal analyze")
    print(out[start:] if start >= 0 else out, end="")


def parse_args():
    parser = Parser(
        description=__doc__.splitlines()[0],
        epilog="Details: the docstring of bench/stability.py and docs/calibrator.md.")
    parser.add_argument("--zcal", default="build/agent/cli/zcal",
                        help="the zcal binary (default build/agent/cli/zcal)")
    parser.add_argument("--replay", help="the hysteresis helper (default: BUILD/bench/"
                        "hysteresis_replay beside --zcal's BUILD/agent/cli/zcal)")
    parser.add_argument("--runs", type=int, help="calibrations back to back (default 10, >= 2)")
    parser.add_argument("--budget", type=float,
                        help="zcal calibrate --budget, seconds (default: the command's)")
    parser.add_argument("--depth", help="zcal calibrate --depth, e.g. 1,4,16,stream "
                        "(default: the command's classes)")
    parser.add_argument("--threshold-tolerance", type=float,
                        help="hysteresis threshold_tolerance, 0 to 1 (default 0.5)")
    parser.add_argument("--high-confidence", type=float,
                        help="hysteresis high_confidence, 0 to 1 (default 0.9)")
    parser.add_argument("--json", help="write every run and the summary to this file")
    parser.add_argument("--from", dest="from_file",
                        help="re-judge a file --json wrote, running nothing")
    parser.add_argument("--regret", action="store_true",
                        help="then run bench/regret.py with the same --zcal, print its summary")
    args = parser.parse_args()
    if args.runs is not None and args.runs < 2:
        parser.error(f"--runs {args.runs}: at least 2, to compare runs")
    if args.budget is not None and not 0 < args.budget <= 3600:
        parser.error(f"--budget {args.budget:g}: above 0, at most 3600 seconds")
    for name in ("threshold_tolerance", "high_confidence"):
        value = getattr(args, name)
        if value is not None and not 0 <= value <= 1:
            parser.error(f"--{name.replace('_', '-')} {value:g}: from 0 to 1")
    if args.from_file:
        measuring = [o for o, v in (("--runs", args.runs), ("--budget", args.budget),
                                    ("--depth", args.depth), ("--regret", args.regret or None))
                     if v is not None]
        if measuring:
            parser.error(f"--from judges a recorded file; {', '.join(measuring)} "
                         "only when measuring")
    args.runs = args.runs or 10
    if args.replay is None:
        args.replay = str(Path(args.zcal).parent.parent.parent / "bench" / "hysteresis_replay")
    return args


def main():
    args = parse_args()
    try:
        if not args.from_file:
            executable(args.zcal, "--zcal", "build it with meson compile -C BUILD")
        executable(args.replay, "--replay", "build it with meson compile -C BUILD "
                   "bench/hysteresis_replay")
        if args.from_file:
            runs = load_recorded(args.from_file)
            command = None
        else:
            if os.geteuid() != 0:
                raise BenchError("measuring needs root (the discard path sends in a network "
                                 "namespace of its own); run as root, or judge a recorded "
                                 "file with --from FILE")
            runs = []
            command = ["zcal", "calibrate", "--path", PATH, "--json"] + \
                (["--budget", f"{args.budget:g}"] if args.budget is not None else []) + \
                (["--depth", args.depth] if args.depth else [])
        if args.json:
            # Refused now, not after minutes of measuring.
            try:
                Path(args.json).touch()
            except OSError as error:
                raise BenchError(f"--json {args.json}: cannot write it: {error.strerror}") \
                    from None
        if not args.from_file:
            for i in range(args.runs):
                runs.append(run_once(args.zcal, args.budget, args.depth))
                print_run(i + 1, args.runs, runs[-1])
        # A recorded file is judged whole before anything is printed: a
        # file the helper refuses ends with one line, not half a report.
        options, replayed = replay(args.replay, runs, args.threshold_tolerance,
                                   args.high_confidence,
                                   f"--from {args.from_file}" if args.from_file else "the runs")
        if args.from_file:
            for i, run in enumerate(runs):
                print_run(i + 1, len(runs), run)
    except BenchError as error:
        print(f"stability.py: {error}", file=sys.stderr)
        return 2
    summary = summarize(runs, replayed)
    print_summary(summary, runs, options)
    verdicts = targets(summary, runs)
    if args.json:
        with open(args.json, "w", encoding="utf-8") as out:
            json.dump({"bench": "stability", "command": command, "hysteresis": options,
                       "runs": runs,
                       "summary": [{"method": name, "depth": depth, **s}
                                   for (name, depth), s in summary.items()],
                       "targets": verdicts}, out, indent=1)
            out.write("\n")
    if args.regret:
        run_regret(args.zcal)
    return 0


if __name__ == "__main__":
    sys.exit(main())
