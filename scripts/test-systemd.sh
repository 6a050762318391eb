#!/usr/bin/env bash
# shellcheck disable=SC2317 # the checks are functions that step() runs
# The Debian packages of this build, booted under real systemd as an
# operator meets them:
#   1. a minimal Debian 12 root (mmdebstrap --variant=minbase: systemd, dbus,
#      iproute2, libfabric-bin for the example consumer, and every Debian
#      package the .debs depend on), built once and cached as a tarball in
#      /var/cache/zcal-test/ under a key of that package list; unpacked into
#      a fresh directory per run
#   2. booted with systemd-nspawn --boot; commands run inside with nsenter
#      into its init. The container shares the host's network namespace,
#      as a host's service does: the agent must see the egress NIC (its
#      driver and IOMMU group in /sys) to estimate a host default, and a
#      veth of a private namespace is a virtual interface with no such
#      facts. Its traffic stays on loopback and in the discard path's
#      namespace; it takes 127.0.0.1:9464 (skipped when that is in use).
#      The example consumer and its server run in a network namespace this
#      script creates (198.18.0.7 on its lo), bound into the container
#   3. apt installs zcal, libzcal1 and libzcal-dev from DEB_DIR, offline:
#      their dependencies are in the root already
#   4. zcal-agent.service is active; systemd-analyze security rates it
#      below 4.0
#   5. zcal show: discard entries and an estimated host default (the
#      discard path works inside the unit's sandbox)
#   6. systemctl reload applies a changed configuration: an exports: entry
#      added to /etc/zcal/agent.yaml, and the agent writes its file
#   7. the example consumer (/usr/share/doc/zcal/examples/
#      example-consumer.service) starts, its environment has the
#      MSG_ZEROCOPY value zcal show publishes, and fi_pingpong runs with it
#   8. a broken configuration: systemctl reload and restart fail with the
#      FILE:LINE:COLUMN message in the journal; the segment stays
#   9. systemctl stop: the segment stays, with a last heartbeat
#  10. apt purge: nothing of the packages is left
# Everything it creates (container, network namespace, directory) is
# removed at the end, also after a failure or Ctrl-C.
#
# Usage: scripts/test-systemd.sh [DEB_DIR]   (default build-deb, where
# scripts/test-package.sh puts the packages). Each step prints "ok", "FAIL"
# or "skip" with its name; the last line is
# "systemd: N passed, N failed, N skipped" (scripts/test adds the counts).
# Skipped without root, mmdebstrap or systemd-nspawn, when 127.0.0.1:9464
# is taken on the host, or when systemd-nspawn cannot boot here. Exit
# status 1 on a failure.
set -uo pipefail
# DEB_DIR as given, before the cd to the top of the tree.
[[ -z ${1:-} ]] || deb_arg=$(realpath -m -- "$1")
cd "$(dirname "$0")/.." || exit 1

STEPS_SHOW_OK=1
STEPS_NAME=systemd
# shellcheck source=scripts/steps.sh
source scripts/steps.sh
started=$SECONDS

deb_dir=${deb_arg:-$PWD/build-deb}
packages=(zcal libzcal1 libzcal-dev)
debs=()
for p in "${packages[@]}"; do
  for f in "$deb_dir/${p}"_*.deb; do [[ -f $f ]] && debs+=("$f"); done
done

if ((EUID != 0)); then
  skipped "boot the packages under systemd" "needs root"
  finish
fi
for tool in mmdebstrap systemd-nspawn nsenter ip dpkg-deb flock; do
  if ! command -v "$tool" >/dev/null; then
    skipped "boot the packages under systemd" \
      "no $tool: install mmdebstrap systemd-container iproute2 (scripts/install-deps.sh)"
    finish
  fi
