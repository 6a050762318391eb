# shellcheck shell=bash
# The ok / FAIL / skip steps of the scripts whose steps count like tests
# (test-package.sh, test-systemd.sh, test-container.sh); sourced by them.
# Before sourcing, a script sets STEPS_NAME, the word that starts its last
# line ("NAME: N passed, N failed, N skipped", which scripts/test adds up).
# Optional: STEPS_SHOW_OK=1 prints a passing step's output too (as
# ZCAL_TEST_VERBOSE=1 does for every script); STEPS_OUT names a file that
# takes the step's output while the step runs in the background, its pid
# in $running, so that an interrupt reaches the script's trap at once and
# its cleanup can stop the step.
pass=0 fail=0 skip=0 running=""
started=${started:-$SECONDS}

step() {  # step NAME COMMAND...: runs the command, counts and reports it
  local name=$1
  shift
  local out rc
  if [[ -n ${STEPS_OUT:-} ]]; then
    "$@" >"$STEPS_OUT" 2>&1 &
    running=$!
    wait "$running"
    rc=$?
    running=""
    out=$(cat "$STEPS_OUT")
  else
    out=$("$@" 2>&1)
    rc=$?
  fi
  if ((rc == 0)); then
    pass=$((pass + 1))
    echo "ok    $name"
    if [[ -n $out && (${STEPS_SHOW_OK:-} == 1 || -n ${ZCAL_TEST_VERBOSE:-}) ]]; then
      printf '%s\n' "$out" | sed 's/^/      /'
    fi
  else
    fail=$((fail + 1))
    echo "FAIL  $name"
    printf '%s\n' "$out" | sed 's/^/      /'
  fi
}

skipped() {  # skipped NAME WHY
  skip=$((skip + 1))
  echo "skip  $1 ($2)"
}

finish() {  # prints the counts and exits, 1 when a step failed
  echo "      ($STEPS_NAME stage: $((SECONDS - started)) s)"
  echo "$STEPS_NAME: $pass passed, $fail failed, $skip skipped"
  ((fail == 0))
  exit
}
