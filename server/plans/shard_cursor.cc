#include "server/plans/shard_cursor.h"

#include <algorithm>
#include <iterator>
#include <string>
#include <utility>

#include "common/plan/layouts/rank_indices.h"
#include "proto/index_chunk_codec.h"

namespace shard::server {
namespace {

// The most a stream's first chunk holds. HTTP/2 gives a new stream a
// window of 65,535 bytes: a first message larger than that waits for the
// client's WINDOW_UPDATE before its end goes out, which a client sends
// late at times (about 20 ms, now and then, measured with the Python
// client and chunks of 16,384 4-byte indices). Later chunks stream behind
// it.
constexpr uint64_t kFirstChunkBytes = 32 << 10;

}  // namespace

ShardCursor::ShardCursor(std::shared_ptr<const plan::EpochOrder> order,
                         plan::ShardLayout layout, uint32_t rank,
                         uint64_t begin_offset, uint32_t chunk_indices,
                         std::shared_ptr<SourceCounters> by_source)
    : order_(std::move(order)),
      layout_(layout),
      rank_(rank),
      next_offset_(begin_offset),
      shard_size_(layout.RankShardSize(rank)),
      chunk_indices_(chunk_indices),
      index_width_(wire::IndexWidthFor(order_->IndexBound())),
      by_source_(std::move(by_source)) {
  if (by_source_ != nullptr) {
    chunk_by_source_.assign(by_source_->tally_size(), 0);
  }
}

ShardCursor::ShardCursor(std::shared_ptr<const plan::EpochOrder> order,
                         plan::ShardLayout layout, BatchWalk walk,
                         uint32_t chunk_indices)
    : ShardCursor(std::move(order), layout, 0, 0, chunk_indices) {
  walk_.emplace(std::move(walk));
}

uint32_t ShardCursor::ChunkLimit() const {
  if (sent_any_) return chunk_indices_;
  return static_cast<uint32_t>(
      std::min<uint64_t>(chunk_indices_, kFirstChunkBytes / index_width_));
}

std::optional<uint64_t> ShardCursor::Awaits() const {
  if (walk_.has_value()) return walk_->Awaits(*order_);
  const uint64_t left = shard_size_ - next_offset_;
  // The whole next chunk, or (for the first) its first index.
  const uint64_t wanted =
      std::min<uint64_t>(sent_any_ ? chunk_indices_ : 1, left);
  const uint64_t final_prefix = order_->FinalPrefix();
  if (plan::IndicesReadable(layout_, rank_, next_offset_, final_prefix) >=
      wanted) {
    return std::nullopt;
  }
  return plan::EntriesNeeded(layout_, rank_, next_offset_, wanted) - 1;
}

bool ShardCursor::Next(shard::v1::IndexChunk* chunk) {
  const uint32_t limit = ChunkLimit();
  if (walk_.has_value()) {
    sent_any_ = true;
    return walk_->Next(*order_, limit, index_width_, chunk);
  }
  if (next_offset_ >= shard_size_ && sent_any_) return false;
  sent_any_ = true;
  const uint64_t count = std::min<uint64_t>(
      limit, plan::IndicesReadable(layout_, rank_, next_offset_,
                                   order_->FinalPrefix()));
  chunk->set_rank_offset(next_offset_);
  chunk->set_rank_shard_size(shard_size_);
  chunk->set_epoch_positions(layout_.total());
  // Gathered in small pieces, so a stream holds one packed chunk, not a
  // 64-bit copy of it as well (this matters with a thousand streams).
  char* packed = wire::ResizePackedIndices(count, index_width_, chunk);
  uint64_t piece[1024];
  std::fill(chunk_by_source_.begin(), chunk_by_source_.end(), 0);
  for (uint64_t done = 0; done < count;) {
    const uint64_t n = std::min<uint64_t>(std::size(piece), count - done);
    plan::CopyRankIndices(*order_, layout_, rank_, next_offset_ + done,
                          absl::MakeSpan(piece, n));
    if (by_source_ != nullptr) {
      by_source_->Tally(absl::MakeConstSpan(piece, n), chunk_by_source_);
    }
    wire::WriteIndices(absl::MakeConstSpan(piece, n), index_width_,
                       packed + done * index_width_);
    done += n;
  }
  next_offset_ += count;
  return true;
}

void ShardCursor::Delivered() {
  if (by_source_ != nullptr) by_source_->Add(chunk_by_source_);
}

}  // namespace shard::server
