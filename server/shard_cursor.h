// Walks one rank's shard of one epoch in chunks.
//
// Owns a reference to the shared epoch order, so the order outlives the
// cache entry while a stream reads it. Not thread-safe: one cursor per
// stream.
#ifndef SERVER_SHARD_CURSOR_H_
#define SERVER_SHARD_CURSOR_H_

#include <cstdint>
#include <memory>

#include "common/plan/epoch_order.h"
#include "common/plan/shard_layout.h"
#include "shard/v1/shard.pb.h"

namespace shard::server {

class ShardCursor {
 public:
  // Requires rank < layout.world_size(), begin_offset <=
  // layout.RankShardSize(rank) and chunk_indices > 0.
  ShardCursor(std::shared_ptr<const plan::EpochOrder> order,
              plan::ShardLayout layout, uint32_t rank, uint64_t begin_offset,
              uint32_t chunk_indices);

  // Replaces *chunk with the next chunk (packed fixed-width indices, see
  // proto/index_chunk_codec.h; reusing the chunk's buffers) and returns
  // true, or returns false once the shard is exhausted. The first call always
  // returns a chunk (empty when nothing is left) so the reader learns the shard
  // size.
  bool Next(shard::v1::IndexChunk* chunk);

  uint64_t rank_shard_size() const { return shard_size_; }

 private:
  std::shared_ptr<const plan::EpochOrder> order_;
  plan::ShardLayout layout_;
  uint32_t rank_;
  uint64_t next_offset_;
  uint64_t shard_size_;
  uint32_t chunk_indices_;
  uint32_t index_width_;
  bool sent_any_ = false;
};

}  // namespace shard::server

#endif  // SERVER_SHARD_CURSOR_H_
