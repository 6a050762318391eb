#!/usr/bin/env python3
"""The agent container's seccomp profile, made from the runtime's default.

  seccomp-profile.py generate DOCKER_DEFAULT_JSON > deploy/kubernetes/seccomp/zcal-agent.json
  seccomp-profile.py resolve DOCKER_DEFAULT_JSON     the runtime's default, flat
  seccomp-profile.py default PROFILE                 PROFILE without zcal's rules
  seccomp-profile.py oci PROFILE                     PROFILE as OCI linux.seccomp

DOCKER_DEFAULT_JSON is moby's profiles/seccomp/default.json (Debian 12:
golang-github-docker-docker-dev, 20.10.24; containerd 1.6's built-in
default allows the same for a container without capabilities). Its rules
are conditional (includes/excludes by capability, architecture, kernel),
which Docker and CRI-O evaluate but containerd does not: containerd reads a
Localhost profile as the OCI runtime spec's linux.seccomp and ignores the
conditions, which would grant every CAP_SYS_ADMIN rule to everyone. So the
shipped profile is flat: the rules as they apply to a container with no
capability on amd64 or arm64, plus zcal's one rule (RULE below). Every
runtime reads that alike; `oci` only drops the comment fields, which the
OCI spec does not have.
"""
import json
import sys

# The architectures of amd64 and arm64 nodes with their compat modes, as
# Docker's archMap and containerd's arches() list them.
ARCHES = ["SCMP_ARCH_X86_64", "SCMP_ARCH_X86", "SCMP_ARCH_X32",
          "SCMP_ARCH_AARCH64", "SCMP_ARCH_ARM"]
# Docker's names for them in includes/excludes.arches.
DOCKER_ARCHES = {"amd64", "x86", "x32", "arm64", "arm"}

CLONE_NEWUSER = 0x10000000
CLONE_NEWNET = 0x40000000

# The marker by which `default` finds zcal's rules; nothing else in the
# profile has a comment that starts with it.
MARK = "zcal:"
RULE = {
    "names": ["unshare"],
    "action": "SCMP_ACT_ALLOW",
    "args": [{"index": 0, "value": CLONE_NEWUSER | CLONE_NEWNET, "op": "SCMP_CMP_EQ"}],
    "comment": MARK + " the discard path (docs/probes.md) creates a private network "
               "namespace from an unprivileged user namespace: unshare(CLONE_NEWUSER | "
               "CLONE_NEWNET) with exactly these two flags is allowed, from a forked helper "
               "that only brings lo up, installs a blackhole qdisc and makes UDP sockets. "
               "Still refused, as by the runtime's default: unshare with any other flag "
               "(mount, PID, IPC, UTS, cgroup, time namespaces, CLONE_NEWNET alone), setns, "
               "mount, clone with a namespace flag, clone3 (ENOSYS, so that glibc falls "
               "back to clone), and every other call the default refuses. Inside its user "
               "namespace the helper holds capabilities over that namespace and its network "
               "namespace only; the host's user.max_user_namespaces and security modules "
               "still apply.",
}


def applies(condition, caps):
    """Whether an includes/excludes condition holds for a container with
    `caps` on one of our architectures (any of them: the flat profile
    carries each architecture's rules, and a runtime skips names its
    architecture lacks)."""
    if condition.get("caps") and not set(condition["caps"]) <= caps:
        return False
    if condition.get("arches") and not set(condition["arches"]) & DOCKER_ARCHES:
        return False
    # minKernel: every Debian 12 or Kubernetes node kernel is newer than the
    # 4.8 that the default names.
    return True


def excluded(condition, caps):
    if condition.get("caps") and set(condition["caps"]) & caps:
        return True
    if condition.get("arches"):
        return not (DOCKER_ARCHES - set(condition["arches"]))
    return False


def resolve(docker, caps=frozenset()):
    syscalls = []
    for rule in docker["syscalls"]:
        if not applies(rule.get("includes") or {}, caps):
            continue
        if excluded(rule.get("excludes") or {}, caps):
            continue
        flat = {"names": rule.get("names") or [rule["name"]], "action": rule["action"]}
        if rule.get("args"):
            flat["args"] = rule["args"]
        if rule.get("errnoRet") is not None:
            flat["errnoRet"] = rule["errnoRet"]
        syscalls.append(flat)
    profile = {"defaultAction": docker["defaultAction"]}
    if docker.get("defaultErrnoRet") is not None:
        profile["defaultErrnoRet"] = docker["defaultErrnoRet"]
    profile["architectures"] = ARCHES
    profile["syscalls"] = syscalls
    return profile


def generate(docker):
    profile = resolve(docker)
    profile["syscalls"].append(RULE)
    return profile


def default(profile):
    out = dict(profile)
    out["syscalls"] = [r for r in profile["syscalls"]
                       if not r.get("comment", "").startswith(MARK)]
    return out


def oci(profile):
    out = {k: v for k, v in profile.items() if k != "comment"}
    out["syscalls"] = [{k: v for k, v in r.items() if k != "comment"}
                       for r in profile["syscalls"]]
    return out


def main(argv):
    commands = {"generate": generate, "resolve": resolve, "default": default, "oci": oci}
    if len(argv) != 3 or argv[1] not in commands:
        print(__doc__.strip().split("\n\n")[1], file=sys.stderr)
        return 2
    try:
        with open(argv[2], encoding="utf-8") as f:
            source = json.load(f)
    except (OSError, ValueError) as e:
        print(f"seccomp-profile: cannot read {argv[2]}: {e}", file=sys.stderr)
        return 1
    json.dump(commands[argv[1]](source), sys.stdout, indent=2)
    sys.stdout.write("\n")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
