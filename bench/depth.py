#!/usr/bin/env python3
"""zcal's per-depth thresholds against senders that are not zcal's, on the
discard path (UDP to 127.0.0.2 in a private network namespace whose lo
drops everything in a blackhole qdisc, as bench/regret.py sets it up).

Per round, measured inside that namespace:

  zcal       `zcal calibrate --path discard --depth 1,4,16,stream
             --samples-out zcal_R.csv` (its budget shared by the classes);
  sendmsg    bench/fidelity_ref_sendmsg, the bench's own tight sendmsg(2)
             loop: --zerocopy with BUFFERS=D rotates through D buffers and
             reuses one only once the send that last used it completed
             (completions arrive in order), so at most D sends are in flight
             and D=1 waits for each send's completion, as zcal's depth 1
             does; stream is D=256. Its copy mode has nothing in flight and
             is run once per size, the baseline of every class (as zcal
             probes its baselines at stream).
  liburing   the send-zerocopy example of Debian's liburing-dev (built as
             bench/regret.py builds it). Its -n N submits N sends at once
             and waits for their N results, not for their notifications,
             which it reaps while it waits for the next batch's results: at
             each submit the N notifications of the batch before are still
             unreaped (counted here with a copy of the example: at submit
             max 2N, mean 2.00 N, N = 1 to 256), so -n N keeps 2N in flight.
             Class D runs -n D/2 (depth D); class 1 runs -n 1, which is 2 in
             flight, the fewest the example keeps; stream runs -n 128 (256).
             Its copy variant (-z0) runs with the same -n, the same batching
             without zerocopy. Runs last 0.2 s plus whole seconds (-t; the
             example divides by zero below 1). It never waits for a
             notification, so it does not pay what zcal's depth 1 pays.
  uring      bench/fidelity_ref_uring --udp, the bench's own io_uring sender
             (written for bench/fidelity.py, not from zcal's probe code): at
             class D it keeps D sends in flight, reuses a buffer only once its
             notification arrived, and at a numeric class blocks for one
             completion before it sends again (stream: 128 in flight, waiting
             for 8 completions a call). This reaps as zcal's depths say. Its
             send op (the copy baseline) has nothing in flight and is run once
             per size for every class. Written to uring_R_D.csv; a recording
             without those files is judged on the example alone.

Each class is then judged as bench/regret.py judges (imported): zcal's
thresholds decided by `zcal analyze --objective cpu --margin 0 --json` on
zcal_R.csv, one per class, applied to the reference sender's table of the
same class and round and every other round; the cost is the reference's CPU
per byte of the policy's send over the cheaper send at each size, minus 1,
in percentage points, the sizes weighed equally in log size. Against it:
the stream class's threshold applied at every depth (what a single
threshold gives), the fixed policies of regret.py (10 KB, 16 KiB, always,
never) and the best single threshold in hindsight on the reference table,
its crossover. Target: zcal's per-class threshold within 0.5 pp of that
best at every depth.

It also checks that a deeper class never takes a larger threshold than a
shallower one unless zcal's own samples at the deeper class say so, and
prints each inversion with its reason: zerocopy measured no cheaper at a
size probed between the two thresholds ("its measured costs say so"),
nothing probed between them ("placed by its curve fit", with the sizes
around), or zerocopy cheaper at every size probed between them
("CONTRADICTED"). It says where a class does not differ from stream.

With --buffers pages,hugepages each round also runs zcal's calibration
with its buffers in 2 MiB huge pages (`--buffers hugepages`, the two in
alternating order from round to round; zcal_R_hugepages.csv beside
zcal_R.csv) and prints, per method and depth class, the crossover of each
round and zerocopy's CPU per byte over its baseline's at the sizes every
round probed, for 4 KiB pages and huge pages side by side, and whether
the two differ beyond the noise: beyond it when the rounds of one lie all
above or all below the rounds of the other (the run-to-run spread of a
configuration across rounds is the noise; it needs two rounds or more).
The references send from 4 KiB pages and judge the pages calibration.

Exit status 0 when it ran, whatever the figures; 2 with one line on stderr
when an option, a table or a tool cannot be used.

usage: bench/depth.py [--zcal ZCAL] [--build DIR] [--rounds N] [--seconds S]
                      [--budget S] [--sizes SIZE,...] [--buffers pages[,hugepages]]
                      [--record DIR | --from DIR]
"""
import argparse
import csv
import io
import json
import os
import shlex
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.dont_write_bytecode = True  # no __pycache__ beside the bench
import fidelity  # noqa: E402 (bench/ is on the path: this file's folder)
import fidelity_discard  # noqa: E402
import regret  # noqa: E402
from regret import BASELINE, FIXED, KIB, BenchError  # noqa: E402

