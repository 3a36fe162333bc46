#!/usr/bin/env python3
"""Prints what tests/gpu/run.sh needs to know of the installed torch: its
version, CUDA and NCCL versions, the GPUs it sees, its C++ ABI and where
its CMake config lives. With --require-gpu, exit status 1 (saying why)
unless torch sees a GPU and has NCCL; with --cxx11-abi, 1 unless torch was
built with the C++11 string ABI (Debian's gRPC, Protobuf and Abseil are,
and one binary links both).

  tests/gpu/torch_facts.py [--require-gpu] [--cxx11-abi]
  tests/gpu/torch_facts.py --cmake-prefix   (prints the path only)
  tests/gpu/torch_facts.py --gpus           (prints the GPU count only)
"""
import argparse
import sys

import torch
import torch.distributed
import torch.utils


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--require-gpu", action="store_true")
    parser.add_argument("--cxx11-abi", action="store_true")
    parser.add_argument("--cmake-prefix", action="store_true")
    parser.add_argument("--gpus", action="store_true")
    args = parser.parse_args()
    gpus = torch.cuda.device_count() if torch.cuda.is_available() else 0
    if args.cmake_prefix:
        print(torch.utils.cmake_prefix_path)
        return 0
    if args.gpus:
        print(gpus)
        return 0
    nccl = torch.distributed.is_nccl_available()
    nccl_version = (".".join(map(str, torch.cuda.nccl.version()))
                    if nccl and gpus else "-")
    names = [torch.cuda.get_device_name(i) for i in range(gpus)]
    abi = bool(torch._C._GLIBCXX_USE_CXX11_ABI)
    print(f"torch {torch.__version__}, CUDA {torch.version.cuda or '-'}, "
          f"NCCL {nccl_version}, GPUs {gpus} {names}, C++11 ABI {abi}, "
          f"Python {sys.version.split()[0]}")
    if args.require_gpu and (gpus == 0 or not nccl):
        print("no GPU with NCCL visible to torch: run with --cpu for the CPU "
              "mode", file=sys.stderr)
        return 1
    if args.cxx11_abi and not abi:
        print("this torch uses the pre-C++11 string ABI; Debian's gRPC, "
              "Protobuf and Abseil use the C++11 one: use a torch built with "
              "it (torch >= 2.7 wheels are)", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
