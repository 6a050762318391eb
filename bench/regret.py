#!/usr/bin/env python3
"""Out-of-sample regret of zcal's threshold on real runs of the discard path:
what a threshold decided on one run costs on another run, against fixed
policies and the best single threshold in hindsight.

Each run records, in a private network namespace whose lo drops everything
in a blackhole qdisc (set up once by ip(8) and tc(8)):

  zcal       `zcal calibrate --path discard --samples-out`: zcal's own probes
             (all five methods; its own discard namespace inside ours);
  liburing   the send-zerocopy example that Debian's liburing-dev ships,
             built here with gcc -luring: UDP to 127.0.0.2 at each size with
             -z0 (uring_send), -z1 -b0 (uring_send_zc), -z1 -b1
             (uring_send_zc_fixed), one run of 1.2 s each, sizes and
             variants interleaved. Its CPU is the sender process's own
             (user + system, from wait4), the same way for every variant.

Then for every ordered pair of runs (a, b), a != b: decide on a, judge on b.
The decision is `zcal analyze --json` on run a's samples (what `zcal
calibrate` published on that run; with --traffic for the mix figure): zcal's
own samples for the zcal rows, the liburing table for the liburing rows. It
decides under the objective the judge counts, `--objective cpu --margin 0`
(least CPU per byte, no margin); zcal's default objective, `efficiency`,
also wants throughput kept within 2 % and zerocopy 3 % cheaper before it
takes it, which the CPU-only judge cannot credit, so its figure is printed
apart, one summary line under each block. The
judge is run b's CPU per byte: at each judged size, the policy's send (the
zerocopy method at sizes >= its threshold, the baseline below) over the
cheaper of the two, minus 1, in percentage points, averaged with the sizes
weighed equally in log size (each size the log cell halfway to its
neighbours, as the calibrator's per-size rule weighs them) and weighed by a
traffic mix (share of bytes per size; each bin on the nearest judged size).
The zcal rows are judged on every size of run b's zcal samples that both
sends were probed at (medians of the repeats); the liburing rows on run b's
liburing table. An inconclusive verdict counts as never (what a transport
without a threshold does).

Printed per method and pair: zcal's threshold from run a, its extra cost on
run b, the best single threshold in hindsight on b and its cost, the best
single threshold of run a judged on b (what a perfect rule could take from
run a: the floor that run-to-run noise sets), and the fixed policies 10 KB,
16 KiB, always and never. Target: zcal within 0.5 pp of
the best in hindsight and below every fixed policy in every ordered pair.
A tie with a fixed policy counts as not below, except where that policy is
itself the best in hindsight (nothing can be below the best; under a mix
every threshold at or below its smallest bin ties with always): such pairs
are counted apart ("at the best"), and so are the misses that the best of
run a shares (what run-to-run noise allows).

Each judgement has a resolution: run b is one measurement, and the cost
ratio of zerocopy to its baseline at a size scatters from run to run (the
bench pools that scatter over every size probed in two runs or more). Two
policies differ only at the sizes between their thresholds, so the standard
error of the difference of their figures is that scatter times the root of
the sum of those sizes' squared weights. zcal above a fixed policy by less
than twice that is printed and counted as "within the noise" (not a miss),
and the summary says how many pairs met the target only so; above it by
more is a miss. The 0.5 pp to the best has no such allowance. Exit status 0
when it ran, whatever the figures; 2, with one line on stderr and no report,
when a table, an option or a tool cannot be used (every decision and
judgement is made before anything is printed).

usage: bench/regret.py [--zcal ZCAL] [--runs N] [--record DIR] [--from DIR]
                       [--traffic SIZE:WEIGHT,...] [--analyze-args "..."]
  --record DIR  also keep every run's files in DIR (zcal_N.csv, liburing_N.csv)
  --from DIR    judge runs recorded earlier instead of measuring (needs --zcal
                only for `zcal analyze`)
  --analyze-args options for the deciding `zcal analyze` (default "--objective
                cpu --margin 0", what the judge counts; "" for zcal's default
                objective in every row)
"""
import argparse
import csv
import gzip
import json
import math
import os
import shlex
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

