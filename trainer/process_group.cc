#include "trainer/process_group.h"

#include <algorithm>
#include <cstdlib>

#include "absl/strings/str_cat.h"
#include "torch/cuda.h"
#ifdef SHARD_WITH_GLOO
#include "torch/csrc/distributed/c10d/ProcessGroupGloo.hpp"
#endif
#ifdef SHARD_WITH_NCCL
#include "torch/csrc/distributed/c10d/ProcessGroupNCCL.hpp"
#endif

namespace shard::trainer {

absl::StatusOr<Backend> ParseBackend(const std::string& name) {
  if (name == "auto") return Backend::kAuto;
  if (name == "gloo") return Backend::kGloo;
  if (name == "nccl") return Backend::kNccl;
  return absl::InvalidArgumentError(
      absl::StrCat("--backend must be auto, gloo or nccl, got \"", name, "\""));
}

torch::Device DeviceFor(const std::string& backend_name, int rank) {
  if (backend_name != "nccl") return torch::kCPU;
  const char* local_rank = std::getenv("LOCAL_RANK");
  const int devices = static_cast<int>(torch::cuda::device_count());
  const int index = local_rank != nullptr ? std::atoi(local_rank)
                                          : rank % std::max(devices, 1);
  return torch::Device(torch::kCUDA, static_cast<c10::DeviceIndex>(index));
}

bool NcclAvailable() {
#ifdef SHARD_WITH_NCCL
  return torch::cuda::is_available();
#else
  return false;
#endif
}

absl::StatusOr<ProcessGroupPtr> MakeProcessGroup(
    const c10::intrusive_ptr<c10d::Store>& store, int rank, int world_size,
    const ProcessGroupOptions& options, std::string* backend_name) {
  Backend backend = options.backend;
  if (backend == Backend::kAuto) {
    backend = NcclAvailable() ? Backend::kNccl : Backend::kGloo;
  }
  try {
    if (backend == Backend::kNccl) {
#ifdef SHARD_WITH_NCCL
      if (!NcclAvailable()) {
        return absl::FailedPreconditionError(
            "--backend nccl: no CUDA device is visible");
      }
      auto nccl_options = c10d::ProcessGroupNCCL::Options::create();
      nccl_options->timeout = options.timeout;
      *backend_name = "nccl";
      return ProcessGroupPtr(c10::make_intrusive<c10d::ProcessGroupNCCL>(
          store, rank, world_size, nccl_options));
#else
      return absl::FailedPreconditionError(
          "--backend nccl: this build has no NCCL (configure with a CUDA "
          "libtorch on CMAKE_PREFIX_PATH)");
#endif
    }
#ifdef SHARD_WITH_GLOO
    auto gloo_options =
        c10d::ProcessGroupGloo::Options::create(options.timeout);
    gloo_options->devices.push_back(
        options.gloo_interface.empty()
            ? c10d::ProcessGroupGloo::createDefaultDevice()
            : c10d::ProcessGroupGloo::createDeviceForInterface(
                  options.gloo_interface));
    *backend_name = "gloo";
    return ProcessGroupPtr(c10::make_intrusive<c10d::ProcessGroupGloo>(
        store, rank, world_size, gloo_options));
#else
    return absl::FailedPreconditionError(
        "--backend gloo: this build has no Gloo (configure with the gloo "
        "headers, Debian's libgloo-dev, on the include path)");
#endif
  } catch (const std::exception& e) {
    return absl::InternalError(
        absl::StrCat("forming the process group: ", e.what()));
  }
}

}  // namespace shard::trainer
