#!/usr/bin/env bash
# The README's first command, scripts/run, as a user runs it: it installs,
# builds (build/, release) and starts the agent in the foreground. Here it
# gets a configuration of its own (a private segment, an ephemeral metrics
# port, a state file in a temporary directory, a one-second loopback
# calibration), so that it never takes /zcal or port 9464 from an agent
# that runs on this machine. Passes when the agent serves its metrics,
# publishes a calibrated table that `zcal show` reads, and exits 0 on
# SIGINT (Ctrl-C) within 10 s. Exit status 1 on a failure, with the log.
set -uo pipefail
cd "$(dirname "$0")/.." || exit 1

dir=$(mktemp -d)
segment=/zcal-run-$$
pid=""
# The agent leaves its lock file by design (instance_lock.cc); this test
# removes it with the segment. A failure mid-way kills the whole session
# (setsid), so that neither the build nor the agent outlives the test.
cleanup() {
  if [[ -n $pid ]]; then
    kill -KILL -- "-$pid" 2>/dev/null
    wait "$pid" 2>/dev/null
  fi
  rm -rf "$dir" "/dev/shm$segment" "/dev/shm$segment.lock"
}
trap cleanup EXIT
fail() {
  echo "scripts/run: $1"
  sed 's/^/  | /' "$dir/log"
  exit 1
}

cat >"$dir/agent.yaml" <<YAML
paths:
  - name: loopback
    type: loopback
methods: [copy, msg_zerocopy]
sizes:
  min: 4KiB
  max: 16KiB
budget:
  seconds_per_calibration: 1
segment:
  name: $segment
metrics:
  listen: 127.0.0.1:0
state:
  path: $dir/state.json
YAML

setsid bash scripts/run --config "$dir/agent.yaml" >"$dir/log" 2>&1 &
pid=$!
for _ in $(seq 600); do
  grep -q "calibration finished" "$dir/log" && break
  kill -0 "$pid" 2>/dev/null || fail "exited before its first calibration finished"
  sleep 0.5
done
grep -q "calibration finished" "$dir/log" || fail "no calibration finished in 300 s"
grep -q "serving metrics at http://127.0.0.1:" "$dir/log" || fail "does not say where it serves metrics"
show=$(build/agent/cli/zcal show --segment "$segment" 2>&1) || fail "zcal show failed: $show"
grep -q "msg_zerocopy" <<<"$show" || fail "zcal show lists no msg_zerocopy entry: $show"
kill -INT "$pid"
for _ in $(seq 100); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
kill -0 "$pid" 2>/dev/null && fail "still running 10 s after SIGINT"
wait "$pid"
status=$?
pid=""
((status == 0)) || fail "exit status $status after SIGINT"
echo "ok    scripts/run: the agent calibrated, published ($segment) and stopped on SIGINT"
