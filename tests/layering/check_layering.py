#!/usr/bin/env python3
"""Fails when a component or a room of the agent includes a header it must
not: a header of a room above it, a private header of another room, or a
library its layer keeps out (docs/architecture.md, "Layers" and "Rooms"),
itself or through the headers of other units it includes;
and when a static library links a room or a library that none of its files
includes (a link no include needs, as a meson.build says it).

usage: check_layering.py SOURCE_ROOT [--expect-violations N]
Prints one line per violation as FILE:LINE: what, and exits 1 when there
is any; prints the number of files checked otherwise. With
--expect-violations N (the self-test on a fixture tree) it exits 0 only
when exactly N violations were found.
"""
import os
import re
import sys

# Who may include whom. A unit is a component ("calibrator") or a room of
# the agent ("agent/publish"); each may include its own headers and those
# of the units listed, never the ones above it.
ALLOWED = {
    "client": set(),
    "common": set(),
    "calibrator": {"common", "client"},
    "probes/types": {"common"},
    "probes/host": {"common", "probes/types"},
    "probes/sink": {"common"},
    "probes/send": {"common", "calibrator", "probes/types", "probes/host"},
    "probes/peer": {"common", "calibrator", "probes/types", "probes/sink",
                    "probes/send"},
    "probes/discard": {"common", "calibrator", "probes/types", "probes/host",
                       "probes/send"},
    "probes/calibration": {"common", "calibrator", "probes/types",
                           "probes/host", "probes/sink", "probes/send",
                           "probes/peer", "probes/discard"},
    "agent/domain": {"common", "calibrator", "probes"},
    "agent/state": {"common", "calibrator", "probes", "agent/domain"},
    "agent/apps": {"common", "calibrator", "probes", "client", "agent/domain"},
    "agent/peers": {"common", "calibrator", "probes", "agent/domain"},
    "agent/report": {"common", "calibrator", "probes", "client",
                     "agent/domain", "agent/state"},
    "agent/doctor": {"common", "calibrator", "probes", "client",
                     "agent/domain", "agent/state", "agent/report"},
    "agent/config": {"common", "calibrator", "probes", "agent/domain",
                     "agent/peers"},
    "agent/metrics": {"common", "calibrator", "probes", "client",
                      "agent/domain", "agent/state", "agent/report",
                      "agent/apps"},
    "agent/publish": {"common", "calibrator", "probes", "client",
                      "agent/domain", "agent/state", "agent/peers",
                      "agent/config"},
    "agent/service": {"common", "calibrator", "probes", "client",
                      "agent/domain", "agent/state", "agent/peers",
                      "agent/config", "agent/report", "agent/metrics",
                      "agent/publish", "agent/apps"},
    "agent/cli": {"common", "calibrator", "probes", "client",
                  "agent/domain", "agent/state", "agent/peers",
                  "agent/config", "agent/report", "agent/metrics",
                  "agent/publish", "agent/service", "agent/doctor",
                  "agent/apps"},
}