KIB = 1024
EXAMPLE = "/usr/share/doc/liburing-dev/examples/send-zerocopy.c"
# The example's largest UDP payload (IP_MAXPACKET less IPv6, TCP and option
# headers) stands in for 64 KiB.
REF_MAX = 65435
REF_SIZES = [1 * KIB, 2 * KIB, 4 * KIB, 6 * KIB, 8 * KIB, 12 * KIB, 16 * KIB, 24 * KIB,
             32 * KIB, 48 * KIB, REF_MAX]
REF_VARIANTS = {"uring_send": ["-z", "0"], "uring_send_zc": ["-z", "1", "-b", "0"],
                "uring_send_zc_fixed": ["-z", "1", "-b", "1"]}
BASELINE = {"msg_zerocopy": "copy", "uring_send_zc": "uring_send",
            "uring_send_zc_fixed": "uring_send"}
FIXED = [("10 KB", 10000), ("16 KiB", 16 * KIB), ("always", 0), ("never", None)]
DEFAULT_MIX = "2KiB:10,8KiB:20,16KiB:30,64KiB:40"
NAMESPACE_ENV = "ZCAL_REGRET_IN_NAMESPACE"
# The judge counts CPU per byte and nothing else; this is the objective that
# decides on the same.
JUDGED_OBJECTIVE = "--objective cpu --margin 0"


class BenchError(Exception):
    """A file, run or tool the bench cannot use; main prints it and exits 2."""


def parse_mix(text):
    bins = []
    for entry in text.split(","):
        try:
            size, weight = entry.split(":")
            size = size.strip().upper().replace("IB", "")
            factor = {"K": KIB, "M": KIB * KIB}.get(size[-1:], 1)
            bins.append((int(float(size.rstrip("KM")) * factor), float(weight)))
        except ValueError:
            raise BenchError(f"--traffic {text}: {entry!r} is not SIZE:WEIGHT "
                             "(e.g. 16KiB:30)") from None
        if bins[-1][0] <= 0 or bins[-1][1] < 0:
            raise BenchError(f"--traffic {text}: {entry!r}: a size above 0 and a weight "
                             "of 0 or more")
    if sum(weight for _, weight in bins) <= 0:
        raise BenchError(f"--traffic {text}: the weights add up to 0")
    return bins


def build_example(tmp):
    source = Path(EXAMPLE)
    if not source.exists() and Path(EXAMPLE + ".gz").exists():
        source = Path(tmp) / "send-zerocopy.c"
        source.write_bytes(gzip.decompress(Path(EXAMPLE + ".gz").read_bytes()))
    if not source.exists():
        raise BenchError(f"{EXAMPLE}: missing; install liburing-dev (it ships the example)")
    binary = Path(tmp) / "send-zerocopy"
    done = subprocess.run(["gcc", "-O2", "-o", str(binary), str(source), "-luring"],
                          capture_output=True, text=True)
    if done.returncode != 0:
        raise BenchError(f"building {source} with gcc -luring: exit {done.returncode}: "
                         f"{done.stderr.strip()}")
    return str(binary)


def run_reference(binary, method, size, extra=(), whole_seconds=1):
    """One run of the example (0.2 s more than `whole_seconds`, its -t;
    `extra`: more of its options, e.g. -n); returns (mb_per_s, cpu_pct) of
    the sender."""
    command = [binary, "-4", "-D", "127.0.0.2", "-p", "9", "-s", str(size),
               "-t", str(whole_seconds), *REF_VARIANTS[method], *extra, "udp"]
    start = time.monotonic()
    child = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                             text=True)
    _, status, usage = os.wait4(child.pid, 0)
    wall = time.monotonic() - start
    stderr = child.stderr.read()
    child.returncode = os.waitstatus_to_exitcode(status)
    if child.returncode != 0:
        raise BenchError(f"{' '.join(command)}: exit {child.returncode}: {stderr.strip()}")
    # "tx=PACKETS (MB=...), ...": every UDP send carries the whole payload.
    try:
        packets = int(stderr.split("tx=")[1].split()[0])
    except (IndexError, ValueError):
        raise BenchError(f"{' '.join(command)}: no \"tx=PACKETS\" in its output: "
                         f"{stderr.strip()[:200]}") from None
    cpu = usage.ru_utime + usage.ru_stime
    return packets * size / wall / 1e6, 100 * cpu / wall


