#!/usr/bin/env python3
"""Footprint of `zcal agent` while idle between calibrations.

Starts the agent with the embedded default configuration (only the segment,
state file and metrics port are made private to this run), waits for its
startup calibration to finish, then measures over a window:
  - resident memory (VmRSS) and its peak (VmHWM),
  - CPU time of all its threads (/proc/PID/task/*/schedstat, ns) per
    second of wall time, idle and while scraped once a second.
Targets: at most 20 MiB resident, at most 0.1 % of a core idle.
With --sink the agent also serves its peer sink on 127.0.0.1 (auth none:
nothing leaves loopback); the target for that: RSS <= 10 MiB and
<= 0.1 % of a core idle.

usage: bench/agent_footprint.py [--zcal build/agent/cli/zcal] [--seconds 30] [--sink]
"""
import argparse
import os
import re
import signal
import subprocess
import sys
import tempfile
import time
import urllib.request


def cpu_ns(pid):
    total = 0
    for tid in os.listdir(f"/proc/{pid}/task"):
        try:
            with open(f"/proc/{pid}/task/{tid}/schedstat") as f:
                total += int(f.read().split()[0])
        except FileNotFoundError:
            pass  # a thread that just ended
    return total


def memory_kib(pid, field):
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith(field + ":"):
                return int(line.split()[1])
    return 0


def wait_for(log_path, pattern, timeout):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        with open(log_path) as f:
            m = re.search(pattern, f.read())
        if m:
            return m
        time.sleep(0.05)
    sys.exit(f"agent_footprint: '{pattern}' not in {log_path} after {timeout} s")


def measure(pid, seconds, scrape_url=None):
    start_cpu, start = cpu_ns(pid), time.monotonic()
    while time.monotonic() - start < seconds:
        if scrape_url:
            urllib.request.urlopen(scrape_url, timeout=5).read()
        time.sleep(1)
    wall = time.monotonic() - start
    return (cpu_ns(pid) - start_cpu) / (wall * 1e9) * 100


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--zcal", default="build/agent/cli/zcal")
    parser.add_argument("--seconds", type=float, default=30)
    parser.add_argument("--sink", action="store_true",
                        help="serve the peer sink too (127.0.0.1, any port)")
    args = parser.parse_args()

    with tempfile.TemporaryDirectory(prefix="zcal-footprint-") as tmp:
        segment = f"/zcal-footprint-{os.getpid()}"
        config = os.path.join(tmp, "agent.yaml")
        with open(config, "w") as f:
            f.write(f"segment: {{name: {segment}}}\n"
                    f"state: {{path: {tmp}/state.json}}\n"
                    "metrics: {listen: \"127.0.0.1:0\"}\n")
            if args.sink:
                f.write("sink: {listen: \"127.0.0.1:0\", auth: none}\n")
        log = os.path.join(tmp, "agent.log")
        with open(log, "w") as err:
            agent = subprocess.Popen([args.zcal, "agent", "--config", config],
                                     stderr=err, stdout=subprocess.DEVNULL)
        try:
            wait_for(log, r"calibration finished", 60)
            port = wait_for(log, r"serving metrics at http://127\.0\.0\.1:(\d+)", 5)[1]
            time.sleep(2)  # let the startup calibration's threads wind down
            idle = measure(agent.pid, args.seconds)
            rss = memory_kib(agent.pid, "VmRSS") / 1024
            scraped = measure(agent.pid, args.seconds,
                              f"http://127.0.0.1:{port}/metrics")
            peak = memory_kib(agent.pid, "VmHWM") / 1024
            threads = len(os.listdir(f"/proc/{agent.pid}/task"))
            stop = time.monotonic()
            agent.send_signal(signal.SIGTERM)
            status = agent.wait(timeout=10)
            stop_s = time.monotonic() - stop
        finally:
            if agent.poll() is None:
                agent.kill()
            for path in (f"/dev/shm{segment}", f"/dev/shm{segment}.lock"):
                if os.path.exists(path):
                    os.unlink(path)

    print(f"zcal agent footprint, idle between calibrations, {args.seconds:.0f} s windows"
          + (", peer sink on" if args.sink else ""))
    target = 10 if args.sink else 20
    print(f"  resident memory     {rss:6.1f} MiB  (peak {peak:.1f} MiB, target <= {target} MiB)")
    print(f"  cpu idle            {idle:6.3f} %   of one core (target <= 0.1 %)")
    print(f"  cpu, scraped 1/s    {scraped:6.3f} %   of one core")
    print(f"  threads             {threads}")
    print(f"  SIGTERM to exit     {stop_s:6.3f} s  (exit status {status})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
