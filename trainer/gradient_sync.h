// Data-parallel gradient averaging: bucketed all-reduce overlapped with
// backward, plus the initial parameter broadcast.
//
// Parameters are grouped into buckets of about `bucket_bytes`, in reverse
// registration order (the order backward produces gradients). A gradient
// hook copies each gradient into its bucket's flat buffer; when a bucket is
// complete its all-reduce starts asynchronously while backward continues.
// Buckets are launched strictly in bucket order so every rank issues the
// same collectives in the same order. Finish() waits for all of them and
// writes grad = sum / world_size into each parameter, so every replica steps
// on bit-identical gradients (ring all-reduce returns the same bytes to all
// ranks). Buckets live on the parameters' device and dtype (all parameters
// must share them). Thread-safety: hooks may run on autograd threads;
// Prepare/Finish are called by the training thread around each backward.
#ifndef TRAINER_GRADIENT_SYNC_H_
#define TRAINER_GRADIENT_SYNC_H_

#include <cstddef>
#include <mutex>
#include <vector>

#include "shard/client/torch/torch_compat.h"
#include "torch/types.h"

namespace shard::trainer {

using ProcessGroupPtr = c10::intrusive_ptr<torch_compat::Collectives>;

// Copies rank 0's parameter values to every rank.
void BroadcastParameters(const std::vector<torch::Tensor>& parameters,
                         const ProcessGroupPtr& group);

// Returns once every rank of the group called it (a one-element all-reduce
// on `device`, which works on every backend). Throws what libtorch throws
// when a peer is gone or the collective times out.
void WaitForAllRanks(const ProcessGroupPtr& group, torch::Device device);

class GradientSync {
 public:
  GradientSync(std::vector<torch::Tensor> parameters, ProcessGroupPtr group,
               size_t bucket_bytes = size_t{1} << 20);

  // Resets per-step state; call before backward.
  void Prepare();
  // Launches any bucket not yet launched (parameters without a gradient
  // this step contribute zeros), waits for all all-reduces and writes the
  // averaged gradients. Call after backward, before the optimizer step.
  void Finish();

  size_t bucket_count() const { return buckets_.size(); }

 private:
  struct Bucket {
    std::vector<size_t> parameters;  // Indices into parameters_.
    torch::Tensor flat;              // Concatenated gradients.
    size_t ready = 0;                // Gradients copied this step.
    c10::intrusive_ptr<c10d::Work> work;
  };
  struct Slot {
    size_t bucket;
    int64_t offset;  // Element offset in the bucket's flat buffer.
  };

  void OnGradient(size_t parameter, const torch::Tensor& gradient);
  // Launches consecutive complete buckets from next_launch_ on.
  void LaunchReady();
  void Launch(Bucket& bucket);

  std::vector<torch::Tensor> parameters_;
  ProcessGroupPtr group_;
  std::vector<Bucket> buckets_;
  std::vector<Slot> slots_;
  std::mutex mu_;  // Guards bucket state and next_launch_ during backward.
  size_t next_launch_ = 0;
};

}  // namespace shard::trainer

#endif  // TRAINER_GRADIENT_SYNC_H_
