// libtorch adapter: a torch::data::samplers::Sampler<> that yields this
// rank's indices streamed from the coordinator.
//
// Epochs follow torch's DistributedSampler: every reset() (the DataLoader
// calls it at each begin()) starts the current epoch from its restart point
// (ResumeAt()/load(), or the epoch's start), so an iteration abandoned
// half-way is forgotten and the next one yields the same epoch again; once
// a pass was consumed to its end, the next reset() starts the next epoch.
// The first epoch is 0 or the one ResumeAt() names.
//
// Positions count the samples the training loop received. A DataLoader
// with workers(n) > 0 fetches batches ahead of the loop, so the loop must
// report each batch it received with progress->Consumed(batch size); then
// Current().position counts exactly those, and a pass ends when the loop
// received everything the sampler handed out. Without Consumed() the
// position counts the indices handed to the DataLoader, which is exact
// only with workers(0). (libtorch's drop_last does not combine with
// Consumed(): the dropped batch is never received, so the pass never ends;
// drop samples with the job's tail policy instead.)
//
// A job with balanced batches (JobSpec.batches): next() ignores the
// batch size it is asked for and returns the rank's next micro-batch
// whole, so each DataLoader batch is one micro-batch of the job's plan.
// Positions are then the step ends of the micro-batches received (or
// handed, without Consumed()), and ResumeAt() / load() take a step end.
//
// make_data_loader moves the sampler in, so the sampler shares its progress
// through a ShardSamplerProgress handle that the trainer keeps
// (progress()). Errors from the coordinator are thrown as StatusError
// (status_error.h, a std::runtime_error carrying the absl::Status: the
// libtorch boundary). Thread-safety: the sampler is
// used by one DataLoader thread; the progress handle is thread-safe.
#ifndef SHARD_CLIENT_TORCH_SHARD_SAMPLER_H_
#define SHARD_CLIENT_TORCH_SHARD_SAMPLER_H_

#include <cstddef>
#include <cstdint>
#include <deque>
#include <memory>
#include <optional>
#include <utility>
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
  explicit ShardSamplerProgress(uint32_t world_size)
      : world_size_(world_size) {}

  // The epoch being served and the global position after the samples
  // consumed so far (the epoch's length once a pass ended); before an
  // epoch's first reset(), the point it will start from.
  EpochPosition Current() const ABSL_LOCKS_EXCLUDED(mu_);
  // Makes `start.epoch` the current epoch and every reset() in it start at
  // `start` (call it again with the committed point after a commit so that
  // a restarted pass resumes there); position must be a multiple of the
  // world size.
  void ResumeAt(EpochPosition start) ABSL_LOCKS_EXCLUDED(mu_);
  // The training loop received a batch of `samples` (see the file
  // comment): needed with DataLoader workers, harmless without.
  void Consumed(size_t samples) ABSL_LOCKS_EXCLUDED(mu_);
  // Total time the sampler spent obtaining indices (opening streams and
  // waiting for the next batch of indices), since it was created: the time
  // the trainer waited for the coordinator.
  absl::Duration IndexWait() const ABSL_LOCKS_EXCLUDED(mu_);

 private:
  friend class ShardSampler;
  // One reset() of the sampler and what became of it.
  struct Pass {
    EpochPosition start;
    uint64_t handed = 0;        // Indices handed to the DataLoader.
    uint64_t consumed = 0;      // Samples the loop reported (Consumed()).
    bool tracked = false;       // Consumed() was called in this pass.
    bool exhausted = false;     // The stream ended.
    uint64_t end_position = 0;  // The epoch's length, once exhausted.
    // Balanced batches: (indices handed through a micro-batch, its step
    // end) of the micro-batches handed and not yet consumed, and the step
    // end of the last one handed and of the last one consumed.
    bool batched = false;
    std::deque<std::pair<uint64_t, uint64_t>> batch_ends;
    uint64_t handed_end = 0;
    uint64_t consumed_end = 0;
    bool Ended() const { return exhausted && (!tracked || consumed == handed); }
  };
  // Micro-batch ends kept while the loop reports nothing (workers(0) and
  // no Consumed()): their positions are the handed ones anyway.
  static constexpr size_t kMaxUntrackedBatchEnds = 1 << 16;
  // Starts a pass (see the file comment) and returns where it starts.
  EpochPosition BeginPass() ABSL_LOCKS_EXCLUDED(mu_);
  void Handed(size_t indices) ABSL_LOCKS_EXCLUDED(mu_);
  // A micro-batch of `indices` whose step ends at `step_end` was handed.
  void HandedBatch(size_t indices, uint64_t step_end) ABSL_LOCKS_EXCLUDED(mu_);
  // The stream ended; `end_position` is the epoch's length.
  void Exhausted(uint64_t end_position) ABSL_LOCKS_EXCLUDED(mu_);
  void AddIndexWait(absl::Duration waited) ABSL_LOCKS_EXCLUDED(mu_);
  EpochPosition RestartPoint() const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  const uint32_t world_size_;
  mutable absl::Mutex mu_;
  uint64_t epoch_ ABSL_GUARDED_BY(mu_) = 0;
  EpochPosition restart_ ABSL_GUARDED_BY(mu_);
  std::optional<Pass> pass_ ABSL_GUARDED_BY(mu_);
  absl::Duration index_wait_ ABSL_GUARDED_BY(mu_);
};

class ShardSampler : public torch::data::samplers::Sampler<> {
 public:
  ShardSampler(std::shared_ptr<client::CoordinatorClient> client,
               client::Membership membership,
               client::StreamOptions stream_options = {});

  // Shared progress; stays valid after the sampler moved into a DataLoader.
  std::shared_ptr<ShardSamplerProgress> progress() const { return progress_; }

  // Starts a pass over the current epoch, or over the next one when the
  // last pass ended (see the file comment). new_size is ignored: the
  // coordinator's job spec fixes the dataset size.
  void reset(
      torch_compat::optional<size_t> new_size = torch_compat::nullopt) override;
  // Up to batch_size indices; nullopt at the end of the epoch.
  torch_compat::optional<std::vector<size_t>> next(size_t batch_size) override;
  // Saves and loads (epoch, position) so a restored sampler resumes there.
  void save(torch::serialize::OutputArchive& archive) const override;
  void load(torch::serialize::InputArchive& archive) override;

 private:
  // next() of a job with balanced batches.
  torch_compat::optional<std::vector<size_t>> NextMicroBatch();

  std::shared_ptr<client::CoordinatorClient> client_;
  client::Membership membership_;
  client::StreamOptions stream_options_;
  std::shared_ptr<ShardSamplerProgress> progress_;
  std::unique_ptr<client::ShardStream> stream_;
  std::vector<uint64_t> buffer_;
};

}  // namespace shard::torch_adapter

#endif  // SHARD_CLIENT_TORCH_SHARD_SAMPLER_H_
