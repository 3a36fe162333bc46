// libtorch adapter: a torch::data::samplers::Sampler<> that yields this
// rank's indices streamed from the coordinator.
//
// Epochs come from the coordinator, not from the caller: every reset() (the
// DataLoader calls it at each begin()) moves to the next epoch, the first one
// to epoch 0 or to the point given by ResumeAt(). make_data_loader moves the
// sampler in, so the sampler shares its progress through a
// ShardSamplerProgress handle that the trainer keeps (progress()).
// Errors from the coordinator are thrown as std::runtime_error (the libtorch
// boundary). Thread-safety: the sampler is used by one DataLoader thread; the
// progress handle is thread-safe.
#ifndef SHARD_CLIENT_TORCH_SHARD_SAMPLER_H_
#define SHARD_CLIENT_TORCH_SHARD_SAMPLER_H_

#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "shard/client/coordinator_client.h"
#include "shard/client/torch/torch_compat.h"
#include "torch/data/samplers/base.h"

namespace shard::torch_adapter {

// Where a sampler is: the epoch it serves and the global position (entries
// of the epoch's tail-adjusted order consumed by all ranks together, i.e.
// world_size * indices this rank was handed).
struct EpochPosition {
  uint64_t epoch = 0;
  uint64_t position = 0;
};

class ShardSamplerProgress {
 public:
  // The epoch being served and how far into it; before the first reset(),
  // the point the first reset() will start from.
  EpochPosition Current() const ABSL_LOCKS_EXCLUDED(mu_);
  // Makes the next reset() start at (epoch, position) instead of the next
  // epoch; position must be a multiple of the world size.
  void ResumeAt(EpochPosition start) ABSL_LOCKS_EXCLUDED(mu_);
  // Total time the sampler spent obtaining indices (opening streams and
  // waiting for the next batch of indices), since it was created: the time
  // the trainer waited for the coordinator.
  absl::Duration IndexWait() const ABSL_LOCKS_EXCLUDED(mu_);

 private:
  friend class ShardSampler;
  // Returns where the epoch opened by reset() starts and records it.
  EpochPosition BeginEpoch() ABSL_LOCKS_EXCLUDED(mu_);
  void SetPosition(uint64_t position) ABSL_LOCKS_EXCLUDED(mu_);
  void AddIndexWait(absl::Duration waited) ABSL_LOCKS_EXCLUDED(mu_);

  mutable absl::Mutex mu_;
  EpochPosition current_ ABSL_GUARDED_BY(mu_);
  bool started_ ABSL_GUARDED_BY(mu_) = false;
  std::optional<EpochPosition> resume_ ABSL_GUARDED_BY(mu_);
  absl::Duration index_wait_ ABSL_GUARDED_BY(mu_);
};

class ShardSampler : public torch::data::samplers::Sampler<> {
 public:
  ShardSampler(std::shared_ptr<client::CoordinatorClient> client,
               client::Membership membership,
               client::StreamOptions stream_options = {});

  // Shared progress; stays valid after the sampler moved into a DataLoader.
  std::shared_ptr<ShardSamplerProgress> progress() const { return progress_; }

  // Starts the next epoch (see the file comment). new_size is ignored: the
  // coordinator's job spec fixes the dataset size.
  void reset(
      torch_compat::optional<size_t> new_size = torch_compat::nullopt) override;
  // Up to batch_size indices; nullopt at the end of the epoch.
  torch_compat::optional<std::vector<size_t>> next(size_t batch_size) override;
  // Saves and loads (epoch, position) so a restored sampler resumes there.
  void save(torch::serialize::OutputArchive& archive) const override;
  void load(torch::serialize::InputArchive& archive) override;

 private:
  std::shared_ptr<client::CoordinatorClient> client_;
  client::Membership membership_;
  client::StreamOptions stream_options_;
  std::shared_ptr<ShardSamplerProgress> progress_;
  std::unique_ptr<client::ShardStream> stream_;
  std::vector<uint64_t> buffer_;
};

}  // namespace shard::torch_adapter

#endif  // SHARD_CLIENT_TORCH_SHARD_SAMPLER_H_