# Libraries a unit keeps out of all its files ("<prefix"), so that what
# links it does not link them: the calibrator is pure, the probes know no
# YAML or Prometheus, the domain types name no library, and `zcal analyze`
# and `zcal report` (report, state, domain) need no Prometheus, Asio or
# sodium.
HEAVY = ["prometheus/", "yaml-cpp/", "boost/", "spdlog/", "CLI/", "sodium"]
FORBIDDEN = {
    "client": ["prometheus/", "yaml-cpp/", "boost/", "spdlog/", "CLI/",
               "sodium", "nlohmann/", "tl/", "fmt/"],
    "common": HEAVY + ["nlohmann/", "liburing", "libmnl"],
    "calibrator": HEAVY + ["sys/socket.h", "netinet/", "arpa/", "liburing",
                           "libmnl", "linux/"],
    "probes": ["prometheus/", "yaml-cpp/", "boost/", "spdlog/", "CLI/"],
    # Within the probes, what only one room needs stays in that room: the
    # peer protocol's sodium, the senders' io_uring, host facts' netlink.
    # (The socket API's headers are allowed: a target's endpoint is a
    # common::HostPort, whose address family is the socket API's.)
    "probes/types": ["liburing", "libmnl", "sodium"],
    "probes/host": ["liburing", "sodium"],
    "probes/sink": ["liburing", "libmnl", "sodium"],
    "probes/send": ["libmnl", "sodium"],
    "probes/discard": ["sodium"],
    "agent/domain": HEAVY + ["nlohmann/", "fmt/"],
    "agent/state": HEAVY,
    # The reader of report objects: libzcal's ABI header, no library.
    "agent/apps": HEAVY + ["nlohmann/", "fmt/"],
    "agent/peers": ["prometheus/", "yaml-cpp/", "boost/", "CLI/", "sodium"],
    "agent/report": HEAVY,
    "agent/doctor": HEAVY,
    "agent/config": ["prometheus/", "boost/", "spdlog/", "CLI/", "sodium"],
}
# A public header of these units names none of these libraries either.
PUBLIC_FORBIDDEN = {
    "agent/config": ["yaml-cpp/"],
    "agent/publish": ["nlohmann/"],
}

INCLUDE = re.compile(r'^\s*#\s*include\s*([<"])([^>"]+)[>"]')
SOURCES = (".h", ".hpp", ".c", ".cc")


def unit_of(rel):
    """The unit a source file belongs to, or None (tests, bench, ...)."""
    parts = rel.split(os.sep)
    if parts[0] in ("client", "common", "calibrator"):
        return parts[0]
    if parts[0] == "probes" and len(parts) > 2:
        return "probes/" + parts[1]
    if parts[0] == "agent" and len(parts) > 2:
        return "agent/" + parts[1]
    return None


def unit_of_header(name):
    """The unit a "zcal/..." include names, or None for another header."""
    parts = name.split("/")
    if parts[0] != "zcal" or len(parts) < 2:
        return None
    if parts[1] in ("zcal.h", "zcal_codes.h", "zcal.hpp"):
        return "client"
    if parts[1] in ("agent", "probes"):
        return parts[1] + "/" + parts[2] if len(parts) > 3 else parts[1] + "/?"
    return parts[1]


def allowed(unit, target):
    """Whether `unit` may include a header of `target`. "probes" in a
    unit's list stands for every room of the probes."""
    if target in ALLOWED[unit]:
        return True
    return target.startswith("probes/") and "probes" in ALLOWED[unit]


def forbidden(unit):
    """The library prefixes `unit` keeps out: its own, and for a room of the
    probes also those of the probes as a whole."""
    banned = list(FORBIDDEN.get(unit, []))
    if unit.startswith("probes/"):
        banned += FORBIDDEN["probes"]
    return banned


def public_headers(root):
    """Include name ("zcal/zcal.h", "zcal/probes/host/host_facts.h") ->
    file, for every public header of the tree (a unit's include/ folder)."""
    headers = {}
    for top in ("client", "common", "calibrator", "probes", "agent"):
        for dirpath, _, files in os.walk(os.path.join(root, top)):
            parts = dirpath.split(os.sep)
            if "include" not in parts:
                continue
            base = os.sep.join(parts[:len(parts) - parts[::-1].index("include")])
            for f in files:
                if f.endswith(SOURCES):
                    path = os.path.join(dirpath, f)
                    headers[os.path.relpath(path, base)] = path
    return headers


