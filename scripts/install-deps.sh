#!/usr/bin/env bash
# Installs every Debian 12 package zcal needs to build, test and benchmark.
# Idempotent and non-interactive: packages already present are left alone, and
# apt is only called when something is missing. Must run as root (or via sudo).
set -euo pipefail

packages=(
  # build
  meson ninja-build g++ pkg-config ccache
  libcli11-dev nlohmann-json3-dev libspdlog-dev libfmt-dev libexpected-dev
  libyaml-cpp-dev prometheus-cpp-dev liburing-dev libboost-dev
  libseccomp-dev libcap-dev libmnl-dev
  # libsodium (the peer handshake's HMAC and randomness, the report's CSP
  # script hashes), Chart.js for the report page; OpenSSL's libcrypto only
  # for a test that checks those hashes with a second implementation
  libsodium-dev libjs-chart.js libssl-dev
  # tests and fuzzing
  libgtest-dev libgmock-dev clang-14 libclang-rt-14-dev
  iproute2 curl python3 prometheus
  # the fleet tests: a DNS server in network namespaces (/usr/sbin/dnsmasq)
  dnsmasq-base
  # the report tests: a headless browser loads every kind of page
  chromium
  # the Rust crate client/rust (meson -Drust=enabled): Debian's toolchain,
  # called as /usr/bin/cargo and /usr/bin/rustc
  cargo rustc
  # the gRPC C++ example and its test (meson -Dgrpc=enabled): the generic
  # API needs no protoc; strace shows the socket options gRPC sets
  libgrpc++-dev strace
  # libfabric's own fi_pingpong (libfabric-bin, with libfabric1) under zcal
  # exec and strace: the test that FI_TCP_ZEROCOPY_SIZE reaches its provider
  libfabric-bin
  # benchmarks (stress-ng: the controlled load of bench/load.py)
  libbenchmark-dev iperf3 stress-ng
  # manual pages
  scdoc
  # Debian packages (scripts/test-package.sh): build, lintian, hardening-check
  # (devscripts), systemd-analyze and systemd-sysusers, man, col
  build-essential dpkg-dev debhelper lintian devscripts systemd man-db
  bsdextrautils
  # the container as the DaemonSet runs it (scripts/test-container.sh): an
  # OCI runtime, and Python's YAML for the manifest
  runc python3-yaml
  # the packages under real systemd (scripts/test-systemd.sh): a minimal
  # Debian 12 root (mmdebstrap), booted with systemd-nspawn
  # (systemd-container)
  mmdebstrap systemd-container
)

missing=()
for p in "${packages[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q '^install ok installed$'; then
    missing+=("$p")
  fi
done

if ((${#missing[@]} == 0)); then
  echo "install-deps: all ${#packages[@]} packages present"
  exit 0
fi

sudo=""
if ((EUID != 0)); then
  command -v sudo >/dev/null || { echo "install-deps: run as root (missing: ${missing[*]})" >&2; exit 1; }
  sudo=sudo
fi

echo "install-deps: installing ${missing[*]}"
export DEBIAN_FRONTEND=noninteractive
$sudo apt-get update -qq
# The prometheus package starts its daemon on install; tests start their own on
# loopback, so keep the packaged service from starting (policy-rc.d denies it).
policy=/usr/sbin/policy-rc.d
created_policy=0
if [[ ! -e $policy ]]; then
  printf '#!/bin/sh\nexit 101\n' | $sudo tee "$policy" >/dev/null
  $sudo chmod +x "$policy"
  created_policy=1
fi
trap '[[ $created_policy == 1 ]] && $sudo rm -f "$policy"' EXIT
$sudo apt-get install -y -qq --no-install-recommends "${missing[@]}"
