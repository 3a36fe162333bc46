#include "server/shard_cursor.h"

#include <algorithm>
#include <utility>

#include "server/plan/rank_indices.h"

namespace shard::server {

ShardCursor::ShardCursor(std::shared_ptr<const plan::EpochOrder> order,
                         plan::ShardLayout layout, uint32_t rank,
                         uint64_t begin_offset, uint32_t chunk_indices)
    : order_(std::move(order)),
      layout_(layout),
      rank_(rank),
      next_offset_(begin_offset),
      shard_size_(layout.RankShardSize(rank)),
      chunk_indices_(chunk_indices) {}

bool ShardCursor::Next(shard::v1::IndexChunk* chunk) {
  if (next_offset_ >= shard_size_ && sent_any_) return false;
  sent_any_ = true;
  const uint64_t count =
      std::min<uint64_t>(chunk_indices_, shard_size_ - next_offset_);
  chunk->Clear();
  chunk->set_rank_offset(next_offset_);
  chunk->set_rank_shard_size(shard_size_);
  chunk->mutable_indices()->Resize(static_cast<int>(count), 0);
  plan::CopyRankIndices(
      *order_, layout_, rank_, next_offset_,
      absl::MakeSpan(chunk->mutable_indices()->mutable_data(), count));
  next_offset_ += count;
  return true;
}

}  // namespace shard::server
