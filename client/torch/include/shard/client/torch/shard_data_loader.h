// libtorch's data loader over a ShardSampler, whose iteration reports each
// batch the training loop receives (ShardSamplerProgress::Consumed), so
// that the shortest loop is the correct one:
//
//   auto loader = shard::torch_adapter::MakeShardDataLoader(
//       dataset, ShardSampler(client, me), DataLoaderOptions().workers(2));
//   for (auto& batch : *loader) { /* train; commit loader->progress() */ }
//
// With workers(n > 0) libtorch assembles up to 2 * n batches ahead of the
// loop; positions (progress().Current()) still count exactly the samples
// of the batches the loop received, as shard.torch.DataLoader does in
// Python. A batch counts as received when the loop first dereferences the
// iterator that holds it. Its size is batch.size() for a batch with one
// (std::vector of examples, the trainer's batches), or the first dimension
// of an Example's data (a stacked batch).
//
// A pass left before its end (a peek at the first batch, a `break`) is
// forgotten, with workers too: the next begin() drops the batches the
// workers still had in flight and starts the epoch again from its restart
// point (see shard_sampler.h).
//
// libtorch's drop_last is refused (std::invalid_argument): the dropped
// batch would never be received, so the pass would never end; drop samples
// with the job's `drop` tail instead. So is enforce_ordering(false): the
// batches would arrive out of order, and a position counts a prefix of the
// shard, so a commit would skip the batches not yet arrived. Thread-safety:
// as libtorch's loader, one thread iterates.
#ifndef SHARD_CLIENT_TORCH_SHARD_DATA_LOADER_H_
#define SHARD_CLIENT_TORCH_SHARD_DATA_LOADER_H_

#include <cstddef>
#include <memory>
#include <stdexcept>
#include <type_traits>
#include <utility>

#include "shard/client/torch/shard_sampler.h"
#include "torch/data/dataloader.h"
#include "torch/data/example.h"
#include "torch/data/iterator.h"

namespace shard::torch_adapter {

namespace internal {

template <typename Batch, typename = void>
struct HasSize : std::false_type {};
template <typename Batch>
struct HasSize<Batch,
               std::void_t<decltype(std::declval<const Batch&>().size())>>
    : std::is_integral<decltype(std::declval<const Batch&>().size())> {};

// The samples a batch holds (see the file comment).
template <typename Batch>
size_t SamplesIn(const Batch& batch) {
  if constexpr (HasSize<Batch>::value) {
    return static_cast<size_t>(batch.size());
  } else {
    return static_cast<size_t>(batch.data.size(0));
  }
}

}  // namespace internal

// An input iterator over libtorch's that reports each batch to `progress`
// the first time the loop dereferences it.
template <typename Batch>
class ConsumedCountingIterator {
 public:
  using difference_type = std::ptrdiff_t;
  using value_type = Batch;
  using pointer = Batch*;
  using reference = Batch&;
  using iterator_category = std::input_iterator_tag;

  ConsumedCountingIterator(torch::data::Iterator<Batch> inner,
                           std::shared_ptr<ShardSamplerProgress> progress)
      : inner_(std::move(inner)), progress_(std::move(progress)) {}

  Batch& operator*() { return Received(); }
  Batch* operator->() { return &Received(); }
  ConsumedCountingIterator& operator++() {
    ++inner_;
    counted_ = false;
    return *this;
  }
  bool operator==(const ConsumedCountingIterator& other) const {
    return inner_ == other.inner_;
  }
  bool operator!=(const ConsumedCountingIterator& other) const {
    return !(*this == other);
  }

 private:
  Batch& Received() {
    Batch& batch = *inner_;
    if (!counted_) {
      progress_->Consumed(internal::SamplesIn(batch));
      counted_ = true;
    }
    return batch;
  }

  torch::data::Iterator<Batch> inner_;
  std::shared_ptr<ShardSamplerProgress> progress_;
  bool counted_ = false;
};

// libtorch's StatelessDataLoader that can drop the batches its workers
// still have in flight from a pass the loop left (libtorch's begin() refuses
// to start a pass while there are any).
template <typename Dataset>
class RestartableLoader
    : public torch::data::StatelessDataLoader<Dataset, ShardSampler> {
 public:
  using torch::data::StatelessDataLoader<Dataset,
                                         ShardSampler>::StatelessDataLoader;

  // Waits for the jobs the workers have in flight and discards their
  // batches; nothing to do without workers or after a finished pass.
  void DropBatchesInFlight() { this->shuttle_.drain(); }
};

// RestartableLoader over `Dataset` and a ShardSampler, with
// ConsumedCountingIterator as its iterator.
template <typename Dataset>
class ShardDataLoader {
 public:
  using Inner = RestartableLoader<Dataset>;
  using Batch = typename Inner::BatchType;
  using iterator = ConsumedCountingIterator<Batch>;

  // std::invalid_argument for options.drop_last(true) or
  // options.enforce_ordering(false) (see the file comment).
  ShardDataLoader(Dataset dataset, ShardSampler sampler,
                  torch::data::DataLoaderOptions options)
      : progress_(sampler.progress()),
        inner_(std::make_unique<Inner>(std::move(dataset), std::move(sampler),
                                       RefuseUncountable(options))) {}

  // Starts a pass (the sampler's reset(): see shard_sampler.h), after
  // dropping what a left pass still had in flight.
  iterator begin() {
    inner_->DropBatchesInFlight();
    return iterator(inner_->begin(), progress_);
  }
  iterator end() { return iterator(inner_->end(), progress_); }

  // The sampler's progress: what the loop received, in which epoch.
  ShardSamplerProgress& progress() { return *progress_; }
  std::shared_ptr<ShardSamplerProgress> shared_progress() const {
    return progress_;
  }

 private:
  // The options under which positions could not count what the loop
  // received are refused.
  static torch::data::DataLoaderOptions RefuseUncountable(
      torch::data::DataLoaderOptions options) {
    if (options.drop_last()) {
      throw std::invalid_argument(
          "ShardDataLoader: drop_last would drop a batch the loop never "
          "receives, so the pass would never end; use the job's drop tail "
          "instead");
    }
    if (!options.enforce_ordering()) {
      throw std::invalid_argument(
          "ShardDataLoader: enforce_ordering(false) delivers batches out of "
          "order, and a committed position must be a prefix of the shard "
          "(batches not yet arrived would be skipped); keep the default "
          "enforce_ordering(true)");
    }
    return options;
  }

  std::shared_ptr<ShardSamplerProgress> progress_;
  std::unique_ptr<Inner> inner_;
};

// make_data_loader for a ShardSampler: the loader the user guide's loop uses.
template <typename Dataset>
std::unique_ptr<ShardDataLoader<Dataset>> MakeShardDataLoader(
    Dataset dataset, ShardSampler sampler,
    torch::data::DataLoaderOptions options = {}) {
  return std::make_unique<ShardDataLoader<Dataset>>(
      std::move(dataset), std::move(sampler), std::move(options));
}

}  // namespace shard::torch_adapter

#endif  // SHARD_CLIENT_TORCH_SHARD_DATA_LOADER_H_