DEPTHS = ("1", "4", "16", "stream")
# In flight at the stream class for the sendmsg reference; the figure the
# design's 24 KiB stream crossover was measured at.
STREAM_IN_FLIGHT = 256
# -n of the example per class: -n N keeps 2N in flight (see the docstring).
EXAMPLE_BATCH = {"1": 1, "4": 2, "16": 8, "stream": STREAM_IN_FLIGHT // 2}
DEFAULT_SIZES = [4 * KIB, 8 * KIB, 16 * KIB, 24 * KIB, 32 * KIB, 48 * KIB, regret.REF_MAX]
NAMESPACE_ENV = "ZCAL_DEPTH_IN_NAMESPACE"
SENDMSG_METHODS = ("copy", "msg_zerocopy")
EXAMPLE_METHODS = ("uring_send", "uring_send_zc", "uring_send_zc_fixed")
# The bench's own io_uring reference per class: sends in flight, and
# completions it blocks for per io_uring_enter (1: it waits for each
# completion before the next send, as an application at that depth does).
URING_OPS = {"uring_send": "send", "uring_send_zc": "send_zc",
             "uring_send_zc_fixed": "send_zc_fixed"}
URING_IN_FLIGHT = {"1": 1, "4": 4, "16": 16, "stream": 128}
URING_WAIT = {"1": 1, "4": 1, "16": 1, "stream": 8}
# The references a method is judged on, in the order printed: (file prefix,
# name). ref_R_D.csv holds the sendmsg reference and the example,
# uring_R_D.csv the bench's own io_uring sender.
REFERENCES = {
    "msg_zerocopy": [("ref", "fidelity_ref_sendmsg")],
    "uring_send_zc": [("uring", "fidelity_ref_uring, reaping as the depth says"),
                      ("ref", "liburing's example, which never waits for a notification")],
}
REFERENCES["uring_send_zc_fixed"] = REFERENCES["uring_send_zc"]
HEADER = "path,method,size,repeat,mb_per_s,cpu_pct,copied_pct"
TARGET_PP = 0.5
# How an inversion of the class order is accounted for (printed, and what
# the test looks for).
EXPLAINED = "its measured costs say so"
CONTRADICTED = "CONTRADICTED by its measured costs"
FITTED = "placed by its curve fit"
BUFFERS = ("pages", "hugepages")
BEYOND = "beyond the noise"
WITHIN = "within the noise"


class Parser(argparse.ArgumentParser):
    def error(self, message):
        # One line, not argparse's usage block: the bench's errors all look alike.
        print(f"depth.py: {message} (see bench/depth.py --help)", file=sys.stderr)
        sys.exit(2)


def parse_sizes(text):
    sizes = []
    for entry in text.split(","):
        entry = entry.strip()
        factor = KIB if entry.upper().endswith(("K", "KIB")) else 1
        digits = entry.upper().removesuffix("IB").removesuffix("K")
        if not digits.isdigit() or not 1024 <= int(digits) * factor <= regret.REF_MAX:
            raise BenchError(f"--sizes {text}: {entry!r} is not a size from 1024 to "
                             f"{regret.REF_MAX} bytes (e.g. 4K,16K,{regret.REF_MAX})")
        sizes.append(int(digits) * factor)
    if len(set(sizes)) < 2:
        raise BenchError(f"--sizes {text}: at least two different sizes, to place a threshold")
    return sorted(set(sizes))


def sendmsg_run(binary, method, size, depth, seconds):
    buffers = STREAM_IN_FLIGHT if depth == "stream" else int(depth)
    command = [binary, "127.0.0.2:9", str(size), str(seconds), str(buffers), "--udp"]
    if method == "msg_zerocopy":
        command.append("--zerocopy")
    return reference_run(command, seconds)


def uring_run(binary, method, size, depth, seconds):
    command = [binary, "127.0.0.2:9", str(size), str(seconds), str(URING_IN_FLIGHT[depth]),
               str(URING_WAIT[depth]), "--udp", "--op", URING_OPS[method]]
    return reference_run(command, seconds)


def reference_run(command, seconds):
    """(mb_per_s, cpu_pct) of one run of a bench reference that prints one
    JSON line."""
    try:
        result = fidelity.run_json(command, timeout=seconds + 30)
    except (OSError, ValueError, RuntimeError) as error:
        raise BenchError(f"{shlex.join(command)}: {error}") from None
    except subprocess.TimeoutExpired:
        raise BenchError(f"{shlex.join(command)}: no answer in {seconds + 30:.0f} s") from None
    if not result.get("cpu_ns_per_byte") or not result.get("mb_per_s"):
        raise BenchError(f"{shlex.join(command)}: sent nothing: {result}")
    return result["mb_per_s"], 100 * result["cpu_ns_per_byte"] * result["mb_per_s"] / 1e3


def parse_buffers(text):
    kinds = [k.strip() for k in text.split(",")]
    bad = [k for k in kinds if k not in BUFFERS]
    if bad or len(set(kinds)) != len(kinds) or "pages" not in kinds:
        raise BenchError(f"--buffers {text}: pages or pages,hugepages (the references judge "
                         "the pages calibration)")
    return [k for k in BUFFERS if k in kinds]


def zcal_samples(out_dir, index, buffers):
    return out_dir / (f"zcal_{index}.csv" if buffers == "pages"
                      else f"zcal_{index}_{buffers}.csv")


def calibrate_round(args, index, out_dir):
    """zcal's calibration of every class, once per kind of buffers, the
    kinds in turn first; writes buffers_R.txt with the pages each got."""
    kinds = args.buffers if index % 2 else args.buffers[::-1]
    notes = []
    for buffers in kinds:
        load = os.getloadavg()[0]
        stdout = regret.run_zcal(args.zcal, [
            "calibrate", "--path", "discard", "--depth", ",".join(DEPTHS), "--buffers", buffers,
            "--min", str(args.sizes[0]), "--max", str(args.sizes[-1]),
            "--budget", str(args.budget),
            "--samples-out", str(zcal_samples(out_dir, index, buffers))])
        had = [line.split(":", 1)[1].strip() for line in stdout.splitlines()
               if line.strip().startswith("buffers ")]
        notes.append(f"{buffers}: {had[0] if had else 'unknown'}; load average {load:.1f}")
        print(f"round {index}: zcal calibrate --buffers {notes[-1]}", file=sys.stderr)
    (out_dir / f"buffers_{index}.txt").write_text("\n".join(notes) + "\n")


def measure_round(args, example, index, out_dir):
    """Writes zcal_R.csv (zcal_R_hugepages.csv) and ref_R_D.csv for every
    class D."""
    calibrate_round(args, index, out_dir)
    rows = {d: [] for d in DEPTHS}
    uring_rows = {d: [] for d in DEPTHS}
    whole = max(1, round(args.seconds - 0.2))
    sendmsg = str(Path(args.build) / "bench" / "fidelity_ref_sendmsg")
    uring = str(Path(args.build) / "bench" / "fidelity_ref_uring")
    for k, size in enumerate(args.sizes):
        jobs = [("sendmsg", "copy", "stream"), ("uring", "uring_send", "stream")]
        jobs += [("sendmsg", "msg_zerocopy", d) for d in DEPTHS]
        jobs += [("liburing", m, d) for d in DEPTHS for m in EXAMPLE_METHODS]
        jobs += [("uring", m, d) for d in DEPTHS for m in EXAMPLE_METHODS[1:]]
        # Rotate the order from size to size and round to round, so that
        # drift (other engineers' builds) hits every variant alike.
        shift = (k * 5 + index * 3) % len(jobs)
        for sender, method, depth in jobs[shift:] + jobs[:shift]:
            if sender == "sendmsg":
                mb, cpu = sendmsg_run(sendmsg, method, size, depth, args.seconds)
            elif sender == "uring":
                mb, cpu = uring_run(uring, method, size, depth, args.seconds)
            else:
                mb, cpu = regret.run_reference(example, method, size,
                                               ["-n", str(EXAMPLE_BATCH[depth])], whole)
            # The baselines have nothing in flight: one run serves every class.
            shared = method in ("copy", "uring_send") and sender != "liburing"
            for d in (DEPTHS if shared else [depth]):
                (uring_rows if sender == "uring" else rows)[d].append(
                    f"{sender},{method},{size},0,{mb:.1f},{cpu:.2f},")
            print(f"round {index}: {sender:8} {method:20} depth {depth:6} {size:6} "
                  f"{mb:9.1f} MB/s {cpu:6.1f} % CPU", file=sys.stderr)
    stamp = time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())
    load = os.getloadavg()[0]

    def write(name, depth, what, table):
        (out_dir / f"{name}_{index}_{depth}.csv").write_text(
            f"# bench/depth.py round {index}, depth class {depth}, {stamp}, load average "
            f"{load:.1f}: {what}\n" + HEADER + "\n" + "\n".join(table[depth]) + "\n")

    for depth in DEPTHS:
        buffers = STREAM_IN_FLIGHT if depth == "stream" else depth
        write("ref", depth, f"fidelity_ref_sendmsg --udp with {buffers} buffers (copy: one run "
              f"per size, shared by every class); liburing's send-zerocopy example -n "
              f"{EXAMPLE_BATCH[depth]}, {whole + 0.2:.1f} s; sendmsg {args.seconds} s", rows)
        write("uring", depth, f"fidelity_ref_uring --udp, {URING_IN_FLIGHT[depth]} in flight, "
              f"waiting for {URING_WAIT[depth]} completion(s) a call (send: one run per size, "
              f"shared by every class), {args.seconds} s", uring_rows)