done
if ((${#debs[@]} != ${#packages[@]})); then
  skipped "boot the packages under systemd" \
    "not one .deb of each of ${packages[*]} in $deb_dir (scripts/test-package.sh builds them)"
  finish
fi

# --- 1. the cached root --------------------------------------------------------
# The Debian packages the .debs depend on (the first of each alternative,
# without versions; Debian 12 has what this Debian 12 build asked for),
# installed into the root with the rest: the container needs no network.
depends_of_debs() {
  local deb
  for deb in "${debs[@]}"; do
    dpkg-deb -f "$deb" Pre-Depends
    dpkg-deb -f "$deb" Depends
  done | tr ',' '\n' | sed 's/|.*//; s/(.*)//; s/:any//; s/[[:space:]]//g' |
    grep -v '^$' | grep -vxE "$(IFS='|'; echo "${packages[*]}")" | sort -u
}
mirror=${ZCAL_DEBIAN_MIRROR:-http://deb.debian.org/debian}
security=${ZCAL_DEBIAN_SECURITY:-http://deb.debian.org/debian-security}
sources=("deb $mirror bookworm main" "deb $mirror bookworm-updates main"
  "deb $security bookworm-security main")
mapfile -t include < <({ printf '%s\n' systemd systemd-sysv dbus iproute2 libfabric-bin
  depends_of_debs; } | sort -u)
cache_dir=/var/cache/zcal-test
key=$(printf '%s\n' minbase "${sources[@]}" "${include[@]}" | sha256sum | cut -c1-16)
cached=$cache_dir/systemd-root-$key.tar

# One builder at a time, and none while a run unpacks (they take the lock
# shared); a run that finds the tarball uses it. Tarballs of other package
# lists are removed: only the current one is worth its 200 MB.
build_root() {
  mkdir -p "$cache_dir" || return 1
  exec 8>"$cache_dir/systemd-root.lock"
  flock 8
  if [[ ! -f $cached ]]; then
    local t0=$SECONDS
    mmdebstrap --quiet --variant=minbase --format=tar \
      --include="$(IFS=,; echo "${include[*]}")" \
      bookworm "$cached.tmp" "${sources[@]}" || { rm -f "$cached.tmp"; flock -u 8; return 1; }
    mv "$cached.tmp" "$cached"
    find "$cache_dir" -maxdepth 1 -name 'systemd-root-*.tar' ! -path "$cached" -delete
    echo "built in $((SECONDS - t0)) s: ${include[*]}"
  else
    echo "cached ($(du -m "$cached" | cut -f1) MB)"
  fi
  flock -u 8
}
step "the Debian 12 root $cached" build_root
if [[ ! -f $cached ]]; then
  skipped "the remaining steps" "no root"
  finish
fi

# --- 2. boot -----------------------------------------------------------------
# The packaged configuration's metrics address, on the host's network.
if command -v ss >/dev/null && [[ -n $(ss -Hltn 'sport = :9464') ]]; then
  skipped "the remaining steps" \
    "127.0.0.1:9464 is in use on this host, and the packaged agent shares the host's network"
  finish
fi
work=$(mktemp -d /var/tmp/zcal-systemd.XXXXXX) || exit 1
root=$work/root
netns=zcal-systemd-$$
machine=zcal-systemd-$$
nspawn_pid="" init_pid=""
# A container that does not stop on SIGTERM (an orderly poweroff) is
# killed through its init, which takes every process of its namespace.
cleanup() {
  if [[ -n $nspawn_pid ]] && kill -0 "$nspawn_pid" 2>/dev/null; then
    kill -TERM "$nspawn_pid"
    for _ in $(seq 150); do kill -0 "$nspawn_pid" 2>/dev/null || break; sleep 0.2; done
    if kill -0 "$nspawn_pid" 2>/dev/null; then
      [[ -z $init_pid ]] || kill -KILL "$init_pid" 2>/dev/null
      kill -KILL "$nspawn_pid" 2>/dev/null
    fi
    wait "$nspawn_pid" 2>/dev/null
  fi
  ip netns delete "$netns" 2>/dev/null
  rm -rf "$work"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

unpack() {
  mkdir "$root" && flock -s "$cache_dir/systemd-root.lock" tar -xf "$cached" -C "$root" || return 1
  mkdir -p "$root/root/debs" && cp "${debs[@]}" "$root/root/debs/"
}
step "unpack it into $work" unpack

# The example consumer's network: 198.18.0.7, where its fi_pingpong
# connects, on the lo of a namespace of this run's own.
network() {
  ip netns add "$netns" &&
    ip -n "$netns" link set lo up &&
    ip -n "$netns" addr add 198.18.0.7/32 dev lo
}
step "network namespace $netns (198.18.0.7 for the example consumer)" network
consumer_netns=/run/zcal-test-netns

# In the container: its init's namespaces, a clean environment, a bound.
inside() {
  timeout 120 nsenter -t "$init_pid" -a -- \
    env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin LANG=C.UTF-8 SYSTEMD_PAGER= "$@"
}
# wait_until SECONDS COMMAND...: polls until COMMAND succeeds or the bound
# passes; a condition, not a sleep that hopes.
wait_until() {
  local bound=$1
  shift
  local deadline=$((SECONDS + bound))
  until "$@" >/dev/null 2>&1; do
    ((SECONDS < deadline)) || return 1
    sleep 0.2
  done
}
boot() {
  systemd-nspawn --boot --keep-unit --register=no --console=read-only \
    --machine="$machine" --bind-ro="/run/netns/$netns:$consumer_netns" \
    -D "$root" >"$work/console.log" 2>&1 </dev/null &
  nspawn_pid=$!
  local deadline=$((SECONDS + 60))
  until init_pid=$(pgrep -P "$nspawn_pid" -x systemd); do
    if ! kill -0 "$nspawn_pid" 2>/dev/null || ((SECONDS >= deadline)); then
      init_pid=""
      tail -20 "$work/console.log"
      return 1
    fi
    sleep 0.2
  done
  # systemctl answers once the manager listens on its private socket.
  wait_until 60 inside test -S /run/systemd/private ||
    { echo "no /run/systemd/private"; tail -20 "$work/console.log"; return 1; }
  # degraded: a unit of the minimal root failed (listed), zcal can run.
  local state
  state=$(inside systemctl is-system-running --wait)
  [[ $state == running ]] || inside systemctl --failed --no-legend
  [[ $state == running || $state == degraded ]] || { echo "is-system-running: $state"; return 1; }
}
# Not in step(): its subshell would keep the container's pids to itself.
t0=$SECONDS
if ((fail > 0)); then
  skipped "the remaining steps" "no root to boot"
  finish
elif ! boot >"$work/boot.log" 2>&1 || [[ -z $init_pid ]]; then
  # zcal is not in the root yet: a Debian root that does not boot is this
  # machine's limit (no cgroups for nspawn, a seccomp or AppArmor policy),
  # not a failure of the product.
  sed 's/^/      /' "$work/boot.log"
  skipped "the remaining steps" "systemd-nspawn cannot boot a Debian 12 root here"
  finish
fi
pass=$((pass + 1))
echo "ok    boot it: systemd-nspawn --boot, init pid $init_pid ($((SECONDS - t0)) s)"

# --- 3. install ----------------------------------------------------------------
listed=$work/listed-files
install() {
  local deb inside_debs=()
  for deb in "${debs[@]}"; do inside_debs+=("/root/debs/${deb##*/}"); done
  local out
  out=$(inside env DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends \
    "${inside_debs[@]}" 2>&1) || { echo "$out"; return 1; }
  grep -E '^(Setting up|Creating|Created symlink)' <<<"$out"
  inside dpkg -L "${packages[@]}" | sort -u | while IFS= read -r f; do
    [[ -d $root$f && ${f##*/} != *zcal* ]] || printf '%s\n' "$f"
  done >"$listed"
  [[ -s $listed ]]
}
t0=$SECONDS
step "apt-get install ./zcal*.deb ./libzcal*.deb (offline)" install
echo "      (installed in $((SECONDS - t0)) s)"
if [[ ! -s $listed ]]; then
  skipped "the installed checks" "the packages are not installed"
  finish
fi

active() { [[ $(inside systemctl is-active zcal-agent) == active ]]; }
agent_active() {
  wait_until 30 active || { inside systemctl status --no-pager zcal-agent; return 1; }
  [[ $(inside systemctl is-enabled zcal-agent) == enabled ]]
}
step "zcal-agent.service is enabled and active" agent_active

exposure() {
  local out line
  out=$(inside systemd-analyze security --no-pager zcal-agent.service) || { echo "$out"; return 1; }
  printf '%s\n' "$out" | grep '✗'
  line=$(printf '%s\n' "$out" | grep 'Overall exposure level for zcal-agent.service') ||
    { echo "$out"; return 1; }
  echo "$line"
  awk '{ for (i = 1; i <= NF; i++) if ($i ~ /^[0-9]+\.[0-9]+$/) exit !($i < 4.0); exit 1 }' \
    <<<"$line"
}
step "systemd-analyze security zcal-agent.service: exposure below 4.0" exposure

# --- 5. what it publishes --------------------------------------------------------
show() { inside zcal show; }
# The discard path's entries, and the host default decided after them: an
# estimate, or none because the NIC's IOMMU translates or is not known
# (the discard path cannot stand for such a NIC: no estimate, by design).
published() {
  local table
  table=$(show) || return 1
  grep -q '^discard ' <<<"$table" &&
    grep -qE "^host_default \(estimated\) |^host default none: the NIC's IOMMU" <<<"$table"
}
discard_entries() { show | grep -q '^discard '; }
# A calibration at boot may find the host too noisy to decide: every
# discard-path result inconclusive, so no estimate. The agent then retries
# after retry_after_failure (5 minutes); the test asks at once, as an
# operator would (SIGUSR1: calibrate now), at most three times, and says so.
ask_again_while_inconclusive() {
  local try
  for try in 1 2 3; do
    published && return 0
    inside journalctl -u zcal-agent --no-pager -o cat |
      grep -q 'every discard-path result is inconclusive' || return 1
    echo "      every discard-path result inconclusive (a noisy moment): SIGUSR1, try $try"
    inside systemctl kill -s SIGUSR1 zcal-agent
    wait_until 60 published && return 0
  done
  return 1
}
calibrated() {
  local budget t0=$SECONDS
  budget=$(sed -n 's/^ *seconds_per_calibration: *\([0-9]*\).*/\1/p' "$root/etc/zcal/agent.yaml")
  # Bounded well above the budget: this machine may be busy.
  if ! wait_until 120 discard_entries || ! { wait_until 10 published || ask_again_while_inconclusive; }; then
    show
    inside journalctl -u zcal-agent --no-pager -o cat | tail -20
    return 1
  fi
  echo "published within $((SECONDS - t0)) s of the unit being active (budget ${budget:-?} s per calibration):"
  show | grep -E '^(discard|host_default|host default)'
}
step "zcal show: discard entries (the discard path works in the unit's sandbox)" calibrated
# Read whole before grep: under pipefail, grep -q leaving early makes the
# writer of a long table (one row per depth class) die of SIGPIPE, and the
# pipeline fail although the line was there.
table=$(show 2>/dev/null)
if grep -q '^host_default (estimated) ' <<<"$table"; then
  pass=$((pass + 1))
  echo "ok    zcal show: an estimated host default"
elif grep -q "^host default none: the NIC's IOMMU" <<<"$table"; then
  skipped "zcal show: an estimated host default" \
    "$(show | sed -n 's/^host default none: //p'): none, by design"
else
  fail=$((fail + 1))
  echo "FAIL  zcal show: an estimated host default"
fi

# --- 6. reload -------------------------------------------------------------------
# The libfabric value of msg_zerocopy's host default as zcal show prints it:
# a threshold in bytes, 0 for always, -1 for never.
# (The columns after the method: the depth class, the verdict, the bytes;
# libfabric reads the stream class's.)
libfabric_value() {
  show | awk '$1 == "host_default" && $2 == "(estimated)" && $3 == "msg_zerocopy" &&
              $4 == "stream" {
    if ($5 == "threshold") print $6; else if ($5 == "always") print 0; else print -1 }'
}
main_pid() { inside systemctl show -p MainPID --value zcal-agent; }
# The journal's position now, to read only what follows it.
cursor() { inside journalctl --show-cursor -n 1 -o cat | sed -n 's/^-- cursor: //p'; }
config=/etc/zcal/agent.yaml
fabric_env=/run/zcal/fabric.env
reload_applies() {
  local pid cursor
  pid=$(main_pid)
  cursor=$(cursor)
  ! inside test -e "$fabric_env" || { echo "$fabric_env exists before the reload"; return 1; }
  sed -i "s|^exports: \[\]$|exports:\n  - {format: libfabric, path: $fabric_env, for: 198.18.0.7, fallback: never}|" \
    "$root$config"
  grep -q "path: $fabric_env" "$root$config" || { echo "could not edit $config"; return 1; }
  inside systemctl reload zcal-agent || return 1
  # The new exports: entry is written at the reload's publish: only an
  # agent that took the changed file writes it.
  wait_until 30 inside test -s "$fabric_env" || {
    echo "no $fabric_env after the reload"
    inside journalctl -u zcal-agent --no-pager -o cat --after-cursor="$cursor"
    return 1
  }
  [[ $(main_pid) == "$pid" ]] || { echo "the agent restarted ($pid -> $(main_pid))"; return 1; }
  echo "the agent (pid $pid) wrote $fabric_env:"
  inside cat "$fabric_env" | sed 's/^/  /'
  inside journalctl -u zcal-agent --no-pager -o cat --after-cursor="$cursor" | grep -i reload
}
step "systemctl reload applies a changed configuration (a new exports: file)" reload_applies

# --- 7. the example consumer ------------------------------------------------------
# The unit as shipped, with a drop-in of this test: an ExecStartPre= that
# prints the environment the service gets (EnvironmentFile= applies to every
# Exec line), and the network namespace where 198.18.0.7 is, on which a
# fi_pingpong server waits, so that the shipped command runs to its end.
consumer() {
  local dir=/etc/systemd/system/example-consumer.service.d expected source seen
  cp "$root/usr/share/doc/zcal/examples/example-consumer.service" "$root/etc/systemd/system/" &&
    mkdir -p "$root$dir" &&
    printf '[Service]\nNetworkNamespacePath=%s\nExecStartPre=/usr/bin/env\n' "$consumer_netns" \
      >"$root$dir/zcal-test.conf" || return 1
  inside systemctl daemon-reload || return 1
  inside systemd-run --quiet --unit=zcal-test-fabric-server --service-type=exec \
    -p NetworkNamespacePath="$consumer_netns" /usr/bin/fi_pingpong -p tcp -e msg || return 1
  wait_until 30 sh -c "ip netns exec $netns ss -Hltn 'sport = :47592' | grep -q ." ||
    { echo "the fi_pingpong server does not listen"; return 1; }
  inside systemctl start example-consumer || return 1
  wait_until 60 sh -c "! nsenter -t $init_pid -a systemctl is-active -q example-consumer" ||
    { echo "example-consumer did not end"; return 1; }
  inside journalctl -u example-consumer --no-pager -o cat | grep -E '^(FI_|ZCAL_)'
  [[ $(inside systemctl show -p Result --value example-consumer) == success ]] || {
    inside journalctl -u example-consumer --no-pager -o cat | tail -20
    return 1
  }
  # No usable msg_zerocopy host default (inconclusive on a noisy host):
  # the export's fallback, never (-1), marked as such.
  expected=$(libfabric_value) source=segment
  [[ -n $expected ]] || expected=-1 source=fallback
  seen=$(inside journalctl -u example-consumer --no-pager -o cat |
    sed -n 's/^FI_TCP_ZEROCOPY_SIZE=//p' | tail -1)
  echo "msg_zerocopy host default as zcal show prints it: $expected ($source); the consumer's FI_TCP_ZEROCOPY_SIZE: ${seen:-unset}"
  [[ $seen == "$expected" ]] &&
    inside journalctl -u example-consumer --no-pager -o cat | grep -qx "ZCAL_SOURCE=$source"
}
step "the example consumer gets the MSG_ZEROCOPY value and runs fi_pingpong with it" consumer
inside systemctl stop zcal-test-fabric-server 2>/dev/null
inside rm -rf /etc/systemd/system/example-consumer.service \
  /etc/systemd/system/example-consumer.service.d
inside systemctl daemon-reload

# --- 8. a broken configuration ----------------------------------------------------
good=$work/agent.yaml.good
cp "$root$config" "$good"
table_before=$work/entries-before
# A value of the wrong kind: check-config names FILE:LINE:COLUMN.
break_config() {
  sed -i 's/^\(  heartbeat:\) [^ ]*/\1 often/' "$root$config"
  grep -q '^  heartbeat: often' "$root$config" || { echo "could not edit $config"; return 1; }
}
file_line_column() {  # file_line_column CURSOR: the message in the journal since CURSOR
  inside journalctl -u zcal-agent --no-pager -o cat --after-cursor="$1" |
    grep -E "$config:[0-9]+:[0-9]+: " || {
    inside journalctl -u zcal-agent --no-pager -o cat --after-cursor="$1" | tail -10
    return 1
  }
}
entries() { show | sed -n 's/^entries *//p'; }
broken_reload() {
  local pid c
  pid=$(main_pid) c=$(cursor)
  entries >"$table_before"
  break_config || return 1
  if inside systemctl reload zcal-agent; then echo "reload succeeded"; return 1; fi
  file_line_column "$c" || return 1
  if ! active || [[ $(main_pid) != "$pid" ]]; then echo "the agent did not keep running"; return 1; fi
}
step "a broken file: systemctl reload fails with FILE:LINE:COLUMN, the agent keeps running" \
  broken_reload
broken_restart() {
  local c
  c=$(cursor)
  if inside systemctl restart zcal-agent; then echo "restart succeeded"; return 1; fi
  file_line_column "$c" || return 1
  # The stopped agent's segment stays for its readers, whole.
  [[ -s $table_before && $(entries) == "$(cat "$table_before")" ]] ||
    { echo "entries before: $(cat "$table_before"), now: $(entries)"; show; return 1; }
  echo "segment kept: $(entries) entries"
}
step "a broken file: systemctl restart fails with FILE:LINE:COLUMN, the segment stays" \
  broken_restart
repaired() {
  cp "$good" "$root$config" && inside systemctl restart zcal-agent && active
}
step "the file repaired: systemctl restart starts the agent" repaired

# --- 9. stop ----------------------------------------------------------------------
heartbeat_ns() { inside zcal show --json | sed -n 's/^ *"heartbeat_ns": \([0-9]*\),*$/\1/p'; }
stop_keeps_segment() {
  local before last
  wait_until 60 published || { show; return 1; }
  before=$(date +%s%N)
  inside systemctl stop zcal-agent || return 1
  [[ $(inside systemctl is-active zcal-agent) == inactive ]] ||
    { echo "zcal-agent is $(inside systemctl is-active zcal-agent) after the stop"; return 1; }
  last=$(heartbeat_ns)
  # A heartbeat written by the stop, not only one before it.
  if [[ -z $last ]] || ((last < before)); then
    echo "last heartbeat ${last:-none}, stop requested at $before"
    show
    return 1
  fi
  published || { show; return 1; }
  echo "heartbeat $(((last - before) / 1000000)) ms after the stop was requested; $(entries) entries"
}
step "systemctl stop: the segment stays, with a last heartbeat" stop_keeps_segment

# --- 10. purge --------------------------------------------------------------------
purge() {
  local out
  out=$(inside env DEBIAN_FRONTEND=noninteractive apt-get purge -y -q "${packages[@]}" 2>&1) ||
    { echo "$out"; return 1; }
  grep -E '^(Removing|Purging)' <<<"$out"
}
nothing_left() {
  local f left=0
  while IFS= read -r f; do
    if [[ -e $root$f || -L $root$f ]]; then echo "left behind: $f"; left=1; fi
  done <"$listed"
  for f in /etc/zcal /var/lib/zcal /run/zcal /dev/shm/zcal /dev/shm/zcal.lock \
    /etc/systemd/system/multi-user.target.wants/zcal-agent.service; do
    if inside test -e "$f" || inside test -L "$f"; then echo "left behind: $f"; left=1; fi
  done
  # shellcheck disable=SC2016 # dpkg-query's format, not the shell's
  if inside dpkg-query -W -f='${db:Status-Abbrev} ${Package}\n' "${packages[@]}" 2>/dev/null |
    grep -v '^un '; then
    left=1
  fi
  [[ $(inside systemctl show -p LoadState --value zcal-agent) == not-found ]] ||
    { echo "systemd still knows zcal-agent.service"; left=1; }
  ((left == 0))
}
step "apt-get purge ${packages[*]}" purge
step "nothing of the packages is left ($(wc -l <"$listed" 2>/dev/null || echo 0) files listed)" \
  nothing_left

# --- cleanup -----------------------------------------------------------------------
cleanup
trap - EXIT
stopped() {
  local left=0
  [[ ! -e $work ]] || { echo "left behind: $work"; left=1; }
  ! ip netns list | grep -q "^$netns\b" || { echo "left behind: netns $netns"; left=1; }
  ! kill -0 "$nspawn_pid" 2>/dev/null || { echo "systemd-nspawn still runs"; left=1; }
  ! losetup -a 2>/dev/null | grep -F "$work" || left=1
  ((left == 0))
}
step "container stopped, namespace and directory removed" stopped

finish
