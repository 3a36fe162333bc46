#!/usr/bin/env bash
# Builds the coordinator image from deploy/Dockerfile with buildah (no Docker
# engine needed), runs shardd inside it and talks to it from the host:
#   1. a Debian bookworm base image made locally with debootstrap from the
#      machine's Debian mirror (cached as localhost/shard-bookworm-base);
#   2. `buildah bud --isolation chroot --network host` with
#      BASE_IMAGE=localhost/shard-bookworm-base;
#   3. the image runs as 65532:65532;
#   4. shardd started in a container answers the host's shardctl
#      (create-job, status), and `shardctl drain` makes it exit 0;
#   5. the etcd image (--target etcd) runs etcd, and a shardd replica in the
#      coordinator image keeps its state there: it leads, a job created
#      through it survives it, and `shardd --check-etcd` finds it.
# Usage: image_smoke_test.sh WORK_DIR BIN_DIR (BIN_DIR holds the host's
# shardctl). Needs root, buildah and debootstrap; exits 77 (skipped) without.
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
work=${1:?usage: image_smoke_test.sh WORK_DIR BIN_DIR}
bin_dir=${2:?usage: image_smoke_test.sh WORK_DIR BIN_DIR}
if [ "$(id -u)" -ne 0 ] || ! command -v buildah >/dev/null ||
   ! command -v debootstrap >/dev/null; then
  echo "image smoke test: needs root, buildah and debootstrap; skipped"
  exit 77
fi
export STORAGE_DRIVER=vfs  # works without overlay mounts
base=localhost/shard-bookworm-base
image=localhost/shardd:smoke
mkdir -p "$work"
step() { echo "== $(date +%T) $*"; }

if ! buildah images --quiet "$base" >/dev/null 2>&1; then
  mirror=$(sed -n 's/^URIs: *//p' /etc/apt/sources.list.d/debian.sources 2>/dev/null | head -1)
  mirror=${mirror:-http://deb.debian.org/debian}
  step "debootstrap bookworm from $mirror"
  rm -rf "$work/rootfs"
  debootstrap --variant=minbase bookworm "$work/rootfs" "$mirror" >"$work/debootstrap.log" 2>&1 ||
    { tail -20 "$work/debootstrap.log"; exit 1; }
  rm -rf "$work/rootfs/var/cache/apt/archives/"*.deb
  step "import as $base"
  ctr=$(buildah from scratch)
  mnt=$(buildah mount "$ctr")
  cp -a "$work/rootfs/." "$mnt/"
  buildah umount "$ctr" >/dev/null
  buildah config --env PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin \
    --cmd /bin/bash "$ctr"
  buildah commit --quiet "$ctr" "$base" >/dev/null
  buildah rm "$ctr" >/dev/null
  rm -rf "$work/rootfs"
fi

step "buildah bud deploy/Dockerfile"
buildah bud --isolation chroot --network host --build-arg "BASE_IMAGE=$base" \
  -f "$root/deploy/Dockerfile" -t "$image" "$root" >"$work/build.log" 2>&1 ||
  { tail -40 "$work/build.log"; exit 1; }
user=$(buildah inspect --type image --format '{{.OCIv1.Config.User}}' "$image")
echo "image user: $user"
[ "$user" = "65532:65532" ] || { echo "FAIL: image runs as '$user'"; exit 1; }

step "run shardd in the image"
ctr=$(buildah from "$image")
cleanup() { buildah rm "$ctr" >/dev/null 2>&1 || true; }
trap cleanup EXIT
buildah run --isolation chroot --network host "$ctr" -- /usr/local/bin/shardd \
  --listen 127.0.0.1:0 --in-memory --shutdown-grace 2s \
  >"$work/shardd.out" 2>"$work/shardd.log" &
run_pid=$!
for _ in $(seq 100); do
  grep -q '^listening on ' "$work/shardd.out" && break
  sleep 0.2
done
address=$(sed -n 's/^listening on //p' "$work/shardd.out")
[ -n "$address" ] || { echo "FAIL: shardd did not start"; cat "$work/shardd.log"; exit 1; }
echo "shardd in the container listens on $address"
ctl() { "$bin_dir/shardctl" --coordinator "$address" "$@"; }
ctl create-job --job smoke --size 1000 --world-size 4
ctl status | tee "$work/status.txt"
grep -q '^smoke  *1000 ' "$work/status.txt" || { echo "FAIL: job not listed"; exit 1; }
ctl drain
wait "$run_pid" || { echo "FAIL: shardd exited $?"; exit 1; }
grep -q "drain requested" "$work/shardd.log" || { echo "FAIL: no drain"; exit 1; }

step "buildah bud deploy/Dockerfile --target etcd"
etcd_image=localhost/shard-etcd:smoke
buildah bud --isolation chroot --network host --build-arg "BASE_IMAGE=$base" \
  --target etcd -f "$root/deploy/Dockerfile" -t "$etcd_image" "$root" \
  >"$work/build-etcd.log" 2>&1 || { tail -40 "$work/build-etcd.log"; exit 1; }

step "etcd and a replicated shardd, each in its image"
ectr=$(buildah from "$etcd_image")
sctr=$(buildah from "$image")
cleanup() {
  kill "${etcd_pid:-}" "${replica_pid:-}" 2>/dev/null || true
  wait 2>/dev/null || true
  buildah rm "$ctr" "$ectr" "$sctr" >/dev/null 2>&1 || true
}
client_port=$((23000 + RANDOM % 1000))
buildah run --isolation chroot --network host "$ectr" -- /usr/bin/etcd \
  --name smoke --data-dir /var/lib/etcd/data \
  --listen-client-urls "http://127.0.0.1:$client_port" \
  --advertise-client-urls "http://127.0.0.1:$client_port" \
  --listen-peer-urls "http://127.0.0.1:$((client_port + 1000))" \
  --initial-advertise-peer-urls "http://127.0.0.1:$((client_port + 1000))" \
  --initial-cluster "smoke=http://127.0.0.1:$((client_port + 1000))" \
  >"$work/etcd.log" 2>&1 &
etcd_pid=$!
replica() {
  buildah run --isolation chroot --network host "$sctr" -- /usr/local/bin/shardd \
    --etcd-endpoints "127.0.0.1:$client_port" --leader-lease 2s "$@"
}
replica --listen "127.0.0.1:$((client_port + 2000))" --shutdown-grace 2s \
  >"$work/replica.out" 2>"$work/replica.log" &
replica_pid=$!
address=127.0.0.1:$((client_port + 2000))
for _ in $(seq 450); do  # 90 s: buildah starts slowly beside other tests
  grep -q "leading the coordinator cluster" "$work/replica.log" && break
  sleep 0.2
done
grep -q "leading the coordinator cluster" "$work/replica.log" ||
  { echo "FAIL: the replica does not lead"; cat "$work/etcd.log" "$work/replica.log"; exit 1; }
"$bin_dir/shardctl" --coordinator "$address" create-job --job ha-smoke \
  --size 500 --world-size 2
"$bin_dir/shardctl" --coordinator "$address" drain
wait "$replica_pid" || { echo "FAIL: the replica exited $?"; exit 1; }
replica_pid=
replica --check-etcd | tee "$work/check-etcd.txt"
grep -q "is sound: 1 jobs" "$work/check-etcd.txt" ||
  { echo "FAIL: the job is not in etcd"; exit 1; }
echo "image smoke test: passed"
