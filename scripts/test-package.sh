#!/usr/bin/env bash
# shellcheck disable=SC2317 # the checks are functions that step() runs
# The Debian packages, built and tried as an operator would:
#   1. dpkg-buildpackage -us -uc -b on a copy of the tree (in
#      /var/tmp/zcal-package-build, removed at the end; packages and logs in
#      build-deb/); the build log has no compiler or linker warning
#   2. lintian: no error, no warning (debian/*.lintian-overrides say why)
#   3. dpkg -i of zcal, libzcal1, libzcal-dev on this machine; the files and
#      the system user are where the packages say
#   4. systemd-analyze verify of the installed unit: no output
#   5. hardening-check of the installed binary and library
#   6. man zcal-calibrate (and every other page) renders
#   7. the example compiles against libzcal-dev with pkg-config and runs
#   8. zcal --version, and the installed configuration validates as user zcal
#   9. dpkg --purge: every file dpkg -L listed is gone, and the state dirs
# Each step prints "ok", "FAIL" or "skip" with its name; the last line is
# "package: N passed, N failed, N skipped" (scripts/test adds the counts).
# Needs root for steps 3-9 (skipped otherwise). Exit status 1 on a failure.
set -uo pipefail
cd "$(dirname "$0")/.." || exit 1

STEPS_NAME=package
# shellcheck source=scripts/steps.sh
source scripts/steps.sh

packages=(zcal libzcal1 libzcal-dev)
version=$(dpkg-parsechangelog -S Version 2>/dev/null || echo unknown)
upstream=${version%-*}
arch=$(dpkg-architecture -qDEB_HOST_ARCH 2>/dev/null || echo unknown)
multiarch=$(dpkg-architecture -qDEB_HOST_MULTIARCH 2>/dev/null || echo unknown)
# The packages, logs and lists end up in build-deb/. They are built in a
# path that is the same for every checkout (CI's clone included): the flags
# carry it (-ffile-prefix-map), and ccache finds an object only under the
# flags it was compiled with.
top=$PWD/build-deb
work=/var/tmp/zcal-package-build
src=$work/zcal-$upstream

if ! command -v dpkg-buildpackage >/dev/null; then
  skipped "build the packages" "not a Debian system: no dpkg-buildpackage"
  finish
fi

# One package stage at a time on this machine: the build path is shared,
# and so are dpkg and its lock (engineers may run scripts/test at once).
exec 9>/run/lock/zcal-test-package.lock
flock 9
policy=/usr/sbin/policy-rc.d
created_policy=0
cleanup() {
  rm -rf "$work"
  ((created_policy == 0)) || rm -f "$policy"
}
trap cleanup EXIT
started=$SECONDS

# --- 1. build ---------------------------------------------------------------
same_version() {
  local meson_version
  meson_version=$(sed -n "s/^  version: '\(.*\)',$/\1/p" meson.build)
  [[ $meson_version == "$upstream" ]] ||
    { echo "debian/changelog has $version, meson.build $meson_version: add a changelog entry (dch -v $meson_version-1)"; return 1; }
}
step "debian/changelog matches the version in meson.build" same_version

