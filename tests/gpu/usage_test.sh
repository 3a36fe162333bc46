#!/usr/bin/env bash
# tests/gpu/run.sh's command line: an option given last without its value,
# or with a bad one, is a usage error (exit 2, naming it) before anything
# runs; --help prints the header comment alone. Exit 0 when all hold.
set -uo pipefail
script="$(dirname "$0")/run.sh"
failed=0

expect_usage_error() {
  local out rc
  out="$("$script" "$@" 2>&1)"
  rc=$?
  if [[ $rc == 2 && $out == *"${@: -1}"* && $out != *PASS* ]]; then
    echo "ok      run.sh $* exits 2: $out"
  else
    echo "FAILED  run.sh $* exits $rc: $out"
    failed=1
  fi
}

expect_usage_error --build-dir
expect_usage_error --jobs
expect_usage_error --debs
expect_usage_error --cpu --jobs
expect_usage_error --jobs 0x4
expect_usage_error --no-such-option

help="$("$script" --help)"
if [[ $? == 0 && $help == *"--cpu [--quick]"* && $help != *pipefail* &&
      $help != *"#"* ]]; then
  echo "ok      run.sh --help prints the header comment alone"
else
  echo "FAILED  run.sh --help: $help"
  failed=1
fi
exit $failed
