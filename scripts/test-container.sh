#!/usr/bin/env bash
# shellcheck disable=SC2317 # the checks are functions that step() runs
# The agent as the DaemonSet runs it, under a real OCI runtime (runc):
#   scripts/test-container.sh [ZCAL]     ZCAL: default build/agent/cli/zcal
#   1. the shipped seccomp profile is the runtime's default plus zcal's one
#      rule, and the default is Docker 20.10's (Debian 12's moby source,
#      fetched once with apt-get download into /var/cache/zcal-test/)
#   2. the DaemonSet's agent runs with that profile and the discard path
#   3. a root laid out as the image's (zcal in /usr/local/bin, libzcal in
#      /usr/local/lib/TRIPLET, found through ld.so.cache only: the
#      Containerfile must run ldconfig) with this host's Debian 12
#      libraries, each from a package the Containerfile installs
#   4. with the shipped profile, as the DaemonSet's agent container (its
#      uid and gid, no capability, no new privileges, read-only root, its
#      memory and CPU limits, its volume mounts, the ConfigMap's
#      configuration): `zcal calibrate --path discard --json` measures real
#      zerocopy, and the agent publishes discard entries (`zcal show`)
#   5. with the runtime's default (the same profile without zcal's rule):
#      the calibration fails with one line naming seccomp and unshare, and
#      the agent logs it and keeps publishing loopback
# The root is this build's binary and its shared libraries (found with
# ldd), not a Debian root made by mmdebstrap: it needs no network, is made
# in well under a second, and runs the very binary under test with the
# libraries it was linked against; the Containerfile's package list is
# checked against those libraries instead (step 3).
# The container gets a network namespace of its own, not the node's
# (hostNetwork): the machine is shared, and the agent's ports 9464 and 7070
# would meet other tests'. The discard path starts from whichever network
# namespace the agent is in, so this changes nothing it measures.
# Each step prints "ok", "FAIL" or "skip" with its name; the last line is
# "container: N passed, N failed, N skipped"; ZCAL_TEST_VERBOSE=1 prints
# what each step saw, ZCAL_TEST_KEEP=1 keeps the bundles and logs. Needs root, runc and Python's
# yaml (skipped otherwise). Exit status 1 on a failure.
set -uo pipefail
cd "$(dirname "$0")/.." || exit 1
top=$PWD

work=$(mktemp -d /tmp/zcal-container.XXXXXX) || exit 1
running=""
# Every container of this run is named zcal-test-PID-*, so that cleanup
# finds those that a step started and an interrupt or failure left.
cleanup() {
  [[ -z $running ]] || kill "$running" 2>/dev/null
  local id
  if command -v runc >/dev/null; then
    for id in $(runc list -q 2>/dev/null | grep "^zcal-test-$$-"); do
      runc delete -f "$id" >/dev/null 2>&1
    done
  fi
  if [[ -n ${ZCAL_TEST_KEEP:-} ]]; then echo "      (kept $work)"; else rm -rf "$work"; fi
}
trap cleanup EXIT
trap 'exit 130' INT TERM

STEPS_OUT=$work/step.out
STEPS_NAME=container
# shellcheck source=scripts/steps.sh
source scripts/steps.sh
started=$SECONDS

zcal=$(realpath -m "${1:-build/agent/cli/zcal}")
manifest=$top/deploy/kubernetes/daemonset.yaml
profile=$top/deploy/kubernetes/seccomp/zcal-agent.json
containerfile=$top/deploy/container/Containerfile
profile_tool=$top/scripts/seccomp-profile.py
bundle_tool=$top/scripts/container-bundle.py
cache=/var/cache/zcal-test
python=/usr/bin/python3

# --- 1. the profile ---------------------------------------------------------
# zcal's rules removed, the rest must be the runtime's default; what was
# removed must be exactly one rule: unshare with CLONE_NEWUSER|CLONE_NEWNET.
only_zcal_rule() {
  "$python" - "$profile" <<'EOF'
import json, sys
profile = json.load(open(sys.argv[1]))
ours = [r for r in profile["syscalls"] if r.get("comment", "").startswith("zcal:")]
expected = [{"index": 0, "value": 0x10000000 | 0x40000000, "op": "SCMP_CMP_EQ"}]
if len(ours) != 1 or ours[0]["names"] != ["unshare"] or ours[0]["args"] != expected \
        or ours[0]["action"] != "SCMP_ACT_ALLOW":
    sys.exit(f"zcal's rules are not one unshare(CLONE_NEWUSER|CLONE_NEWNET): {ours}")
others = [n for r in profile["syscalls"] if r not in ours for n in r["names"]]
for name in ("unshare", "setns", "mount"):
    if name in others:
        sys.exit(f"the default part allows {name}: it is not the default for a "
                 "container without capabilities")
EOF
}
step "the shipped profile is a default plus unshare(CLONE_NEWUSER|CLONE_NEWNET) only" \
  only_zcal_rule

