#!/usr/bin/env python3
"""Prints the build targets that the tests of one suite need, as
`meson compile` target names, so that a build directory used for one
suite (ThreadSanitizer, fuzzing) compiles only what that suite runs.

usage: suite-targets.py BUILD_DIR SUITE
"""
import json
import os
import subprocess
import sys


def introspect(build_dir, what):
    out = subprocess.check_output(["meson", "introspect", build_dir, what])
    return json.loads(out)


def main():
    build_dir, suite = sys.argv[1], sys.argv[2]
    source_root = introspect(build_dir, "--projectinfo").get("source_dir") or os.getcwd()
    targets = introspect(build_dir, "--targets")
    by_id = {t["id"]: t for t in targets}
    by_file = {f: t for t in targets for f in t["filename"]}
    wanted = {}
    for test in introspect(build_dir, "--tests"):
        if not any(s == suite or s.endswith(":" + suite) for s in test["suite"]):
            continue
        for dep in test.get("depends", []):
            if dep in by_id:
                wanted[dep] = by_id[dep]
        for word in test["cmd"] + test.get("args", []):
            if word in by_file:
                t = by_file[word]
                wanted[t["id"]] = t
    for t in wanted.values():
        subdir = os.path.relpath(os.path.dirname(t["defined_in"]), source_root)
        name = t["name"] if subdir == "." else f"{subdir}/{t['name']}"
        print(name)


if __name__ == "__main__":
    main()
