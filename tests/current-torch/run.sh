#!/usr/bin/env bash
# Builds and checks this project on the current PyTorch: a Debian forky
# root (torch and libtorch 2.14, Python 3.14, numpy 2, transformers,
# accelerate, g++ 16) made once with debootstrap and cached, from the
# Debian archive this machine's apt already uses. One line per check, then
# a summary; exit status 0 only if every check passed.
# docs/development.md "The current torch".
#
#   tests/current-torch/run.sh [--root DIR] [--build-dir DIR] [--jobs N]
#                              [--quick | --ci] [--build-only]
#
# --root DIR     the cached root (default /var/cache/shard/forky-root, or
#                $SHARD_FORKY_ROOT); made when missing or when the package
#                list below changed.
# --build-dir    build directory inside the checkout (build-current-torch).
# --quick        the binaries, the torch adapters' and the Python client's
#                checks, not the C++ unit and integration suites.
# --ci           what .ci/run runs within CI's time: --quick, with the
#                randperm check at N = 214,748,364 only.
# --build-only   makes (or finds) the root, configures and builds, then
#                exits: .ci/run runs this in the background at the lowest
#                CPU priority while its main job builds and tests, so that
#                the build uses the cores that job leaves idle; the checks
#                then find it built.
# Needs root (debootstrap, chroot, bind mounts). Each check's output is in
# BUILD/current-torch/NAME.log.
set -uo pipefail
cd "$(dirname "$0")/../.."
source tests/support/check_lines.sh

root="${SHARD_FORKY_ROOT:-/var/cache/shard/forky-root}"
build_dir=build-current-torch jobs="$(nproc)" quick=0 build_only=0
randperm_sizes=214748363,214748364
while [[ $# -gt 0 ]]; do
  case "$1" in
    --root) root="$(value_of "$@")" || exit 2; shift ;;
    --build-dir) build_dir="$(value_of "$@")" || exit 2; shift ;;
    --jobs) jobs="$(value_of "$@")" || exit 2; shift ;;
    --quick) quick=1 ;;
    --ci) quick=1 randperm_sizes=214748364 ;;
    --build-only) build_only=1 ;;
    -h|--help) print_header "$0"; exit 0 ;;
    *) usage_error "unknown option $1" ;;
  esac
  shift
done
[[ $(id -u) == 0 ]] || usage_error "needs root (debootstrap, chroot, mounts)"

packages=(
  cmake g++ make pkg-config
  libgrpc++-dev protobuf-compiler-grpc libprotobuf-dev protobuf-compiler
  libabsl-dev zlib1g-dev libssl-dev prometheus-cpp-dev libcli11-dev
  libyaml-cpp-dev
  libgtest-dev libgmock-dev libbenchmark-dev
  libtorch-dev libgloo-dev python3-torch
  python3-grpcio python3-protobuf python3-numpy python3-setuptools
  # the client's wheel (python_package_install)
  python3-pip
  python3-transformers python3-accelerate
)
stamp="$root/.shard-packages"
logs="$PWD/$build_dir/current-torch"
mkdir -p "$logs"
init_checks "$logs"

