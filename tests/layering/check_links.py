#!/usr/bin/env python3
"""Checks that a program built from the offline commands (analyze, report)
links none of the service's libraries, and that it works.

usage: check_links.py PROGRAM SAMPLES_CSV
Fails when PROGRAM's ELF NEEDED entries name Prometheus, yaml-cpp, sodium,
spdlog, liburing or libmnl, when it defines Boost.Asio code, or when
`PROGRAM analyze SAMPLES_CSV` and `PROGRAM report SAMPLES_CSV` fail.
"""
import os
import subprocess
import sys
import tempfile

BANNED_LIBRARIES = ("libprometheus", "libyaml-cpp", "libsodium", "libspdlog",
                    "liburing", "libmnl")


def needed(program):
    out = subprocess.run(["readelf", "-d", program], check=True,
                         capture_output=True, text=True).stdout
    return [line.split("[", 1)[1].rstrip("]") for line in out.splitlines()
            if "(NEEDED)" in line]


def main():
    program, csv = sys.argv[1], sys.argv[2]
    problems = []
    libraries = needed(program)
    for lib in libraries:
        if lib.startswith(BANNED_LIBRARIES):
            problems.append(f"{os.path.basename(program)} needs {lib}")
    symbols = subprocess.run(["nm", "-C", "--defined-only", program], check=True,
                             capture_output=True, text=True).stdout
    asio = [s for s in symbols.splitlines() if "boost::asio" in s]
    if asio:
        problems.append(f"{len(asio)} Boost.Asio symbols, e.g. {asio[0]}")
    analyzed = subprocess.run([program, "analyze", csv], capture_output=True, text=True)
    if analyzed.returncode != 0 or "msg_zerocopy" not in analyzed.stdout:
        problems.append(f"analyze exited {analyzed.returncode}: {analyzed.stderr.strip()}")
    with tempfile.TemporaryDirectory() as work:
        page = os.path.join(work, "report.html")
        reported = subprocess.run([program, "report", "-o", page, csv],
                                  capture_output=True, text=True)
        if reported.returncode != 0 or not os.path.getsize(page):
            problems.append(f"report exited {reported.returncode}: {reported.stderr.strip()}")
    for p in problems:
        print(p)
    print(f"links: {', '.join(libraries)}")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