def zcal_costs_by_depth(path):
    """regret.read_costs of zcal's samples, one table per class: that
    class's zerocopy samples with every baseline sample (probed at stream
    for every class, as `zcal analyze` pairs them)."""
    try:
        text = Path(path).read_text()
    except (OSError, UnicodeDecodeError) as error:
        raise BenchError(f"{path}: cannot read it: {error}") from None
    lines = [line for line in text.splitlines() if line and not line.startswith("#")]
    records = list(csv.reader(lines))
    if not records or "method" not in records[0]:
        raise BenchError(f"{path}: not a samples table (no header with a method column)")
    header = records[0]
    at = header.index("depth") if "depth" in header else None
    method_at = header.index("method")
    tables = {}
    with tempfile.TemporaryDirectory(prefix="zcal-depth-") as tmp:
        for depth in DEPTHS:
            keep = [r for r in records[1:]
                    if len(r) > method_at and (r[method_at] not in BASELINE or
                                               (r[at] if at is not None and len(r) > at
                                                else "stream") == depth)]
            split = Path(tmp) / f"{Path(path).stem}_{depth}.csv"
            out = io.StringIO()
            csv.writer(out, lineterminator="\n").writerows([header, *keep])
            split.write_text(out.getvalue())
            tables[depth] = regret.read_costs(split)
    return tables


