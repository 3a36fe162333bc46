// Forms the job's process group through the coordinator's rendezvous store.
#ifndef TRAINER_PROCESS_GROUP_H_
#define TRAINER_PROCESS_GROUP_H_

#include <chrono>
#include <string>

#include "absl/status/statusor.h"
#include "torch/csrc/distributed/c10d/Store.hpp"
#include "torch/types.h"
#include "trainer/gradient_sync.h"

namespace shard::trainer {

enum class Backend { kAuto, kGloo, kNccl };

// "auto", "gloo" or "nccl".
absl::StatusOr<Backend> ParseBackend(const std::string& name);

// True when this build can create NCCL process groups (CUDA libtorch) and a
// GPU is visible.
bool NcclAvailable();

struct ProcessGroupOptions {
  Backend backend = Backend::kAuto;
  // Collective timeout.
  std::chrono::milliseconds timeout = std::chrono::minutes(5);
  // Network interface for Gloo (e.g. "eth0"); empty: this host's address,
  // falling back to loopback.
  std::string gloo_interface;
};

// The device a rank computes on for `backend_name` ("nccl": the CUDA device
// $LOCAL_RANK, else rank modulo the visible devices; otherwise the CPU).
torch::Device DeviceFor(const std::string& backend_name, int rank);

// Creates a Gloo or NCCL process group of `world_size` ranks on `store`.
// kAuto picks NCCL when NcclAvailable(), else Gloo. FAILED_PRECONDITION when
// NCCL is asked for but unavailable; errors from libtorch as INTERNAL.
absl::StatusOr<ProcessGroupPtr> MakeProcessGroup(
    const c10::intrusive_ptr<c10d::Store>& store, int rank, int world_size,
    const ProcessGroupOptions& options, std::string* backend_name);

}  // namespace shard::trainer

#endif  // TRAINER_PROCESS_GROUP_H_
