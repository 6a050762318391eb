#!/usr/bin/env bash
# Bounded fuzz run: run_fuzz.sh FUZZER SECONDS SEED_CORPUS_DIR
# New inputs go to a temporary corpus (the seed corpus in the source tree is
# only read); a crash leaves its input in the build directory and fails.
set -euo pipefail
fuzzer=$1 seconds=$2 seeds=$3
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
"$fuzzer" -max_total_time="$seconds" -rss_limit_mb=2048 -print_final_stats=1 \
  -artifact_prefix="$(dirname "$fuzzer")/crash-$(basename "$fuzzer")-" \
  "$work" "$seeds"