# moby's default.json from Debian 12's golang-github-docker-docker-dev, one
# file of a package that is not installed (it pulls 250 Go packages).
docker_default=$cache/docker-20.10-seccomp-default.json
fetch_docker_default() {
  [[ -s $docker_default ]] && return 0
  local tmp
  tmp=$(mktemp -d) || return 1
  (cd "$tmp" && timeout 120 apt-get download -q golang-github-docker-docker-dev >/dev/null 2>&1 &&
    dpkg-deb -x ./*.deb x) &&
    mkdir -p "$cache" &&
    cp "$tmp/x/usr/share/gocode/src/github.com/docker/docker/profiles/seccomp/default.json" \
      "$docker_default"
  local rc=$?
  rm -rf "$tmp"
  return "$rc"
}
same_as_docker_default() {
  diff -u <("$python" "$profile_tool" resolve "$docker_default") \
    <("$python" "$profile_tool" default "$profile")
}
if [[ ! -s $docker_default ]] && ((EUID != 0)); then
  skipped "the rest is Docker 20.10's default for no capability" "needs root for $cache"
elif fetch_docker_default; then
  step "the rest is Docker 20.10's default for no capability (scripts/seccomp-profile.py resolve)" \
    same_as_docker_default
else
  skipped "the rest is Docker 20.10's default for no capability" \
    "apt-get download golang-github-docker-docker-dev failed: no Debian mirror"
fi

# --- 2. the DaemonSet -------------------------------------------------------
if ! "$python" -c 'import yaml' 2>/dev/null; then
  skipped "the DaemonSet and the container" "no Python yaml module: apt-get install python3-yaml"
  finish
fi
step "the DaemonSet's agent runs with the profile (Localhost) and the discard path" \
  "$python" "$bundle_tool" check-daemonset "$manifest" "$profile"

# --- preconditions of the runtime ------------------------------------------
if ((EUID != 0)); then
  skipped "the container under runc" "needs root: runc creates the container's cgroups and mounts"
  finish
fi
if ! command -v runc >/dev/null; then
  skipped "the container under runc" "no runc: scripts/install-deps.sh installs it"
  finish
fi
if [[ ! -x $zcal ]]; then
  fail=$((fail + 1))
  echo "FAIL  the zcal binary $zcal exists (build first: scripts/build.sh build)"
  finish
fi

root=$work/rootfs
default_profile=$work/default.json
"$python" "$profile_tool" default "$profile" >"$work/default-k8s.json"
"$python" "$profile_tool" oci "$work/default-k8s.json" >"$default_profile"
"$python" "$profile_tool" oci "$profile" >"$work/shipped.json"
if ! runc spec --bundle "$work" 2>"$work/spec.err"; then
  skipped "the container under runc" "runc spec failed: $(head -1 "$work/spec.err")"
  finish
fi
mv "$work/config.json" "$work/spec.json"

# --- 3. the root ------------------------------------------------------------
libraries() { ldd "$zcal" | grep -o '/[^ ]*'; }
triplet=$(gcc -print-multiarch 2>/dev/null || dpkg-architecture -qDEB_HOST_MULTIARCH)
make_root() {
  local lib dest
  mkdir -p "$root"/{proc,sys,dev,tmp,etc/zcal,var/lib/zcal,run/zcal,usr/local/bin} \
    "$root/usr/local/lib/$triplet" || return 1
  install -m 0755 "$zcal" "$root/usr/local/bin/zcal" || return 1
  for lib in $(libraries); do
    if [[ $(basename "$lib") == libzcal.so.* ]]; then
      dest=$root/usr/local/lib/$triplet/$(basename "$lib")  # meson install's place
    else
      dest=$root$lib
    fi
    mkdir -p "$(dirname "$dest")" && cp -L "$lib" "$dest" || return 1
  done
  cp -r /etc/ld.so.conf /etc/ld.so.conf.d "$root/etc/" &&
    printf 'root:x:0:0:root:/root:/usr/sbin/nologin\nzcal:x:10001:10001::/var/lib/zcal:/usr/sbin/nologin\n' \
      >"$root/etc/passwd" &&
    printf 'root:x:0:\nzcal:x:10001:\n' >"$root/etc/group"
}
step "a root as the image's: zcal, libzcal in /usr/local, Debian's libraries" make_root

# Without a cache that lists it, the loader does not look in /usr/local
# (meson install drops the build's RUNPATH, and the test's copy's RUNPATH
# points nowhere in the root): the Containerfile must run ldconfig after
# copying /usr/local, as this step then does.
loader_cache() {
  local out
  out=$(chroot "$root" /usr/local/bin/zcal --version 2>&1) &&
    { echo "zcal started without ld.so.cache: the root is not as the image's"; return 1; }
  grep -q 'libzcal.so.1' <<<"$out" || { echo "$out"; return 1; }
  sed -n '/^COPY --from=build \/out\/usr\/local\//,$p' "$containerfile" | grep -q '^RUN ldconfig' ||
    { echo "$containerfile does not run ldconfig after copying /usr/local: $out"; return 1; }
  ldconfig -r "$root" && chroot "$root" /usr/local/bin/zcal --version
}
step "zcal finds libzcal.so.1 through ld.so.cache only, which the Containerfile makes" loader_cache

# The runtime packages of the Containerfile's last stage, and what
# debian:12-slim has without them (libc6, and libstdc++6 and libgcc-s1,
# which its apt needs).
containerfile_packages() {
  sed -n '/^FROM debian:12-slim/,/rm -rf/p' "$containerfile" | tr -cs 'a-z0-9.+-' '\n' |
    grep -E '^[a-z0-9][a-z0-9.+-]+[0-9a-z]$' | grep -vE '^(apt-get|install|update|rm|debian)$'
  printf '%s\n' libc6 libstdc++6 libgcc-s1
}
libraries_from_image_packages() {
  local lib package missing=0 allowed
  allowed=$(containerfile_packages)
  for lib in $(libraries); do
    [[ $(basename "$lib") == libzcal.so.* ]] && continue
    package=$(dpkg -S "$(readlink -f "$lib")" 2>/dev/null || dpkg -S "$lib" 2>/dev/null)
    package=${package%%:*}
    if ! grep -qx "$package" <<<"$allowed"; then
      echo "$lib comes from ${package:-no package}, which $containerfile does not install"
      missing=1
    fi
  done
  ((missing == 0))
}
step "every library of zcal is in a package the Containerfile installs" libraries_from_image_packages

keys=$work/peer.keys
"$zcal" keygen --id container-test >"$keys" 2>"$work/keygen.err" ||
  echo "      (zcal keygen failed: $(head -1 "$work/keygen.err"))"

# bundle NAME SECCOMP [ARG...]: a bundle dir for one container, printed.
bundle() {
  local dir=$work/$1 seccomp=$2
  shift 2
  mkdir -p "$dir" &&
    "$python" "$bundle_tool" write "$manifest" "$seccomp" "$work/spec.json" "$dir" "$keys" "$@" &&
    "$python" - "$dir/config.json" "$root" <<'EOF'
import json, sys
config = json.load(open(sys.argv[1]))
config["root"]["path"] = sys.argv[2]
json.dump(config, open(sys.argv[1], "w"), indent=1)
EOF
}
run_once() {  # run_once NAME SECCOMP ARG...: runs to the end, output in $work/NAME.out/.err
  local name=$1 id=zcal-test-$$-$1
  bundle "$@" || return 1
  timeout 120 runc run --bundle "$work/$name" "$id" >"$work/$name.out" 2>"$work/$name.err" </dev/null
  echo $? >"$work/$name.rc"
  runc delete -f "$id" >/dev/null 2>&1
  return 0
}

# Where runc cannot run a container at all (no cgroup it may use, inside
# another container's sandbox), the rest cannot be tried here.
runc_runs=1
if bundle probe "$work/shipped.json" /usr/local/bin/zcal --version; then
  id=zcal-test-$$-probe
  if ! timeout 60 runc run --bundle "$work/probe" "$id" >"$work/probe.out" 2>&1 </dev/null; then
    runc_runs=0
    skipped "the container under runc" "runc cannot run a container here: $(grep -m1 . "$work/probe.out")"
  fi
  runc delete -f "$id" >/dev/null 2>&1
fi
((runc_runs == 1)) || finish

# --- 4. the shipped profile -------------------------------------------------
discard_measured() {
  run_once calibrate-shipped "$work/shipped.json" /usr/local/bin/zcal calibrate --path discard \
    --methods copy,msg_zerocopy --min 4K --max 64K --budget 2 --json || return 1
  local rc
  rc=$(cat "$work/calibrate-shipped.rc")
  [[ $rc == 0 ]] || { echo "exit status $rc"; cat "$work/calibrate-shipped.err"; return 1; }
  "$python" - "$work/calibrate-shipped.out" <<'EOF'
import json, sys
doc = json.load(open(sys.argv[1]))
probes = doc["probes"]["msg_zerocopy"]
result = doc["paths"]["discard"]["methods"]["msg_zerocopy"]
print(f"msg_zerocopy: {probes['ok']} probes, verdict {result['verdict']} "
      f"{result.get('threshold_bytes') or result.get('reason')}")
# Real zerocopy: probes ran, and the kernel did not copy (as on loopback).
if probes["ok"] == 0 or probes["unsupported"] or result.get("reason") in ("kernel_copied", "unsupported"):
    sys.exit("the discard path did not measure zerocopy")
EOF
}
step "shipped profile: zcal calibrate --path discard --json measures real zerocopy" \
  discard_measured

# start NAME SECCOMP: the agent as the DaemonSet's command, detached.
start_agent() {
  local name=$1 id=zcal-test-$$-$1
  bundle "$@" || return 1
  runc run -d --bundle "$work/$name" "$id" >"$work/$name.log" 2>&1 </dev/null
}
show() { runc exec "zcal-test-$$-$1" /usr/local/bin/zcal show --json 2>&1; }
# wait_for NAME SECONDS CONDITION...: polls until the condition holds or
# the agent's container stopped; the bound only ends a hung run.
wait_for() {
  local name=$1 bound=$2
  shift 2
  local until=$((SECONDS + bound))
  while ((SECONDS < until)); do
    "$@" && return 0
    runc state "zcal-test-$$-$name" 2>/dev/null | grep -q '"status": "running"' ||
      { echo "the agent's container stopped:"; tail -20 "$work/$name.log"; return 1; }
    sleep 0.5
  done
  echo "not within ${bound} s; the agent's log:"
  tail -20 "$work/$name.log"
  return 1
}
has_scope() {  # has_scope NAME SCOPE: zcal show lists an entry of SCOPE
  show "$1" | "$python" -c '
import json, sys
try:
    doc = json.load(sys.stdin)
except ValueError:
    sys.exit(1)
sys.exit(0 if any(e.get("scope") == sys.argv[1] for e in doc.get("entries", [])) else 1)' "$2"
}
stop_agent() {
  local id=zcal-test-$$-$1
  runc kill "$id" TERM >/dev/null 2>&1
  local until=$((SECONDS + 30))
  while ((SECONDS < until)) && runc state "$id" 2>/dev/null | grep -q '"status": "running"'; do
    sleep 0.2
  done
  runc delete -f "$id" >/dev/null 2>&1
}

agent_publishes_discard() {
  start_agent agent-shipped "$work/shipped.json" || return 1
  wait_for agent-shipped 180 has_scope agent-shipped discard
  local rc=$?
  show agent-shipped | "$python" -c '
import json, sys
for e in json.load(sys.stdin)["entries"]:
    print(e.get("scope"), e.get("method"), e.get("verdict"), e.get("threshold_bytes"), e.get("reason"))'
  stop_agent agent-shipped
  return "$rc"
}
step "shipped profile: the agent publishes discard entries (zcal show)" agent_publishes_discard

# --- 5. the runtime's default profile ---------------------------------------
discard_refused() {
  run_once calibrate-default "$default_profile" /usr/local/bin/zcal calibrate --path discard \
    --methods copy,msg_zerocopy --budget 1 || return 1
  local rc err
  rc=$(cat "$work/calibrate-default.rc")
  err=$(cat "$work/calibrate-default.err")
  echo "exit status $rc: $err"
  [[ $rc != 0 ]] && grep -q 'seccomp' <<<"$err" && grep -q 'allow unshare(2)' <<<"$err"
}
step "default profile: zcal calibrate --path discard fails naming seccomp and unshare" \
  discard_refused

logged_refusal() { grep -q 'allow unshare(2) in the seccomp profile' "$work/agent-default.log"; }
loopback_and_refusal() { has_scope agent-default loopback && logged_refusal; }
agent_serves_loopback() {
  start_agent agent-default "$default_profile" || return 1
  wait_for agent-default 180 loopback_and_refusal
  local rc=$?
  grep -m1 'allow unshare(2)' "$work/agent-default.log" | cut -c1-400
  if has_scope agent-default discard; then
    show agent-default
    echo "discard entries without a namespace"
    rc=1
  fi
  stop_agent agent-default
  return "$rc"
}
step "default profile: the agent logs the refusal and publishes loopback" agent_serves_loopback

finish