def record_run(args, binary, index, out_dir):
    zcal_csv = out_dir / f"zcal_{index}.csv"
    run_zcal(args.zcal, ["calibrate", "--path", "discard", "--samples-out", str(zcal_csv)])
    rows = []
    methods = list(REF_VARIANTS)
    for k, size in enumerate(REF_SIZES):
        # Rotate the order from size to size (and run to run) so that drift
        # hits all variants alike.
        shift = (k + index) % len(methods)
        for method in methods[shift:] + methods[:shift]:
            mb, cpu = run_reference(binary, method, size)
            rows.append(f"liburing,{method},{size},0,{mb:.1f},{cpu:.2f},")
            print(f"run {index}: liburing {method:20} {size:6} {mb:9.1f} MB/s {cpu:6.1f} % CPU",
                  file=sys.stderr)
    (out_dir / f"liburing_{index}.csv").write_text(
        f"# liburing send-zerocopy example on the discard path, run {index}, "
        f"{time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}\n"
        "path,method,size,repeat,mb_per_s,cpu_pct,copied_pct\n" + "\n".join(rows) + "\n")


# The columns the judge reads, in zcal's samples and in the example's table.
COLUMNS = ("method", "size", "mb_per_s", "cpu_pct")


def read_rows(csv_path, columns, where_from=""):
    """The successful rows of a samples CSV (status ok, or no status column),
    each as (line number, {column: text}); `columns` must be in its header.
    Comment lines (#) are skipped. A file that cannot be read, has no table,
    lacks a column or has a row of the wrong length is a BenchError; one
    that lacks a column says `where_from` (what writes the table) too."""
    try:
        text = Path(csv_path).read_text()
    except (OSError, UnicodeDecodeError) as error:
        raise BenchError(f"{csv_path}: cannot read it: {error}") from None
    lines = [(n, line) for n, line in enumerate(text.splitlines(), 1)
             if line and not line.startswith("#")]
    if not lines:
        raise BenchError(f"{csv_path}: no samples table in it (empty)")
    header = None
    for (number, _), cells in zip(lines, csv.reader(line for _, line in lines)):
        if header is None:
            header = {name: i for i, name in enumerate(cells)}
            missing = [c for c in columns if c not in header]
            if missing:
                raise BenchError(f"{csv_path}:{number}: not a samples table: no column "
                                 f"{', '.join(missing)} in its header{where_from}")
            continue
        if len(cells) != len(header):
            raise BenchError(f"{csv_path}:{number}: {len(cells)} cells where the header "
                             f"has {len(header)}")
        if "status" in header and cells[header["status"]] != "ok":
            continue
        yield number, {name: cells[i] for name, i in header.items()}


def read_costs(csv_path):
    """Median CPU per byte per (method, size) of a samples CSV, from mb_per_s
    and cpu_pct."""
    values = {}
    for number, row in read_rows(csv_path, COLUMNS):
        try:
            size = int(row["size"])
            mb, cpu = float(row["mb_per_s"]), float(row["cpu_pct"])
        except ValueError as error:
            raise BenchError(f"{csv_path}:{number}: {error}") from None
        if mb > 0 and cpu > 0:
            values.setdefault((row["method"], size), []).append(cpu / 100 / (mb * 1e6))
    return {key: statistics.median(per_byte) for key, per_byte in values.items()}


def run_zcal(zcal, arguments):
    """zcal's standard output for `arguments`; a zcal that cannot run, hangs
    or fails is a BenchError with its own message."""
    command = f"zcal {' '.join(arguments)}"
    try:
        done = subprocess.run([zcal, *arguments], capture_output=True, text=True, timeout=120)
    except OSError as error:
        raise BenchError(f"--zcal {zcal}: cannot run it: {error.strerror}") from None
    except subprocess.TimeoutExpired:
        raise BenchError(f"{command}: no answer in 120 s") from None
    if done.returncode != 0:
        raise BenchError(f"{command}: exit {done.returncode}: {done.stderr.strip()}")
    return done.stdout


def decide(zcal, csv_path, traffic, extra):
    traffic_args = ["--traffic", traffic] if traffic else []
    stdout = run_zcal(zcal, ["analyze", *traffic_args, *extra, "--json", str(csv_path)])
    out = {}
    for path in json.loads(stdout)["paths"].values():
        for method, result in path["methods"].items():
            verdict = result["verdict"]
            out[method] = (result["threshold_bytes"] if verdict in ("threshold", "always")
                           else None, verdict)
    return out