def decide_by_depth(zcal, path, extra):
    """{depth: {method: (threshold or None, verdict)}} from `zcal analyze --json`;
    a method not probed at a class takes the stream class's answer, as its
    readers do."""
    try:
        doc = json.loads(regret.run_zcal(zcal, ["analyze", *extra, "--json", str(path)]))
    except ValueError as error:
        raise BenchError(f"zcal analyze --json {path}: not JSON: {error}") from None
    out, not_probed = {}, {}
    for one in doc.get("depths", []):
        methods = {}
        for p in one["paths"].values():
            for method, result in p["methods"].items():
                verdict = result["verdict"]
                methods[method] = (result["threshold_bytes"] if verdict in ("threshold", "always")
                                   else None, verdict)
        out[str(one["depth"])] = methods
        not_probed[str(one["depth"])] = [m for names in (one.get("not_probed") or {}).values()
                                         for m in names]
    missing = [d for d in DEPTHS if d not in out]
    if missing:
        raise BenchError(f"{path}: zcal analyze found no samples of depth class "
                         f"{', '.join(missing)}; record it with bench/depth.py --record")
    # A method the calibration left unprobed at a class has no entry of that
    # class, and libzcal gives its readers the stream entry: judged as that.
    for depth, methods in not_probed.items():
        for method in methods:
            if method in out["stream"] and method not in out[depth]:
                out[depth][method] = out["stream"][method]
    return out


def key(threshold):
    return float("inf") if threshold is None else threshold


