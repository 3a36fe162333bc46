#!/usr/bin/env bash
# Downloads (apt-get download, here on Debian bookworm) the packages that
# tests/gpu/run.sh --debs DIR unpacks on a GPU machine that has a CUDA
# PyTorch but not this project's other dependencies: gRPC, Protobuf,
# Abseil, prometheus-cpp, CLI11, yaml-cpp, the Python gRPC/Protobuf modules and the
# Fashion-MNIST dataset. About 50 MB.
#
#   tests/gpu/fetch-debs.sh DIR
set -euo pipefail
if [[ $# -ne 1 ]]; then
  echo "usage: $0 DIR" >&2
  exit 2
fi
mkdir -p "$1"
cd "$1"
apt-get download \
  libgrpc++-dev libgrpc++1.51 libgrpc-dev libgrpc29 protobuf-compiler-grpc \
  libprotobuf-dev libprotobuf32 libprotoc32 protobuf-compiler \
  libabsl-dev libabsl20220623 \
  prometheus-cpp-dev libprometheus-cpp-core1.0 libprometheus-cpp-pull1.0 \
  libcivetweb1 libcivetweb-dev libcli11-dev libyaml-cpp-dev libyaml-cpp0.7 \
  libre2-9 libre2-dev libc-ares2 libc-ares-dev zlib1g-dev libssl-dev \
  python3-grpcio python3-protobuf dataset-fashion-mnist
echo "$(ls ./*.deb | wc -l) packages in $PWD"
