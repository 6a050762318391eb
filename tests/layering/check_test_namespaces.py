#!/usr/bin/env python3
"""Fails when a test file that shares its executable with others does not
keep its names in a namespace named after the file (tests/meson.build):
CI's unity builds compile several test files as one translation unit, where
two files' helpers of one name would clash.

usage: check_test_namespaces.py SOURCE_ROOT
A file with its own main() is an executable of its own and is not checked.
"""
import os
import re
import sys


def main():
    root = sys.argv[1]
    problems = []
    checked = 0
    for dirpath, _, files in os.walk(os.path.join(root, "tests")):
        if os.sep + "fuzz" in dirpath or "old_reader" in dirpath:
            continue
        for f in sorted(files):
            if not f.endswith("_test.cc"):
                continue
            path = os.path.join(dirpath, f)
            with open(path, encoding="utf-8") as source:
                text = source.read()
            if re.search(r"^int main\(", text, re.M):
                continue
            checked += 1
            stem = f[:-3]
            if not re.search(rf"^namespace (?:[A-Za-z_:]+::)?{stem} \{{$", text, re.M):
                rel = os.path.relpath(path, root)
                problems.append(f"{rel}:1: its names are not in a namespace "
                                f"named after the file (namespace ...::{stem} {{)")
    for p in problems:
        print(p)
    if problems:
        print(f"test namespaces: {len(problems)} file(s) to fix in {checked}")
        return 1
    print(f"test namespaces: {checked} files, each in its own namespace")
    return 0


if __name__ == "__main__":
    sys.exit(main())