def inversions(decided, zcal_costs):
    """Lines for each class that takes a larger threshold than the next
    shallower one, with what zcal measured at the deeper class in between."""
    lines = []
    for method in BASELINE:
        for shallow, deep in zip(DEPTHS, DEPTHS[1:]):
            if method not in decided[shallow] or method not in decided[deep]:
                continue
            ts, td = decided[shallow][method][0], decided[deep][method][0]
            if key(td) <= key(ts):
                continue
            costs = zcal_costs[deep]
            probed = sorted((s, costs[(method, s)] / costs[(BASELINE[method], s)])
                            for (m, s) in costs if m == method and (BASELINE[method], s) in costs)
            between = [(s, r) for s, r in probed if key(ts) <= s < key(td)]
            said = [f"{regret.size_text(s)} {r:.2f}" for s, r in between if r >= 1]
            if said:
                why = (f"{EXPLAINED}: zerocopy/baseline CPU per byte at depth {deep}: "
                       + ", ".join(said))
            elif between:
                why = (f"{CONTRADICTED}: zerocopy cheaper at every size probed between "
                       "them: " + ", ".join(f"{regret.size_text(s)} {r:.2f}" for s, r in between))
            else:
                # Nothing probed between the two thresholds: the deeper class's
                # curve fit placed it; show the sizes around it.
                near = [(s, r) for s, r in probed if s < key(ts)][-1:] + [
                    (s, r) for s, r in probed if s >= key(td)][:1]
                why = (f"{FITTED} (no size probed between them at depth {deep}; around: "
                       + ", ".join(f"{regret.size_text(s)} {r:.2f}" for s, r in near) + ")")
            lines.append(f"  {method}: depth {deep} takes {regret.size_text(td)} above depth "
                         f"{shallow}'s {regret.size_text(ts)}; {why}")
    return lines


def judge_depths(runs, tables, decisions):
    """Per (method, reference, depth): one judgement per (zcal round,
    reference round). `tables` is keyed (reference, round, depth)."""
    rows = {}
    for a in runs:
        decided = decisions[a]
        for (reference, b, depth), costs in tables.items():
            for method in BASELINE:
                if reference not in [r for r, _ in REFERENCES[method]]:
                    continue
                if method not in decided[depth] or method not in decided["stream"]:
                    continue
                if not any(m == method for m, _ in costs):
                    continue
                judged = regret.judged_sizes(costs, method, f"{reference}_{b}_{depth}.csv")
                w = regret.weights_of(judged, None)
                best = min([None] + sorted(judged),
                           key=lambda t: regret.extra_pp(costs, method, t, w))
                fixed = [regret.extra_pp(costs, method, t, w) for _, t in FIXED]
                zcal_t = decided[depth][method][0]
                stream_t = decided["stream"][method][0]
                rows.setdefault((method, reference, depth), []).append({
                    "a": a, "b": b, "zcal_t": zcal_t, "stream_t": stream_t,
                    "verdict": decided[depth][method][1], "best_t": best,
                    "best": regret.extra_pp(costs, method, best, w),
                    "zcal": regret.extra_pp(costs, method, zcal_t, w),
                    "stream": regret.extra_pp(costs, method, stream_t, w),
                    "fixed": min(zip(fixed, (name for name, _ in FIXED)))})
    return rows


def joined(values):
    seen = []
    for v in values:
        if v not in seen:
            seen.append(v)
    return "/".join(seen)


