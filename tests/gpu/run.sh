#!/usr/bin/env bash
# Checks this project where its users run it: on a machine with an NVIDIA
# GPU and a CUDA PyTorch 2.x, the NCCL trainer and the Python client
# against that torch. One line per check, then a summary; exit status 0
# only if every check passed. docs/development.md "The GPU check".
#
#   tests/gpu/run.sh [--debs DIR] [--build-dir DIR] [--no-build] [--jobs N]
#   tests/gpu/run.sh --cpu [--quick] [--build-dir DIR] [--no-build]
#
# GPU mode (the default) configures against the libtorch inside the
# installed torch (configure must say "NCCL backend: enabled"), builds in
# build-gpu/ and runs every check with NCCL; the world is 2 ranks, or 1 on
# a machine with one GPU (NCCL refuses two ranks on one device).
# --debs DIR unpacks (dpkg -x) the .deb files that tests/gpu/fetch-debs.sh
# downloaded on a Debian machine, for a machine without gRPC, Protobuf,
# Abseil, prometheus-cpp or CLI11. --cpu runs the same checks here with
# Debian's torch 1.13 and Gloo (in build-cpu-check/ unless --build-dir
# says, 2 ranks), so the script is kept working between GPU runs; --quick
# runs only its fastest checks (CI's smoke). Each check's output is in
# BUILD/gpu-check/NAME.log.
set -uo pipefail
cd "$(dirname "$0")/../.."
source tests/support/check_lines.sh

mode=gpu quick=0 debs="" build_dir="" build=1 jobs="$(nproc)"
while [[ $# -gt 0 ]]; do
  case "$1" in
    --cpu) mode=cpu ;;
    --quick) quick=1 ;;
    --debs) debs="$(value_of "$@")" || exit 2; debs="$(realpath "$debs")"
      shift ;;
    --build-dir) build_dir="$(value_of "$@")" || exit 2; shift ;;
    --no-build) build=0 ;;
    --jobs) jobs="$(value_of "$@")" || exit 2
      [[ $jobs =~ ^[1-9][0-9]*$ ]] || usage_error "--jobs takes a count, got $jobs"
      shift ;;
    -h|--help) print_header "$0"; exit 0 ;;
    *) usage_error "unknown option $1" ;;
  esac
  shift
done
if [[ $quick == 1 && $mode != cpu ]]; then
  echo "tests/gpu/run.sh: --quick is the CPU mode's smoke; add --cpu" >&2
  exit 2
fi
[[ -n $build_dir ]] || build_dir=$([[ $mode == gpu ]] && echo build-gpu || echo build-cpu-check)
build_dir="$(realpath -m "$build_dir")"
logs="$build_dir/gpu-check"
mkdir -p "$logs"
init_checks "$logs"

# The packages of --debs, unpacked once into the build directory.
use_debs() {
  local root="$build_dir/sysroot" deb
  mkdir -p "$root"
  for deb in "$debs"/*.deb; do dpkg -x "$deb" "$root" || return 1; done
  local arch
  arch="$(gcc -print-multiarch 2>/dev/null || echo x86_64-linux-gnu)"
  export PATH="$root/usr/bin:$PATH"
  export LD_LIBRARY_PATH="$root/usr/lib/$arch${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
  export PYTHONPATH="$root/usr/lib/python3/dist-packages${PYTHONPATH:+:$PYTHONPATH}"
  prefix_path="$prefix_path;$root/usr"
}

configure_and_build() {
  local configured="$logs/configure.out"
  cmake -S . -B "$build_dir" -DCMAKE_BUILD_TYPE=Release \
    ${prefix_path:+"-DCMAKE_PREFIX_PATH=$prefix_path"} | tee "$configured" ||
    return 1
  if [[ $mode == gpu ]] && ! grep -q "NCCL backend: enabled" "$configured"; then
    echo "configure did not enable the NCCL backend (see above)"
    return 1
  fi
  cmake --build "$build_dir" -j "$jobs"
}

python3_bin="$(command -v python3)"
[[ $mode == cpu ]] && python3_bin=/usr/bin/python3
prefix_path=""
if [[ $mode == gpu ]]; then
  prefix_path="$("$python3_bin" tests/gpu/torch_facts.py --cmake-prefix)"
  [[ -n $debs ]] && check debs use_debs
fi
facts=(--cxx11-abi)
[[ $mode == gpu ]] && facts+=(--require-gpu)
check environment "$python3_bin" tests/gpu/torch_facts.py "${facts[@]}"
echo "      $(head -n 1 "$logs/environment.log")"
if [[ ${#failed[@]} -gt 0 ]]; then summary; exit 1; fi
if [[ $build == 1 ]]; then
  check build configure_and_build
  if [[ ${#failed[@]} -gt 0 ]]; then summary; exit 1; fi
fi

bin="$build_dir/bin" py="$build_dir/python"
backend=gloo world=2
if [[ $mode == gpu ]]; then
  backend=nccl
  gpus="$("$python3_bin" tests/gpu/torch_facts.py --gpus)"
  [[ $gpus -ge 2 ]] || world=1
fi

if [[ $quick == 0 ]]; then
  # Unit, integration and Python client tests (those needing etcd or
  # buildah are not built or skip without them).
  check unit-integration ctest --test-dir "$build_dir" -L "unit|integration" \
    --output-on-failure -j "$jobs"
  check sampler-vs-torch ctest --test-dir "$build_dir" --output-on-failure \
    -R '^(python_sampler_conformance|python_mixture_sampler)$'
  check randperm-switch "$python3_bin" tests/conformance/large_randperm_check.py \
    --bin-dir "$bin"
fi
check "shard-train-$backend-kill-resume" "$python3_bin" \
  tests/e2e/trainer_e2e_test.py --bin-dir "$bin" --backend "$backend" \
  --world "$world" --only crash
check "torchrun-$backend-killed-worker" "$python3_bin" \
  tests/python/torchrun_test.py --bin-dir "$bin" --python-dir "$py" \
  --nproc "$world" --only killed-worker
if [[ $quick == 0 ]]; then
  data="/usr/share/datasets/fashion-mnist"
  [[ -d $build_dir/sysroot$data ]] && data="$build_dir/sysroot$data"
  parity=(--world-sizes "$world" --backend "$backend" --data-path "$data")
  [[ $mode == cpu ]] && parity+=(--epochs 1 --train-size 6000 --eval-size 1000)
  check fashion-mnist-parity "$python3_bin" tests/bench/run_fashion_mnist_parity.py \
    --bin-dir "$bin" "${parity[@]}"
  grep -E '^\|' "$logs/fashion-mnist-parity.log" | sed 's/^/      /'
fi
summary
