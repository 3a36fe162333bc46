#!/usr/bin/env bash
# A client-only configure (-DSHARD_BUILD_SERVER=OFF) needs neither
# prometheus-cpp nor GoogleTest: it succeeds with both hidden from CMake and
# offers the client targets and no shardd. The control (the default
# configure with prometheus-cpp hidden) must fail, or hiding proves nothing.
# Usage: client_only_configure_test.sh SOURCE_DIR WORK_DIR
set -euo pipefail
source_dir=${1:?usage: client_only_configure_test.sh SOURCE_DIR WORK_DIR}
work=${2:?usage: client_only_configure_test.sh SOURCE_DIR WORK_DIR}
rm -rf "$work" && mkdir -p "$work"
hidden=(-DCMAKE_DISABLE_FIND_PACKAGE_prometheus-cpp=ON
        -DCMAKE_DISABLE_FIND_PACKAGE_GTest=ON)

if ! cmake -S "$source_dir" -B "$work/client" -DSHARD_BUILD_SERVER=OFF \
     "${hidden[@]}" >"$work/client.log" 2>&1; then
  cat "$work/client.log"
  echo "FAILED client-only configure without prometheus-cpp and GoogleTest"
  exit 1
fi
echo "ok      client-only configure without prometheus-cpp and GoogleTest"

targets=$(cmake --build "$work/client" --target help)
for target in shard_client shardctl; do
  grep -qx "\.\.\. $target" <<<"$targets" \
    || { echo "FAILED client-only build lacks $target"; exit 1; }
done
if grep -qx '\.\.\. shardd' <<<"$targets"; then
  echo "FAILED client-only build has shardd"; exit 1
fi
echo "ok      client-only build offers shard_client and shardctl, not shardd"

if cmake -S "$source_dir" -B "$work/full" -DSHARD_WITH_TORCH=OFF \
     "${hidden[@]}" >"$work/full.log" 2>&1; then
  echo "FAILED control: the full configure succeeded without prometheus-cpp"
  exit 1
fi
echo "ok      control: the full configure needs prometheus-cpp"
rm -rf "$work"
