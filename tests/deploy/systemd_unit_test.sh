#!/usr/bin/env bash
# deploy/systemd/shardd.service passes `systemd-analyze verify` (with its
# ExecStart pointed at the built shardd, since verify checks that the
# binary exists), and the environment file sets only SHARDD_OPTS.
# Usage: systemd_unit_test.sh BIN_DIR WORK_DIR. Exit 77 without
# systemd-analyze.
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
bin_dir=$(cd "${1:?usage: systemd_unit_test.sh BIN_DIR WORK_DIR}" && pwd)
work=${2:?usage: systemd_unit_test.sh BIN_DIR WORK_DIR}
if ! command -v systemd-analyze >/dev/null; then
  echo "skipped: systemd-analyze not installed"
  exit 77
fi
mkdir -p "$work"
sed "s#/usr/bin/shardd#$bin_dir/shardd#" "$root/deploy/systemd/shardd.service" \
  > "$work/shardd.service"
out=$(systemd-analyze verify "$work/shardd.service" 2>&1 || true)
# verify also lints units it pulls in from the host; only ours matters.
if echo "$out" | grep -F "shardd.service" >/dev/null; then
  echo "$out"
  echo "FAILED systemd-analyze verify shardd.service"
  exit 1
fi
echo "ok      systemd-analyze verify shardd.service"
grep -vE '^(#|$)' "$root/deploy/systemd/shardd.default" | grep -vq '^SHARDD_OPTS=' \
  && { echo "FAILED shardd.default sets more than SHARDD_OPTS"; exit 1; }
echo "ok      shardd.default sets SHARDD_OPTS only"