def report(runs, rows, decisions, zcal_costs, extra):
    print(f"zcal per depth class against independent senders on the discard path: "
          f"{len(runs)} round(s); decided with zcal analyze {' '.join(extra) or '(default)'}; "
          f"judged on the other sender's table at the same class, every zcal round on every "
          f"reference round ({len(runs) ** 2} pair(s)); extra CPU per byte over the cheaper "
          "send at each size, percentage points (mean over the pairs)")
    for method, reference, sender in ((m, r, name) for m in BASELINE
                                      for r, name in REFERENCES[m]):
        present = [d for d in DEPTHS if (method, reference, d) in rows]
        if not present:
            if reference == "uring":
                print(f"\n{method} (reference: {sender}): not in this recording "
                      "(no uring_R_D.csv)")
            continue
        print(f"\n{method} (reference: {sender}, against its {BASELINE[method]})")
        print(f"  {'depth':6} {'zcal':>12} {'reference':>12} {'zcal pp':>8} {'stream@all':>10} "
              f"{'best fixed':>16} {'best pp':>8}  within {TARGET_PP} pp of the best")
        for depth in present:
            r = rows[(method, reference, depth)]
            zt = joined(regret.size_text(x["zcal_t"]) + ("?" if x["verdict"] == "inconclusive"
                                                         else "") for x in r)
            ref = joined(regret.size_text(x["best_t"]) for x in r)
            mean = lambda field: statistics.mean(x[field] for x in r)  # noqa: E731
            fixed = statistics.mean(x["fixed"][0] for x in r)
            names = joined(x["fixed"][1] for x in r)
            ok = sum(x["zcal"] - x["best"] <= TARGET_PP for x in r)
            print(f"  {depth:6} {zt:>12} {ref:>12} {mean('zcal'):8.2f} {mean('stream'):10.2f} "
                  f"{fixed:7.2f} {names:>8} {mean('best'):8.2f}  "
                  f"{'yes' if ok == len(r) else 'NO'} ({ok} of {len(r)} pairs)")
        same_zcal = [d for d in present[:-1] if all(
            x["zcal_t"] == x["stream_t"] for x in rows[(method, reference, d)])]
        same_ref = [d for d in present[:-1] if all(
            x["best_t"] == y["best_t"] for x, y in zip(rows[(method, reference, d)],
                                                       rows[(method, reference, "stream")]))]
        print("  classes that do not differ from stream here: zcal "
              f"{', '.join(same_zcal) or 'none'}; reference {', '.join(same_ref) or 'none'}")
        if "1" in present:
            r = rows[(method, reference, "1")]
            per_class, stream = statistics.mean(x["zcal"] for x in r), statistics.mean(
                x["stream"] for x in r)
            print(f"  depth 1: per-class {per_class:.2f} pp, stream at every depth {stream:.2f} pp:"
                  f" per-class {'no worse' if per_class <= stream + regret.TIE_PP else 'WORSE'}")
    print("\norder of the classes (a deeper class takes no larger threshold unless its "
          "costs say so)")
    for a in runs:
        lines = inversions(decisions[a], zcal_costs[a])
        print(f"  round {a}: " + ("every deeper class at or below the shallower one"
                                  if not lines else f"{len(lines)} inversion(s)"))
        for line in lines:
            print("  " + line)


def ratio_rows(costs, method):
    """{size: zerocopy / baseline CPU per byte} where both were probed."""
    return {s: costs[(m, s)] / costs[(BASELINE[method], s)]
            for (m, s) in costs if m == method and (BASELINE[method], s) in costs}


def apart(a, b):
    """Whether two sets of rounds do not overlap (None: never, above all)."""
    a, b = [key(x) for x in a], [key(x) for x in b]
    return min(a) > max(b) or min(b) > max(a)


def spread_text(values):
    mean = statistics.mean(values)
    return f"{mean:.2f} [{min(values):.2f}-{max(values):.2f}]" if len(values) > 1 \
        else f"{mean:.2f}"


def median_size(thresholds):
    """The median crossover of the rounds, never above every size."""
    middle = statistics.median_low(sorted(key(t) for t in thresholds))
    return regret.size_text(None if middle == float("inf") else int(middle))


def mean_of(rounds, size):
    return statistics.mean(r[size] for r in rounds)


def buffer_figures(args, out_dir, runs, extra):
    """{buffers: ([decisions per round], [zcal costs per round])} and the
    notes each round recorded."""
    figures = {}
    for buffers in args.buffers:
        decided, costs = [], []
        for run in runs:
            path = zcal_samples(out_dir, run, buffers)
            decided.append(decide_by_depth(args.zcal, path, extra))
            costs.append(zcal_costs_by_depth(path))
        figures[buffers] = (decided, costs)
    notes = []
    for run in runs:
        note = out_dir / f"buffers_{run}.txt"
        if note.exists():
            notes += [f"round {run}: " + line for line in note.read_text().splitlines()]
    return figures, notes


