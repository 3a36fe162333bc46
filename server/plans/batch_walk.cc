#include "server/plans/batch_walk.h"

#include <algorithm>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "proto/index_chunk_codec.h"

namespace shard::server {

uint64_t LastOrderEntryOf(const plan::EpochBatches& batches, uint64_t window,
                          const plan::EpochOrder& order) {
  return std::min(batches.OrderEndOf(window), order.size()) - 1;
}

BatchWalk::BatchWalk(std::shared_ptr<const plan::CostTable> costs,
                     plan::EpochWorlds worlds,
                     std::shared_ptr<SharedWindows> windows, uint32_t rank,
                     uint64_t seed, uint64_t epoch, uint64_t start_position)
    : costs_(std::move(costs)),
      worlds_(std::move(worlds)),
      windows_(std::move(windows)),
      rank_(rank),
      seed_(seed),
      epoch_(epoch),
      start_position_(start_position),
      window_(0) {
  // A single world's part is known without arranging anything.
  if (!worlds_.ArrangesEarlierWorlds()) {
    SetBatches(worlds_.Resolve(/*costs_of=*/nullptr, seed_, epoch_));
  }
}

void BatchWalk::SetBatches(plan::EpochBatches batches) {
  window_ = start_position_ < batches.total()
                ? batches.WindowOf(start_position_)
                : batches.windows();
  batches_.emplace(std::move(batches));
}

bool BatchWalk::WindowReady(const plan::EpochOrder& order,
                            uint64_t window) const {
  return order.FinalPrefix() > LastOrderEntryOf(*batches_, window, order);
}

std::optional<uint64_t> BatchWalk::Awaits(const plan::EpochOrder& order) const {
  if (!batches_.has_value()) {
    // The earlier worlds' windows may read any entry of the order.
    if (order.FinalPrefix() >= order.size()) return std::nullopt;
    return order.size() - 1;
  }
  if (InStep()) return std::nullopt;
  const uint64_t next = arranged_ != nullptr ? window_ + 1 : window_;
  if (next >= batches_->windows() || WindowReady(order, next)) {
    return std::nullopt;
  }
  return LastOrderEntryOf(*batches_, next, order);
}

void BatchWalk::Arrange(const plan::EpochOrder& order) {
  arranged_ = windows_->Take(window_, rank_, [&] {
    return batches_->Arrange(window_,
                             plan::EpochBatches::CostsInOrder(order, *costs_),
                             seed_, epoch_);
  });
  step_ = 0;
  sent_in_batch_ = 0;
}

bool BatchWalk::Start(const plan::EpochOrder& order) {
  if (!batches_.has_value()) {
    SetBatches(worlds_.Resolve(plan::EpochBatches::CostsInOrder(order, *costs_),
                               seed_, epoch_));
  }
  if (window_ >= batches_->windows()) return true;  // at the epoch's end
  Arrange(order);
  const uint64_t offset = start_position_ - batches_->WindowBegin(window_);
  while (step_ < arranged_->steps() && arranged_->StepBegin(step_) < offset) {
    ++step_;
  }
  if (step_ < arranged_->steps() && arranged_->StepBegin(step_) == offset) {
    return true;
  }
  status_ = absl::InvalidArgumentError(absl::StrCat(
      "start_position ", start_position_, " of epoch ", epoch_,
      " is not the end of a step of the job's balanced batches (the stream "
      "reports each step's end in IndexChunk.step_ends)"));
  return false;
}

bool BatchWalk::Next(const plan::EpochOrder& order, uint32_t max_indices,
                     uint32_t index_width, shard::v1::IndexChunk* chunk) {
  const bool first = !started_;
  if (first) {
    started_ = true;
    if (!Start(order)) return false;
  }
  std::vector<uint64_t> indices;
  chunk->clear_batch_ends();
  chunk->clear_step_ends();
  while (indices.size() < max_indices) {
    if (!InStep()) {
      // The first chunk goes out once its window is served: a stream
      // starts after one window's arrangement, not two.
      if (first && !indices.empty()) break;
      const uint64_t next = arranged_ != nullptr ? window_ + 1 : window_;
      if (next >= batches_->windows() || !WindowReady(order, next)) break;
      window_ = next;
      Arrange(order);
      continue;
    }
    const uint64_t begin = arranged_->BatchBegin(step_, rank_) + sent_in_batch_;
    const uint64_t end = arranged_->BatchEnd(step_, rank_);
    const uint64_t n =
        std::min<uint64_t>(end - begin, max_indices - indices.size());
    for (uint64_t i = begin; i < begin + n; ++i) {
      indices.push_back(order.At(arranged_->positions()[i] % order.size()));
    }
    sent_in_batch_ += n;
    if (begin + n == end) {
      chunk->add_batch_ends(sent_ + indices.size());
      chunk->add_step_ends(batches_->WindowBegin(window_) +
                           arranged_->StepBegin(step_ + 1));
      ++step_;
      sent_in_batch_ = 0;
    }
  }
  if (indices.empty() && !first) return false;
  chunk->set_rank_offset(sent_);
  chunk->set_rank_shard_size(0);
  chunk->set_epoch_positions(batches_->total());
  char* packed = wire::ResizePackedIndices(indices.size(), index_width, chunk);
  wire::WriteIndices(indices, index_width, packed);
  sent_ += indices.size();
  return true;
}

}  // namespace shard::server