def judged_sizes(costs, method, path):
    """The sizes of a table at which both `method` and its baseline were
    probed; a table that has the method but no such size cannot judge it."""
    judged = [s for (m, s) in costs if m == method and (BASELINE[method], s) in costs]
    if not judged:
        raise BenchError(f"{path}: no size at which both {method} and {BASELINE[method]} "
                         "were probed")
    return judged


def extra_pp(costs, method, threshold, weights):
    """Weighted extra CPU per byte (pp) of using `method` from `threshold`
    on (None: never), against the cheaper send at each judged size."""
    base = BASELINE[method]
    total = 0.0
    for size, weight in weights.items():
        zc, b = costs[(method, size)], costs[(base, size)]
        used = zc if threshold is not None and size >= threshold else b
        total += weight * (used / min(zc, b) - 1)
    return 100 * total


def weights_of(sizes, mix):
    """Uniform in log size (each size the log cell halfway to its
    neighbours), or the mix's bins on the nearest size."""
    sizes = sorted(sizes)
    if mix is None:
        if len(sizes) == 1:
            return {sizes[0]: 1.0}
        weights = {s: 0.0 for s in sizes}
        for lo, hi in zip(sizes, sizes[1:]):
            half = math.log(hi / lo) / 2
            weights[lo] += half
            weights[hi] += half
        total = sum(weights.values())
        return {s: w / total for s, w in weights.items()}
    weights = {s: 0.0 for s in sizes}
    for size, weight in mix:
        nearest = min(sizes, key=lambda s: abs(math.log(s / size)))
        weights[nearest] += weight
    total = sum(weights.values())
    return {s: w / total for s, w in weights.items()}


def ratio_scatter(runs, side, tables):
    """Run-to-run standard deviation of log(zerocopy / baseline cost) at one
    size, pooled over every (method, size) that two or more runs probed,
    and the number of degrees of freedom behind it (0: no estimate)."""
    ratios = {}
    for run in runs:
        costs = tables[run[side]]
        for (method, size), cost in costs.items():
            base = costs.get((BASELINE.get(method), size))
            if base:
                ratios.setdefault((method, size), []).append(math.log(cost / base))
    squares, dof = 0.0, 0
    for values in ratios.values():
        if len(values) >= 2:
            mean = sum(values) / len(values)
            squares += sum((v - mean) ** 2 for v in values)
            dof += len(values) - 1
    return (math.sqrt(squares / dof) if dof else 0.0), dof


def resolution_pp(weights, t1, t2, scatter):
    """Twice the standard error, in pp, of the difference between the figures
    of thresholds t1 and t2 (None: never) on one run: they differ only at
    the sizes one of them sends with zerocopy and the other does not."""
    def uses(t, size):
        return t is not None and size >= t
    variance = sum(w * w for size, w in weights.items() if uses(t1, size) != uses(t2, size))
    return 2 * 100 * scatter * math.sqrt(variance)


def judge(runs, side, tables, zcal, traffic, extra, scatter):
    """Rows of (method, a, b, zcal threshold, zcal pp, best t, best pp, fixed
    pps), sizes weighed equally or (`traffic`) by that mix."""
    mix = parse_mix(traffic) if traffic else None
    def best_on(costs, method, path):
        judged = judged_sizes(costs, method, path)
        w = weights_of(judged, mix)
        best = min([None] + sorted(judged), key=lambda t: extra_pp(costs, method, t, w))
        return best, w

    rows = []
    for a in runs:
        decided = decide(zcal, a[side], traffic, extra)
        own = tables[a[side]]
        for b in runs:
            if a is b:
                continue
            costs = tables[b[side]]
            for method in BASELINE:
                if method not in decided:
                    continue
                best, w = best_on(costs, method, b[side])
                # The best single threshold of run a, judged on b: what a
                # perfect rule could get from run a, so the floor the
                # run-to-run noise sets.
                oracle, _ = best_on(own, method, a[side])
                threshold, verdict = decided[method]
                rows.append({
                    "method": method, "a": a["name"], "b": b["name"], "verdict": verdict,
                    "zcal_t": threshold, "zcal": extra_pp(costs, method, threshold, w),
                    "best_t": best, "best": extra_pp(costs, method, best, w),
                    "oracle_t": oracle, "oracle": extra_pp(costs, method, oracle, w),
                    "fixed": [extra_pp(costs, method, t, w) for _, t in FIXED],
                    "resolution": [resolution_pp(w, threshold, t, scatter) for _, t in FIXED],
                    "oracle_resolution": [resolution_pp(w, oracle, t, scatter)
                                          for _, t in FIXED]})
    return rows