# The Debian archive of this machine's apt sources (deb822 "URIs:" or a
# sources.list "deb URI SUITE" line), the one serving the main suite.
archive_url() {
  local file
  for file in /etc/apt/sources.list.d/*.sources; do
    [[ -f $file ]] || continue
    awk '/^URIs:/ { uri = $2 } /^Suites:/ && uri != "" && $0 !~ /security/ {
           print uri; exit }' "$file"
  done | head -n 1 | grep . && return
  awk '$1 == "deb" && $0 !~ /security/ { print $2; exit }' \
    /etc/apt/sources.list 2>/dev/null | grep .
}

# Makes the root (debootstrap, then apt inside it: debootstrap's own
# resolver leaves some packages unconfigured) unless the cached one holds
# this package list.
make_root() {
  local want
  want="$(printf '%s\n' "${packages[@]}" | sha256sum | cut -c1-64)"
  [[ -f $stamp && $(cat "$stamp") == "$want" ]] && {
    echo "cached: $root"; return 0; }
  local url
  url="$(archive_url)" || { echo "no Debian archive in the apt sources"; return 1; }
  if [[ ! -x $root/usr/bin/apt-get ]]; then
    rm -rf "$root"
    mkdir -p "$(dirname "$root")"
    debootstrap --variant=minbase forky "$root" "$url" \
      /usr/share/debootstrap/scripts/sid || return 1
  fi
  # The suite's Release file is past its Valid-Until on a frozen mirror.
  echo 'Acquire::Check-Valid-Until "false";' \
    >"$root/etc/apt/apt.conf.d/99shard-valid-until"
  in_root apt-get update || return 1
  in_root env DEBIAN_FRONTEND=noninteractive apt-get install -y \
    --no-install-recommends "${packages[@]}" || return 1
  echo "$want" >"$stamp"
}

# The checkout at /src inside the root, the kernel file systems, and the
# host's names (torchrun's MASTER_ADDR is the host name); undone on exit.
mounted=()
mount_into_root() {
  local dir
  for dir in proc sys dev dev/pts src etc/hosts; do
    [[ $dir == etc/hosts ]] && touch "$root/$dir" || mkdir -p "$root/$dir"
    mountpoint -q "$root/$dir" && continue
    case "$dir" in
      proc) mount -t proc proc "$root/proc" ;;
      src) mount --bind "$PWD" "$root/src" ;;
      *) mount --bind "/$dir" "$root/$dir" ;;
    esac || return 1
    mounted=("$root/$dir" "${mounted[@]}")
  done
}
unmount_root() {
  local dir
  for dir in "${mounted[@]}"; do umount -l "$dir" 2>/dev/null; done
}
trap unmount_root EXIT

in_root() { chroot "$root" "$@"; }
in_src() {
  chroot "$root" env HOME=/tmp SHARD_CURRENT_TORCH=1 \
    bash -c "cd /src && $*"
}

configure_and_build() {
  in_src "cmake -S . -B $build_dir -DCMAKE_BUILD_TYPE=Release" || return 1
  if [[ $quick == 1 ]]; then
    in_src "cmake --build $build_dir -j $jobs --target shardd shardctl \
      shard-train shard_torch_tests shard_trainer_tests shard_python \
      shard-client-probe"
  else
    in_src "cmake --build $build_dir -j $jobs"
  fi
}

versions() {
  in_src "python3 -c 'import sys, torch, numpy, transformers, accelerate;
print(\"Python\", sys.version.split()[0], \"torch\", torch.__version__,
      \"numpy\", numpy.__version__, \"transformers\", transformers.__version__,
      \"accelerate\", accelerate.__version__)'; g++ --version | head -n 1"
}

check root make_root
[[ ${#failed[@]} -eq 0 ]] || { summary; exit 1; }
check mounts mount_into_root
[[ ${#failed[@]} -eq 0 ]] || { summary; exit 1; }
check versions versions
sed 's/^/      /' "$logs/versions.log"
check build configure_and_build
[[ ${#failed[@]} -eq 0 ]] || { summary; exit 1; }
[[ $build_only == 1 ]] && { summary; exit 0; }

ctest_in_root() { in_src "ctest --test-dir $build_dir --output-on-failure $*"; }
if [[ $quick == 0 ]]; then
  check unit-integration ctest_in_root -j "$jobs" -L "'unit|integration'"
  check conformance ctest_in_root -L conformance
fi
# The libtorch ShardSampler / MakeShardDataLoader and the c10d Store on
# libtorch 2.14, then shard-train (Gloo) killed and resumed.
check torch-adapters in_src "$build_dir/bin/shard_torch_tests && \
  $build_dir/bin/shard_trainer_tests"
check trainer-e2e ctest_in_root -R "'^e2e_trainer$'"
# The Python client on Python 3.14, numpy 2 and torch 2.14 (DataLoader
# workers with the default start method and with fork; the Hugging Face
# Trainer example with a killed worker).
check python-client ctest_in_root -j "$jobs" -R "'^(python|clients)_'" \
  -E "'torchrun|failover'"
check torchrun-killed-worker ctest_in_root -R "'^python_torchrun$'"
check randperm-switch in_src "python3 tests/conformance/large_randperm_check.py \
  --bin-dir $build_dir/bin --sizes $randperm_sizes"
summary