# A copy of the tree (tracked and new files, not ignored ones): the build
# writes debian/ and obj-*/ into its tree and the .debs next to it.
copy_tree() {
  rm -rf "$top" "$work" && mkdir -p "$top" "$src" || return 1
  if git rev-parse --is-inside-work-tree >/dev/null 2>&1; then
    git ls-files -z --cached --others --exclude-standard |
      while IFS= read -r -d '' f; do [[ -e $f ]] && printf '%s\0' "$f"; done |
      tar --null -T - -cf - | tar -xf - -C "$src"
  else
    tar --exclude='./build*' -cf - . | tar -xf - -C "$src"
  fi
}
build() {
  (cd "$src" && dpkg-buildpackage -us -uc -b -j"$(nproc)") >"$top/build.log" 2>&1 ||
    { tail -40 "$top/build.log"; return 1; }
  cp "$work"/*.deb "$work"/*.changes "$work"/*.buildinfo "$top/"
}
# debhelper points HOME and XDG_CONFIG_HOME into the build tree, where
# ccache would find neither its configuration nor its cache: name both.
if command -v ccache >/dev/null; then
  CCACHE_DIR=$(ccache -k cache_dir) CCACHE_BASEDIR=$(ccache -k base_dir) \
    CCACHE_MAXSIZE=$(ccache -k max_size)
  export CCACHE_DIR CCACHE_BASEDIR CCACHE_MAXSIZE
fi
# GCC's and ld's own warnings ("file:line:col: warning: ...",
# "ld: warning: ..."), and those of dpkg-gensymbols and dpkg-shlibdeps.
no_warnings() {
  ! grep -E '(^|[^[:alnum:]])(warning: |Warning: )' "$top/build.log" |
    grep -vE '^dpkg-(source|buildpackage|genchanges): warning: ' |
    grep . || { echo "(see $top/build.log)"; return 1; }
}
step "copy the tree to $src" copy_tree
step "dpkg-buildpackage -us -uc -b" build
echo "      (built in $((SECONDS - started)) s)"
step "the package build has no compiler or linker warning" no_warnings
debs=()
for p in "${packages[@]}"; do debs+=("$top/${p}_${version}_${arch}.deb"); done
changes=$top/zcal_${version}_${arch}.changes
if [[ ! -f $changes ]]; then
  skipped "the remaining steps" "no packages were built"
  finish
fi

# --- 2. lintian ---------------------------------------------------------------
# Info tags are printed too; errors and warnings fail (overridden ones, with
# their reasons in debian/*.lintian-overrides, do not).
lint() {
  lintian --fail-on error,warning --display-info "$changes" >"$top/lintian.log" 2>&1
}
step "lintian: no error, no warning" lint
grep -v '^running with root privileges' "$top/lintian.log" | sed 's/^/      /'

if ((EUID != 0)); then
  skipped "install, check and purge the packages" "needs root"
  finish
fi

# --- 3. install ---------------------------------------------------------------
# On a host whose init is systemd, the package would start the agent, which
# would take the segment /zcal and port 9464 from whatever uses them here:
# policy-rc.d tells deb-systemd-invoke not to start or stop services.
if [[ ! -e $policy ]]; then
  printf '#!/bin/sh\nexit 101\n' >"$policy" && chmod +x "$policy" && created_policy=1
fi

purge() { dpkg --purge "${packages[@]}" >/dev/null; }
# Known to dpkg in any state (installed, or only its conffiles left).
known() {
  dpkg-query -W -f='${db:Status-Abbrev} ${Package}\n' "${packages[@]}" 2>/dev/null |
    grep -v '^un '
}
# Packages of an earlier, interrupted run.
if known >/dev/null; then purge || true; fi

listed=$top/listed-files
install() {
  dpkg -i "${debs[@]}" || return 1
  # Files, not directories: shared directories such as /usr/bin (and /lib,
  # a link to usr/lib) stay.
  # The directories of zcal's own (/usr/share/zcal, /usr/include/zcal,
  # /usr/share/doc/libzcal1, ...) must go as well.
  dpkg -L "${packages[@]}" | sort -u | while IFS= read -r f; do
    [[ -d $f && ${f##*/} != *zcal* ]] || printf '%s\n' "$f"
  done >"$listed"
  [[ -s $listed ]]
}
step "dpkg -i ${packages[*]}" install
if [[ $(known | grep -c '^ii ') != "${#packages[@]}" ]]; then
  skipped "the installed checks" "the packages are not installed"
  finish
fi

expect_files() {
  local f missing=0
  for f in /usr/bin/zcal /etc/zcal/agent.yaml /lib/systemd/system/zcal-agent.service \
    /usr/lib/sysusers.d/zcal.conf /usr/share/zcal/prometheus/zcal-rules.yaml \
    /usr/share/zcal/grafana/zcal-dashboard.json /usr/share/man/man1/zcal.1.gz \
    /usr/share/man/man1/zcal-agent.1.gz /usr/share/man/man3/libzcal.3.gz \
    /usr/share/man/man3/zcal.h.3.gz "/usr/lib/$multiarch/libzcal.so.1" \
    "/usr/lib/$multiarch/libzcal.so" "/usr/lib/$multiarch/pkgconfig/zcal.pc" \
    /usr/include/zcal/zcal.h /usr/include/zcal/zcal_codes.h /usr/include/zcal/zcal.hpp \
    /usr/share/doc/libzcal-dev/examples/zc_sender.c; do
    [[ -e $f ]] || { echo "missing: $f"; missing=1; }
  done
  grep -qx /etc/zcal/agent.yaml /var/lib/dpkg/info/zcal.conffiles ||
    { echo "/etc/zcal/agent.yaml is not a conffile"; missing=1; }
  cmp /etc/zcal/agent.yaml configs/agent.yaml || missing=1
  ((missing == 0))
}
step "the packages put every file in place; agent.yaml is a conffile" expect_files
step "systemd-sysusers created the user zcal" id zcal