def size_text(t):
    if t is None:
        return "never"
    return f"{t / KIB:.2f}K".replace(".00K", "K") if t >= KIB else f"{t}"


# Figures are printed to 0.01 pp; closer than this they are one figure.
TIE_PP = 0.005
NOISE = "within the noise"


def judge_pair(cost, best, fixed, resolution=None):
    """(meets the target, why not or why only at the best or within the
    noise) for a policy of extra cost `cost` on a run whose best single
    threshold costs `best`; `fixed[i]`: the figure of FIXED[i];
    `resolution[i]`: how far above it the policy may be before the
    difference is beyond the judgement's noise (None: no allowance)."""
    gap = cost - best
    if gap > 0.5:
        return False, f"+{gap:.2f} pp"
    resolution = resolution or [0.0] * len(fixed)
    named = [(f, r, name) for f, r, (name, _) in zip(fixed, resolution, FIXED)]
    above = [(f, r, name) for f, r, name in named if cost >= f + TIE_PP]
    beyond = [(f, name) for f, r, name in above if cost - f > r]
    if beyond:
        f, name = min(beyond)
        return False, f"{cost - f:.2f} pp above {name}"
    tied = [f for f in fixed if abs(cost - f) < TIE_PP]
    if tied and not all(f <= best + TIE_PP for f in tied):
        return False, "tied with a fixed policy"
    if above:
        f, r, name = min(above)
        return True, f"{NOISE}: {cost - f:.2f} pp above {name}, resolution {r:.2f} pp"
    return True, "at the best" if tied else ""


def report(title, rows, lead="  pairs meeting the target", table=True):
    """The rows of one figure (when `table`) and its summary line."""
    if table:
        print(f"\n{title}")
        print(f"  {'method':20} {'a>b':5} {'zcal (from a)':>14} {'pp':>6} {'best on b':>10} "
              f"{'pp':>6} {'best of a':>10} {'pp':>6}  " +
              "  ".join(f"{name:>7}" for name, _ in FIXED) + "   ok")
    misses = at_best = noise = shared = oracle_misses = 0
    worst = 0.0
    for r in rows:
        oracle_misses += 0 if r["oracle"] - r["best"] <= 0.5 else 1
        gap = r["zcal"] - r["best"]
        ok, why = judge_pair(r["zcal"], r["best"], r["fixed"], r["resolution"])
        at_best += ok and why == "at the best"
        noise += ok and why.startswith(NOISE)
        if not ok:
            misses += 1
            # The best single threshold of run a misses it too: no rule that
            # sees only run a could be sure to meet it.
            if not judge_pair(r["oracle"], r["best"], r["fixed"], r["oracle_resolution"])[0]:
                shared += 1
                why += "; so does the best of a"
        worst = max(worst, gap)
        if not table:
            continue
        zt = size_text(r["zcal_t"]) + ("?" if r["verdict"] == "inconclusive" else "")
        print(f"  {r['method']:20} {r['a']}>{r['b']:3} {zt:>14} {r['zcal']:6.2f} "
              f"{size_text(r['best_t']):>10} {r['best']:6.2f} "
              f"{size_text(r['oracle_t']):>10} {r['oracle']:6.2f}  " +
              "  ".join(f"{f:7.2f}" for f in r["fixed"]) +
              f"   {('yes' if ok else 'NO') + (' (' + why + ')' if why else '')}")
    gaps = sorted(r["zcal"] - r["best"] for r in rows)
    print(f"{lead}: {len(rows) - misses} of {len(rows)} ({at_best} of them at the best, tied "
          f"with a fixed policy that is the best in hindsight; {noise} only {NOISE}, above a "
          f"fixed policy by less than the judgement's resolution); misses that the best of "
          f"run a shares: {shared} of {misses}; zcal over the best in hindsight: median "
          f"{gaps[len(gaps) // 2]:.2f} pp, at most {worst:.2f} pp; the best of run a itself is "
          f"within 0.5 pp on b in {len(rows) - oracle_misses} of {len(rows)}")


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--zcal", default="build/agent/cli/zcal")
    parser.add_argument("--runs", type=int, default=4, help="independent runs (default 4, >= 2)")
    parser.add_argument("--record", help="keep every run's samples in this folder")
    parser.add_argument("--from", dest="from_dir", help="judge runs recorded in this folder")
    parser.add_argument("--traffic", default=DEFAULT_MIX,
                        help=f"traffic mix for the second figure (default {DEFAULT_MIX})")
    parser.add_argument("--analyze-args", default=JUDGED_OBJECTIVE,
                        help=f"options for the deciding zcal analyze (default \"{JUDGED_OBJECTIVE}"
                             "\", what the judge counts; \"\" for zcal's default objective)")
    args = parser.parse_args()
    if args.runs < 2:
        parser.error("--runs: at least 2, to decide on one and judge on another")
    try:
        return measure_and_judge(args, parser)
    except BenchError as error:
        print(f"regret.py: {error}", file=sys.stderr)
        return 2