def report_buffers(runs, figures, notes, sizes_wanted):
    """Pages against huge pages, per method and class; returns whether any
    crossover moved beyond the noise."""
    print(f"\nbuffer memory: zcal's own probes on the discard path with 4 KiB pages and with "
          f"huge pages, {len(runs)} round(s); crossover per round (? inconclusive), "
          "zerocopy/baseline CPU per byte at the sizes every round probed: mean [min-max] over "
          "the rounds")
    for line in notes:
        print(f"  {line}")
    moved, ratios_moved, ratios_all = [], 0, 0
    for method in BASELINE:
        present = [d for d in DEPTHS if all(method in dec[d] for b in figures
                                            for dec in figures[b][0])]
        if not present:
            continue
        print(f"\n{method} (against {BASELINE[method]})")
        for depth in present:
            per = {b: [ratio_rows(c[depth], method) for c in figures[b][1]] for b in figures}
            # The bench's sizes that every round probed (the planner's coarse
            # grid meets them); its refinements differ from round to round.
            sizes = sorted(set(sizes_wanted).intersection(*[set(r) for b in per
                                                             for r in per[b]]))
            header = "".join(f"{regret.size_text(s):>17}" for s in sizes)
            print(f"  depth {depth:6} {'buffers':10}{header}  crossover per round")
            thresholds = {b: [dec[depth][method] for dec in figures[b][0]] for b in figures}
            for b in figures:
                crossing = "/".join(regret.size_text(t) + ("?" if v == "inconclusive" else "")
                                    for t, v in thresholds[b])
                cells = "".join(f"{spread_text([r[s] for r in per[b]]):>17}" for s in sizes)
                print(f"  {'':12} {b:10}{cells}  {crossing}")
            if len(figures) < 2:
                continue
            if len(runs) < 2:
                print(f"  {'':12} noise: needs --rounds 2 or more")
                continue
            t_apart = apart(*[[t for t, _ in thresholds[b]] for b in figures])
            beyond = [s for s in sizes if apart(*[[r[s] for r in per[b]] for b in figures])]
            ratios_moved += len(beyond)
            ratios_all += len(sizes)
            if t_apart:
                moved.append(f"{method} depth {depth}")
            moves = [f"{regret.size_text(s)} "
                     f"({mean_of(per['hugepages'], s) - mean_of(per['pages'], s):+.2f})"
                     for s in beyond]
            medians = ", ".join(f"{b} {median_size([t for t, _ in thresholds[b]])}"
                                for b in figures)
            print(f"  {'':12} crossover (median {medians}) {BEYOND if t_apart else WITHIN}; "
                  f"ratios {BEYOND} at "
                  f"{', '.join(moves) or 'no size'} of {len(sizes)}")
    if len(figures) > 1 and len(runs) > 1:
        print(f"\nverdict: huge pages move {'an answer' if moved else 'no answer'} beyond the "
              f"noise here{': ' + ', '.join(moved) if moved else ''} (ratios apart at "
              f"{ratios_moved} of {ratios_all} method, class and size cells)")
    return bool(moved)


def evaluate(args, out_dir, runs):
    extra = args.analyze_args.split()
    tables, decisions, zcal_costs = {}, {}, {}
    # Everything is read and decided before anything is printed, so that a
    # bad table ends the bench with one line, not half a report.
    for run in runs:
        for depth in DEPTHS:
            tables[("ref", run, depth)] = regret.read_costs(out_dir / f"ref_{run}_{depth}.csv")
            # Recordings made before the bench had its own io_uring
            # reference have no uring_R_D.csv: the example judges alone.
            uring = out_dir / f"uring_{run}_{depth}.csv"
            if uring.exists():
                tables[("uring", run, depth)] = regret.read_costs(uring)
        decisions[run] = decide_by_depth(args.zcal, out_dir / f"zcal_{run}.csv", extra)
        zcal_costs[run] = zcal_costs_by_depth(out_dir / f"zcal_{run}.csv")
    buffers = buffer_figures(args, out_dir, runs, extra) if len(args.buffers) > 1 else None
    rows = judge_depths(runs, tables, decisions)
    report(runs, rows, decisions, zcal_costs, extra)
    if buffers:
        report_buffers(runs, *buffers, args.sizes)
    return 0


def recorded_runs(from_dir):
    out_dir = Path(from_dir)
    if not out_dir.is_dir():
        raise BenchError(f"--from {from_dir}: not a folder")
    runs = sorted(p.stem.split("_", 1)[1] for p in out_dir.glob("zcal_*.csv")
                  if p.stem.count("_") == 1)
    if not runs:
        raise BenchError(f"--from {from_dir}: no zcal_R.csv in it (what --record writes)")
    missing = [f"ref_{r}_{d}.csv" for r in runs for d in DEPTHS
               if not (out_dir / f"ref_{r}_{d}.csv").exists()]
    if missing:
        raise BenchError(f"--from {from_dir}: missing {', '.join(missing)} (--record writes "
                         "zcal_R.csv and ref_R_D.csv for every class D)")
    return out_dir, runs