def reached_libraries(path, headers, seen):
    """The library headers (<...> or "..." names that are not the tree's)
    that `path` includes, itself or through the tree's headers it includes,
    each once; `seen` holds the files already followed."""
    if path in seen:
        return []
    seen.add(path)
    found = []
    with open(path, encoding="utf-8") as source:
        for line in source:
            m = INCLUDE.match(line)
            if not m:
                continue
            name = m.group(2)
            local = os.path.join(os.path.dirname(path), name)
            if name in headers:
                found += reached_libraries(headers[name], headers, seen)
            elif m.group(1) == '"' and os.path.exists(local):
                found += reached_libraries(local, headers, seen)
            else:
                found.append(name)
    return found


def check(root):
    problems = []
    checked = 0
    headers = public_headers(root)
    for top in ("client", "common", "calibrator", "probes", "agent"):
        for dirpath, _, files in os.walk(os.path.join(root, top)):
            for f in sorted(files):
                if not f.endswith(SOURCES):
                    continue
                path = os.path.join(dirpath, f)
                rel = os.path.relpath(path, root)
                unit = unit_of(rel)
                if unit is None:
                    continue
                checked += 1
                if unit not in ALLOWED:
                    problems.append(f"{rel}:1: {unit} is not a known room; "
                                    "add it to tests/layering/check_layering.py "
                                    "and docs/architecture.md")
                    continue
                public = os.sep + "include" + os.sep in rel
                with open(path, encoding="utf-8") as source:
                    for number, line in enumerate(source, 1):
                        m = INCLUDE.match(line)
                        if not m:
                            continue
                        kind, name = m.groups()
                        target = unit_of_header(name)
                        where = f"{rel}:{number}"
                        if target is not None:
                            if target != unit and not allowed(unit, target):
                                problems.append(
                                    f"{where}: {unit} includes {name} of "
                                    f"{target}, which it must not depend on")
                            elif target != unit and name in headers:
                                # What another unit's header includes is
                                # included here too: the libraries this
                                # unit keeps out stay out through it.
                                for lib in reached_libraries(headers[name], headers, set()):
                                    if any(lib.startswith(p) for p in forbidden(unit)):
                                        problems.append(
                                            f"{where}: {unit} includes {name}, "
                                            f"which brings <{lib}>, a library "
                                            "it keeps out")
                            continue
                        if kind == '"':
                            local = os.path.join(dirpath, name)
                            generated = name.endswith("_data.h") or name.startswith("default_config")
                            if not os.path.exists(local) and not generated:
                                problems.append(
                                    f"{where}: \"{name}\" is not a header of "
                                    f"{os.path.relpath(dirpath, root)}: include "
                                    "another unit's public header as zcal/...")
                            continue
                        banned = forbidden(unit)
                        if public:
                            banned = banned + PUBLIC_FORBIDDEN.get(unit, [])
                        for prefix in banned:
                            if name.startswith(prefix):
                                problems.append(
                                    f"{where}: {unit} includes <{name}>, a "
                                    "library it keeps out")
    return problems, checked


# The header prefix of each external dependency a meson.build may name; a
# dependency not listed here (threads, gtest) is not checked.
EXTERNAL_HEADERS = {
    "json_dep": "nlohmann/", "cli11_dep": "CLI/", "fmt_dep": "fmt/",
    "yaml_dep": "yaml-cpp/", "prometheus_dep": "prometheus/",
    "spdlog_dep": "spdlog/", "boost_dep": "boost/", "liburing_dep": "liburing",
    "libmnl_dep": "libmnl/", "libsodium_dep": "sodium",
}
ASSIGNED = re.compile(r"^(\w+)\s*=\s*(static_library|declare_dependency)\(", re.M)


def call_text(text, start):
    """The text of a meson call from its opening parenthesis to the one that
    closes it."""
    depth = 0
    for i in range(start, len(text)):
        if text[i] == "(":
            depth += 1
        elif text[i] == ")":
            depth -= 1
            if depth == 0:
                return text[start:i + 1]
    return text[start:]


def dependency_names(call):
    """The names in a call's `dependencies:` (a list or one name)."""
    m = re.search(r"dependencies\s*:\s*(\[[^\]]*\]|\w+)", call)
    if not m:
        return []
    return re.findall(r"\b(\w+_dep)\b", m.group(1))


