#!/usr/bin/env bash
# Configures (once) and builds one build directory.
#   scripts/build.sh DIR [meson setup options...]
set -euo pipefail
cd "$(dirname "$0")/.."
dir=$1
shift
if [[ -f $dir/build.ninja ]]; then
  meson setup --reconfigure "$dir" "$@" >/dev/null
else
  meson setup "$dir" "$@"
fi
meson compile -C "$dir"