def check_recorded_buffers(args, out_dir, runs):
    missing = [zcal_samples(out_dir, r, b).name for r in runs for b in args.buffers
               if not zcal_samples(out_dir, r, b).exists()]
    if missing:
        raise BenchError(f"--from {out_dir}: missing {', '.join(missing)} (--record with "
                         f"--buffers {','.join(args.buffers)} writes them)")


def measure(args):
    if os.environ.get(NAMESPACE_ENV) != "1":
        if os.geteuid() != 0:
            raise BenchError("measuring needs root (a network namespace and tc); run as root, "
                             "or judge recorded tables with --from DIR")
        for tool in ("unshare", "ip", "tc", "gcc"):
            if shutil.which(tool) is None:
                raise BenchError(f"{tool}: not found; install it (iproute2, util-linux, gcc)")
        for binary in (args.zcal, *(str(Path(args.build) / "bench" / name)
                                    for name in ("fidelity_ref_sendmsg", "fidelity_ref_uring"))):
            if not os.access(binary, os.X_OK):
                raise BenchError(f"{binary}: not an executable; build it (meson compile -C "
                                 f"{args.build}) or pass --zcal/--build")
        # The namespace dies with the process, whatever ends it: nothing to
        # clean up by hand. The senders run as our children, so wait4 has their CPU.
        os.environ[NAMESPACE_ENV] = "1"
        os.execvp("unshare", ["unshare", "-n", "sh", "-c", fidelity_discard.NAMESPACE +
                              shlex.join([sys.executable, *sys.argv])])
    tmp = tempfile.mkdtemp(prefix="zcal-depth-")
    try:
        example = regret.build_example(tmp)
        out_dir = Path(args.record) if args.record else Path(tmp)
        out_dir.mkdir(parents=True, exist_ok=True)
        runs = []
        for index in range(1, args.rounds + 1):
            measure_round(args, example, index, out_dir)
            runs.append(str(index))
        return evaluate(args, out_dir, runs)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def main():
    parser = Parser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--zcal", default="build/agent/cli/zcal")
    parser.add_argument("--build", default="build",
                        help="meson build dir with bench/fidelity_ref_sendmsg and "
                             "fidelity_ref_uring (default build)")
    parser.add_argument("--rounds", type=int, default=1, help="rounds, 1 to 10 (default 1)")
    parser.add_argument("--seconds", type=float, default=1.2,
                        help="seconds per reference run, 0.2 to 10 (default 1.2; the example "
                             "runs 0.2 s plus whole seconds, at least 1.2 s)")
    parser.add_argument("--budget", type=float, default=20,
                        help="zcal calibrate --budget, shared by the 4 classes, 2 to 120 "
                             "(default 20)")
    parser.add_argument("--sizes", default=",".join(str(s) for s in DEFAULT_SIZES),
                        help="reference sizes in bytes or K (default "
                             f"{','.join(str(s) for s in DEFAULT_SIZES)})")
    parser.add_argument("--buffers", default="pages",
                        help="buffer memory of zcal's calibrations, compared side by side: "
                             "pages or pages,hugepages (default pages)")
    parser.add_argument("--record", help="keep the measured tables in this folder")
    parser.add_argument("--from", dest="from_dir", help="judge tables recorded in this folder")
    parser.add_argument("--analyze-args", default=regret.JUDGED_OBJECTIVE,
                        help=f"options for the deciding zcal analyze (default "
                             f"\"{regret.JUDGED_OBJECTIVE}\", what the judge counts)")
    args = parser.parse_args()
    if not 1 <= args.rounds <= 10:
        parser.error(f"--rounds {args.rounds}: 1 to 10")
    if not 0.2 <= args.seconds <= 10:
        parser.error(f"--seconds {args.seconds}: 0.2 to 10")
    if not 2 <= args.budget <= 120:
        parser.error(f"--budget {args.budget}: 2 to 120")
    if args.record and args.from_dir:
        parser.error("--record and --from: one or the other (--from measures nothing)")
    try:
        args.sizes = parse_sizes(args.sizes)
        args.buffers = parse_buffers(args.buffers)
        if args.from_dir:
            out_dir, runs = recorded_runs(args.from_dir)
            check_recorded_buffers(args, out_dir, runs)
            return evaluate(args, out_dir, runs)
        return measure(args)
    except BenchError as error:
        print(f"depth.py: {error}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