# --- 4-8. the installed files ---------------------------------------------------
verify_unit() {
  local out
  out=$(systemd-analyze verify /lib/systemd/system/zcal-agent.service 2>&1) || { echo "$out"; return 1; }
  [[ -z $out ]] || { echo "$out"; return 1; }
}
step "systemd-analyze verify zcal-agent.service: clean" verify_unit
# Every check but control-flow integrity, which no program linked on Debian
# 12 passes: its glibc start files lack the IBT/SHSTK property (debian/rules).
step "hardening-check /usr/bin/zcal" hardening-check --nocfprotection /usr/bin/zcal
step "hardening-check libzcal.so.1" hardening-check --nocfprotection "/usr/lib/$multiarch/libzcal.so.1"

renders() {
  local page text
  for page in zcal zcal-agent zcal-analyze zcal-calibrate zcal-doctor zcal-show libzcal zcal.h; do
    text=$(MANWIDTH=80 man "$page" 2>&1 | col -b) || { echo "man $page: $text"; return 1; }
    grep -q "^NAME" <<<"$text" || { echo "man $page has no NAME"; return 1; }
  done
  text=$(MANWIDTH=80 man zcal-calibrate | col -b)
  grep -q -- "--samples-out FILE" <<<"$text" || { echo "$text"; return 1; }
}
step "man zcal-calibrate (and every other page) renders" renders

example() {
  local dir port out rc
  dir=$(mktemp -d) || return 1
  # shellcheck disable=SC2046 # pkg-config's words are separate arguments
  cc -Wall -Wextra -Werror -o "$dir/zc_sender" /usr/share/doc/libzcal-dev/examples/zc_sender.c \
    $(pkg-config --cflags --libs zcal) || { rm -rf "$dir"; return 1; }
  local linked
  linked=$(ldd "$dir/zc_sender" | sed -n 's/^\s*libzcal\.so\.1 => \(\S*\) .*/\1/p')
  [[ -n $linked && $(readlink -f "$linked") == $(readlink -f "/usr/lib/$multiarch/libzcal.so.1") ]] ||
    { ldd "$dir/zc_sender"; rm -rf "$dir"; return 1; }
  # A loopback receiver that reads until the sender closes.
  python3 -c '
import socket, sys
s = socket.socket(); s.bind(("127.0.0.1", 0)); s.listen(1)
print(s.getsockname()[1], flush=True)
s.settimeout(30); c, _ = s.accept(); c.settimeout(30)
while c.recv(1 << 20): pass
' >"$dir/port" &
  local receiver=$!
  for _ in $(seq 100); do [[ -s $dir/port ]] && break; sleep 0.05; done
  port=$(cat "$dir/port")
  out=$("$dir/zc_sender" --segment "/zcal-package-test-$$" --count 200 --sizes 4096,65536 127.0.0.1 "$port" 2>&1)
  rc=$?
  wait "$receiver"
  rm -rf "$dir"
  echo "$out"
  ((rc == 0)) && grep -q "messages=200 " <<<"$out" && grep -q "decision=fallback" <<<"$out"
}
step "zc_sender.c builds with pkg-config --cflags --libs zcal and runs" example

version_matches() {
  local out
  out=$(/usr/bin/zcal --version) || return 1
  [[ $out == "zcal $upstream" ]] || { echo "$out"; return 1; }
}
step "zcal --version prints zcal $upstream" version_matches
step "zcal agent --check-config /etc/zcal/agent.yaml as user zcal" \
  runuser -u zcal -- /usr/bin/zcal agent --check-config /etc/zcal/agent.yaml

# --- 9. purge -----------------------------------------------------------------
nothing_left() {
  local f left=0
  while IFS= read -r f; do
    if [[ -e $f || -L $f ]]; then echo "left behind: $f"; left=1; fi
  done <"$listed"
  for f in /etc/zcal /var/lib/zcal /run/zcal \
    /etc/systemd/system/multi-user.target.wants/zcal-agent.service; do
    if [[ -e $f || -L $f ]]; then echo "left behind: $f"; left=1; fi
  done
  if known; then left=1; fi
  ((left == 0))
}
step "dpkg --purge ${packages[*]}" purge
step "nothing of the packages is left ($(wc -l <"$listed") files listed)" nothing_left

finish