def included_by(paths):
    """Units and library headers the files include: ("unit", name) pairs
    for zcal headers, the raw name for any other."""
    names = set()
    for path in paths:
        with open(path, encoding="utf-8") as source:
            for line in source:
                m = INCLUDE.match(line)
                if m:
                    target = unit_of_header(m.group(2))
                    names.add(("unit", target) if target else m.group(2))
    return names


def check_links(root):
    """A static library's `dependencies:` that none of its sources (nor its
    unit's headers) includes. Each internal dependency stands for the unit
    whose meson.build declares it; an external one for its headers."""
    problems = []
    builds = []
    owner = {}  # dependency name -> unit that declares it
    for top in ("client", "common", "calibrator", "probes", "agent"):
        for dirpath, _, files in os.walk(os.path.join(root, top)):
            if "meson.build" not in files:
                continue
            path = os.path.join(dirpath, "meson.build")
            rel_dir = os.path.relpath(dirpath, root)
            # probes/ and agent/ themselves declare the union of their rooms.
            unit = (rel_dir if rel_dir in ("probes", "agent")
                    else unit_of(os.path.join(rel_dir, "src", "x.cc")))
            with open(path, encoding="utf-8") as f:
                text = f.read()
            builds.append((path, rel_dir, unit, text))
            for m in ASSIGNED.finditer(text):
                if m.group(2) == "declare_dependency" and unit:
                    owner[m.group(1)] = unit
    for path, rel_dir, unit, text in builds:
        if unit is None or unit in ("probes", "agent"):
            continue
        unit_dir = os.path.join(root, *unit.split("/"))
        headers = [os.path.join(d, f) for d, _, fs in os.walk(unit_dir)
                   for f in fs if f.endswith((".h", ".hpp"))]
        for m in ASSIGNED.finditer(text):
            if m.group(2) != "static_library":
                continue
            call = call_text(text, m.end() - 1)
            sources = [os.path.join(root, rel_dir, s)
                       for s in re.findall(r"'([^']+\.(?:cc|c))'", call)]
            sources = [s for s in sources if os.path.exists(s)]
            includes = included_by(sources + headers)
            line = text[:m.start()].count("\n") + 1
            where = f"{os.path.relpath(path, root)}:{line}"
            for dep in dependency_names(call):
                if dep in owner:
                    target = owner[dep]
                    if target == unit:
                        continue
                    needed = any(
                        t is not None and (t == target or t.startswith(target + "/"))
                        for _, t in (i for i in includes if isinstance(i, tuple)))
                    if not needed:
                        problems.append(
                            f"{where}: {m.group(1)} links {dep} ({target}), "
                            "which none of its files includes")
                elif dep in EXTERNAL_HEADERS:
                    prefix = EXTERNAL_HEADERS[dep]
                    if not any(isinstance(i, str) and i.startswith(prefix)
                               for i in includes):
                        problems.append(
                            f"{where}: {m.group(1)} links {dep}, whose "
                            f"headers (<{prefix}...>) none of its files includes")
    return problems


def main():
    args = sys.argv[1:]
    expect = None
    if "--expect-violations" in args:
        i = args.index("--expect-violations")
        expect = int(args[i + 1])
        del args[i:i + 2]
    root = args[0] if args else os.getcwd()
    problems, checked = check(root)
    problems += check_links(root)
    for p in problems:
        print(p)
    if expect is not None:
        print(f"layering: {len(problems)} violation(s), {expect} expected")
        return 0 if len(problems) == expect else 1
    if problems:
        print(f"layering: {len(problems)} violation(s) in {checked} files")
        return 1
    print(f"layering: {checked} files, every include points down and every "
          "link is included")
    return 0


if __name__ == "__main__":
    sys.exit(main())
