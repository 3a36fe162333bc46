#!/usr/bin/env bash
# deploy/systemd/shardd.service passes `systemd-analyze verify` (with its
# ExecStart pointed at the built shardd, since verify checks that the
# binary exists), so does the unit with the etcd mode's drop-in
# (shardd.service.d/etcd.conf), which leaves no state directory and no
# --data-dir, and the environment file sets only SHARDD_OPTS.
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

# The etcd drop-in, next to the unit as under /etc/systemd/system.
mkdir -p "$work/etcd/shardd.service.d"
cp "$work/shardd.service" "$work/etcd/"
cp "$root/deploy/systemd/shardd.service.d/etcd.conf" "$work/etcd/shardd.service.d/"
sed -i "s#/usr/bin/shardd#$bin_dir/shardd#" "$work/etcd/shardd.service.d/etcd.conf"
out=$(SYSTEMD_UNIT_PATH="$work/etcd:" systemd-analyze verify "$work/etcd/shardd.service" 2>&1 || true)
if echo "$out" | grep -F "shardd.service" >/dev/null; then
  echo "$out"
  echo "FAILED systemd-analyze verify shardd.service with the etcd drop-in"
  exit 1
fi
dropin="$root/deploy/systemd/shardd.service.d/etcd.conf"
grep -qx 'ExecStart=' "$dropin" && grep -qx 'StateDirectory=' "$dropin" &&
  ! grep -E '^ExecStart=.*--data-dir' "$dropin" >/dev/null ||
  { echo "FAILED etcd.conf must replace ExecStart without --data-dir and drop StateDirectory"; exit 1; }
echo "ok      systemd-analyze verify shardd.service + etcd.conf drop-in"
grep -vE '^(#|$)' "$root/deploy/systemd/shardd.default" | grep -vq '^SHARDD_OPTS=' \
  && { echo "FAILED shardd.default sets more than SHARDD_OPTS"; exit 1; }
echo "ok      shardd.default sets SHARDD_OPTS only"
