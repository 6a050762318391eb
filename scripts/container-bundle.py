#!/usr/bin/env python3
"""An OCI bundle that runs the agent as the DaemonSet does (scripts/test-container.sh).

  container-bundle.py check-daemonset MANIFEST PROFILE
      the agent container runs with PROFILE (Localhost) and its ConfigMap
      has the discard path
  container-bundle.py write MANIFEST SECCOMP_JSON SPEC_JSON BUNDLE KEYS [ARG...]
      BUNDLE/config.json from SPEC_JSON (`runc spec`), the agent container's
      securityContext, resources, volume mounts and command (or ARG...),
      and SECCOMP_JSON (OCI linux.seccomp); BUNDLE/volumes/NAME for each
      volume, the ConfigMap's agent.yaml in the configMap's, KEYS in the
      emptyDir the key_file lies in
"""
import json
import os
import shutil
import sys

import yaml

ALL_CAPS = ("bounding", "effective", "inheritable", "permitted", "ambient")


class Failure(Exception):
    pass


def documents(manifest):
    with open(manifest, encoding="utf-8") as f:
        return {d["kind"]: d for d in yaml.safe_load_all(f) if d}


def agent_of(docs):
    for container in docs["DaemonSet"]["spec"]["template"]["spec"]["containers"]:
        if container["name"] == "agent":
            return container
    raise Failure("the DaemonSet has no container named agent")


def agent_yaml(docs):
    return yaml.safe_load(docs["ConfigMap"]["data"]["agent.yaml"])


def check_daemonset(manifest, profile):
    docs = documents(manifest)
    seccomp = agent_of(docs).get("securityContext", {}).get("seccompProfile", {})
    if seccomp.get("type") != "Localhost":
        raise Failure(f"{manifest}: the agent's seccompProfile is {seccomp}, not Localhost")
    local = seccomp.get("localhostProfile", "")
    if os.path.basename(local) != os.path.basename(profile):
        raise Failure(f"{manifest}: the agent's localhostProfile {local!r} is not "
                      f"{os.path.basename(profile)} ({profile})")
    kinds = [p.get("type") for p in agent_yaml(docs).get("paths", [])]
    if "discard" not in kinds:
        raise Failure(f"{manifest}: the ConfigMap's paths {kinds} have no discard path")


def test_config(docs):
    """The ConfigMap's configuration less what needs a cluster: the peers
    are found by the cluster's DNS, which a test has not."""
    config = agent_yaml(docs)
    config.pop("peers", None)
    return config


def mounts_and_volumes(docs, agent, bundle, keys, uid, gid):
    """OCI bind mounts for the agent's volumeMounts, each from a directory
    of the bundle that stands for the pod's volume."""
    volumes = {v["name"]: v for v in docs["DaemonSet"]["spec"]["template"]["spec"]["volumes"]}
    config = test_config(docs)
    key_file = config.get("sink", {}).get("key_file", "")
    mounts = []
    for mount in agent.get("volumeMounts", []):
        name, target = mount["name"], mount["mountPath"]
        source = os.path.join(bundle, "volumes", name)
        os.makedirs(source, exist_ok=True)
        volume = volumes[name]
        if "configMap" in volume:
            with open(os.path.join(source, "agent.yaml"), "w", encoding="utf-8") as f:
                yaml.safe_dump(config, f)
        if key_file.startswith(target + "/"):
            # The init container's copy: owned by the agent, mode 0400.
            copy = os.path.join(source, os.path.relpath(key_file, target))
            shutil.copyfile(keys, copy)
            os.chown(copy, uid, gid)
            os.chmod(copy, 0o400)
        if "hostPath" in volume or "emptyDir" in volume:
            os.chown(source, uid, gid)
        options = ["rbind", "ro" if mount.get("readOnly") else "rw", "nosuid", "nodev"]
        mounts.append({"destination": target, "type": "bind", "source": source,
                       "options": options})
    return mounts


def quantity_bytes(text):
    units = {"Ki": 1 << 10, "Mi": 1 << 20, "Gi": 1 << 30}
    for suffix, factor in units.items():
        if text.endswith(suffix):
            return int(text[:-2]) * factor
    return int(text)


def write(manifest, seccomp_json, spec_json, bundle, keys, args):
    docs = documents(manifest)
    agent = agent_of(docs)
    security = agent["securityContext"]
    uid, gid = security["runAsUser"], security.get("runAsGroup", security["runAsUser"])
    if uid == 0 or not security.get("runAsNonRoot"):
        raise Failure(f"{manifest}: the agent runs as root")
    with open(spec_json, encoding="utf-8") as f:
        spec = json.load(f)
    with open(seccomp_json, encoding="utf-8") as f:
        seccomp = json.load(f)

    process = spec["process"]
    process["terminal"] = False
    process["args"] = args or agent["command"] + agent.get("args", [])
    process["user"] = {"uid": uid, "gid": gid}
    process["cwd"] = "/"
    # drop: [ALL] and nothing added: no set holds a capability (a non-root
    # container's would be in its bounding set only, but there are none).
    added = security.get("capabilities", {}).get("add", [])
    if security.get("capabilities", {}).get("drop") != ["ALL"] or added:
        raise Failure(f"{manifest}: the agent's capabilities are not drop: [ALL]")
    process["capabilities"] = {s: [] for s in ALL_CAPS}
    process["noNewPrivileges"] = not security.get("allowPrivilegeEscalation", True)
    spec["root"]["readonly"] = bool(security.get("readOnlyRootFilesystem"))
    spec["hostname"] = "zcal-test"

    linux = spec["linux"]
    linux["seccomp"] = seccomp
    limits = agent.get("resources", {}).get("limits", {})
    resources = linux.setdefault("resources", {})
    if "memory" in limits:
        resources["memory"] = {"limit": quantity_bytes(limits["memory"])}
    if "cpu" in limits:
        resources["cpu"] = {"quota": int(float(limits["cpu"]) * 100000), "period": 100000}
    spec["mounts"] += mounts_and_volumes(docs, agent, bundle, keys, uid, gid)

    with open(os.path.join(bundle, "config.json"), "w", encoding="utf-8") as f:
        json.dump(spec, f, indent=1)


def main(argv):
    try:
        if len(argv) == 4 and argv[1] == "check-daemonset":
            check_daemonset(argv[2], argv[3])
        elif len(argv) >= 7 and argv[1] == "write":
            write(*argv[2:7], argv[7:])
        else:
            print(__doc__.strip().split("\n\n")[1], file=sys.stderr)
            return 2
    except KeyError as e:
        print(f"container-bundle: {argv[2]} has no {e} where the DaemonSet's agent needs one",
              file=sys.stderr)
        return 1
    except (Failure, OSError, ValueError, yaml.YAMLError) as e:
        print(f"container-bundle: {e}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