def measure_and_judge(args, parser):
    parse_mix(args.traffic)  # before minutes of measuring, not after
    if args.from_dir:
        out_dir = Path(args.from_dir)
        names = sorted(p.stem.split("_")[1] for p in out_dir.glob("zcal_*.csv"))
        missing = [n for n in names if not (out_dir / f"liburing_{n}.csv").exists()]
        if len(names) < 2 or missing:
            parser.error(f"--from {out_dir}: needs at least two runs, each as zcal_N.csv and "
                         f"liburing_N.csv (what --record writes); found {len(names)} zcal "
                         f"runs" + (f", no liburing_N.csv for N = {', '.join(missing)}"
                                    if missing else ""))
    else:
        if os.environ.get(NAMESPACE_ENV) != "1":
            # Measure inside a namespace of our own with a blackholed lo, so
            # that the senders are our direct children (wait4 has their CPU).
            os.environ[NAMESPACE_ENV] = "1"
            setup = ("ip link set lo up && tc qdisc add dev lo root blackhole && exec "
                     + shlex.join([sys.executable, *sys.argv]))
            os.execvp("unshare", ["unshare", "-n", "sh", "-c", setup])
        tmp = tempfile.mkdtemp(prefix="zcal-regret-")
        try:
            binary = build_example(tmp)
            out_dir = Path(args.record) if args.record else Path(tmp)
            out_dir.mkdir(parents=True, exist_ok=True)
            names = []
            for i in range(1, args.runs + 1):
                record_run(args, binary, i, out_dir)
                names.append(str(i))
            return evaluate(args, out_dir, names)
        finally:
            shutil.rmtree(tmp, ignore_errors=True)
    return evaluate(args, out_dir, names)


SIDES = (("zcal", "zcal's probes, judged on zcal's probes"),
         ("liburing", "liburing send-zerocopy example, judged on the example"))


def evaluate(args, out_dir, names):
    runs = [{"name": n, "zcal": out_dir / f"zcal_{n}.csv", "liburing": out_dir / f"liburing_{n}.csv"}
            for n in names]
    extra = args.analyze_args.split()
    tables = {run[side]: read_costs(run[side]) for run in runs for side, _ in SIDES}
    # Every decision and judgement is made before anything is printed, so
    # that a bad table or option ends the bench with one line, not after
    # half a report.
    blocks = []
    for side, what in SIDES:
        scatter, dof = ratio_scatter(runs, side, tables)
        figures = []
        for traffic, weighing in ((None, "sizes weighed equally in log size"),
                                  (args.traffic, f"traffic mix {args.traffic}")):
            figures.append((f"{what}; {weighing}",
                            judge(runs, side, tables, args.zcal, traffic, extra, scatter),
                            judge(runs, side, tables, args.zcal, traffic, [], scatter)
                            if extra else None))
        blocks.append((figures, scatter, dof))
    print(f"decided with zcal analyze {' '.join(extra) or '(its default objective)'}")
    print(f"out-of-sample regret on the discard path: {len(runs)} runs, "
          f"{len(runs) * (len(runs) - 1)} ordered pairs (decide on a, judge on b); extra CPU "
          "per byte over the cheaper send at each size, percentage points")
    for figures, scatter, dof in blocks:
        for title, rows, default_rows in figures:
            report(title, rows)
            if default_rows:
                report("", default_rows, lead="  decided under zcal's default objective instead",
                       table=False)
        print(f"  resolution: the zerocopy/baseline cost ratio at one size scatters by "
              f"{100 * scatter:.1f} % from run to run ({dof} degrees of freedom, pooled over "
              f"the sizes that two runs or more probed)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
