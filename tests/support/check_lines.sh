# Shared by the check scripts (tests/gpu/run.sh, tests/current-torch/run.sh):
# their command-line helpers and one line per check. Source it; it defines
# functions and the arrays `passed` and `failed`, nothing else.

# usage_error MESSAGE: prints "SCRIPT: MESSAGE (see --help)", exits 2.
usage_error() {
  echo "$0: $1 (see --help)" >&2
  exit 2
}

# value_of OPTION ARGS...: the value that follows OPTION, or a usage error.
value_of() {
  [[ $# -ge 2 && -n $2 && $2 != --* ]] || usage_error "$1 needs a value"
  echo "$2"
}

# print_header SCRIPT: its leading comment block (after the #! line).
print_header() {
  awk 'NR > 1 && !/^#/ { exit } NR > 1 { sub(/^# ?/, ""); print }' "$1"
}

# init_checks LOG_DIR: where check() writes each check's output.
init_checks() {
  check_logs="$1"
  passed=() failed=()
}

# check NAME COMMAND...: runs it, output in LOG_DIR/NAME.log, one line.
check() {
  local name=$1 began=$SECONDS
  shift
  if "$@" >"$check_logs/$name.log" 2>&1; then
    echo "PASS  $name ($((SECONDS - began)) s)"
    passed+=("$name")
  else
    echo "FAIL  $name ($((SECONDS - began)) s), $check_logs/$name.log:"
    tail -n 8 "$check_logs/$name.log" | sed 's/^/      /'
    failed+=("$name")
  fi
}

# summary: "N passed, M failed[: names]"; status 0 if none failed.
summary() {
  echo "${#passed[@]} passed, ${#failed[@]} failed${failed:+: ${failed[*]}}"
  [[ ${#failed[@]} -eq 0 ]]
}
