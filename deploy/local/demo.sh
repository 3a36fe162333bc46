#!/usr/bin/env bash
# Local demo: a shardd coordinator on a free loopback port, one job, and W
# ranks (shardctl consume processes) streaming K epochs; prints a coverage
# report per epoch (samples per rank, duplicates, missing).
#
#   deploy/local/demo.sh [--bin-dir build/bin] [--size 1002] [--world-size 4]
#                        [--epochs 2] [--tail pad|drop|uneven] [--seed 0]
#                        [--check]
#
# --check exits non-zero unless the coverage is what the tail policy
# promises (pad: no sample missing, total - N repeats; drop: no repeat;
# uneven: each sample exactly once).
set -euo pipefail

bin_dir=build/bin size=1002 world=4 epochs=2 tail=pad seed=0 check=0
while [ $# -gt 0 ]; do
  case "$1" in
    --bin-dir) bin_dir=$2; shift 2 ;;
    --size) size=$2; shift 2 ;;
    --world-size) world=$2; shift 2 ;;
    --epochs) epochs=$2; shift 2 ;;
    --tail) tail=$2; shift 2 ;;
    --seed) seed=$2; shift 2 ;;
    --check) check=1; shift ;;
    *) echo "demo.sh: unknown argument $1" >&2; exit 2 ;;
  esac
done

work=$(mktemp -d)
daemon_pid=""
cleanup() {
  [ -n "$daemon_pid" ] && kill "$daemon_pid" 2>/dev/null && wait "$daemon_pid" 2>/dev/null
  rm -rf "$work"
}
trap cleanup EXIT

"$bin_dir/shardd" --listen 127.0.0.1:0 --data-dir "$work/data" \
  >"$work/shardd.out" 2>"$work/shardd.log" &
daemon_pid=$!
for _ in $(seq 100); do
  grep -q '^listening on ' "$work/shardd.out" && break
  sleep 0.1
done
address=$(sed -n 's/^listening on //p' "$work/shardd.out")
[ -n "$address" ] || { echo "demo: shardd did not start" >&2; cat "$work/shardd.log" >&2; exit 1; }
echo "shardd listening on $address"

ctl() { "$bin_dir/shardctl" --coordinator "$address" "$@"; }
ctl create-job --job demo --size "$size" --world-size "$world" --seed "$seed" --tail "$tail"

echo "starting $world ranks, $epochs epochs each"
pids=()
for r in $(seq 0 $((world - 1))); do
  ctl consume --job demo --member "demo-rank-$r" --epochs "$epochs" >"$work/rank$r.txt" &
  pids+=($!)
done
for p in "${pids[@]}"; do wait "$p"; done

cat "$work"/rank*.txt | awk -v n="$size" -v w="$world" -v tail="$tail" -v check="$check" '
  { count[$1 " " $2]++; seen[$1 " " $3]++; epochs[$1] = 1 }
  END {
    bad = 0
    for (e in epochs) {
      line = sprintf("epoch %d: samples per rank", e)
      total = 0
      for (r = 0; r < w; r++) { line = line sprintf(" %d", count[e " " r]); total += count[e " " r] }
      dup = 0; missing = 0
      for (i = 0; i < n; i++) {
        c = seen[e " " i]
        if (c == 0) missing++
        else dup += c - 1
      }
      printf "%s | total %d | duplicates %d | missing %d\n", line, total, dup, missing
      if (tail == "pad" && (missing != 0 || dup != total - n)) bad = 1
      if (tail == "drop" && dup != 0) bad = 1
      if (tail == "uneven" && (missing != 0 || dup != 0)) bad = 1
    }
    if (check && bad) { print "coverage check FAILED"; exit 1 }
  }' | sort
echo "coordinator log:"
sed 's/^/  /' "$work/shardd.log"
