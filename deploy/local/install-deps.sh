#!/usr/bin/env bash
# Installs the Debian bookworm packages the build and tests need, skipping
# the ones already installed. Run as root (or with sudo available).
set -euo pipefail

packages=(
  cmake g++ make pkg-config
  # cpack -G DEB: dpkg-shlibdeps computes the packages' runtime dependencies
  dpkg-dev
  libgrpc++-dev protobuf-compiler-grpc libprotobuf-dev protobuf-compiler
  libabsl-dev zlib1g-dev libssl-dev prometheus-cpp-dev
  # the --auth-policy file (YAML)
  libyaml-cpp-dev
  # command lines of the binaries (header-only)
  libcli11-dev
  libgtest-dev libgmock-dev libbenchmark-dev
  libtorch-dev libgloo-dev python3-torch
  # real data for shard-train (/usr/share/datasets/fashion-mnist)
  dataset-fashion-mnist
  # the Python client: its runtime and the stub generator
  python3-grpcio python3-protobuf python3-numpy python3-setuptools
  # building and installing it as a wheel (python_package_install)
  python3-pip
  clang-14 libclang-rt-14-dev
  # replicated state on etcd: the server (tests start real members),
  # etcdctl (tests read etcd's history; backups) and the v3 API's .proto
  # files the etcd client stubs are generated from
  etcd-server etcd-client golang-etcd-server-dev golang-github-gogo-protobuf-dev
  golang-github-grpc-ecosystem-grpc-gateway-dev
  # tests: promtool, certificates, manifests, the container image
  prometheus openssl yamllint python3-yaml kubectl nodejs buildah debootstrap
)

missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" \
    || missing+=("$p")
done
if [ ${#missing[@]} -eq 0 ]; then
  echo "install-deps: all ${#packages[@]} packages present"
  exit 0
fi
echo "install-deps: installing ${missing[*]}"
SUDO=""
[ "$(id -u)" -eq 0 ] || SUDO=sudo
$SUDO apt-get update -qq
DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends \
  "${missing[@]}" >/dev/null
echo "install-deps: done"
