// Walks one rank's shard of one epoch in chunks.
//
// Owns a reference to the shared epoch order, so the order outlives the
// cache entry while a stream reads it. The order may still be being
// shuffled (EpochOrder::FinalPrefix): the cursor then only reads entries
// already final. Its first chunk goes out as soon as one index is
// readable, so a stream starts within moments of its order's build, and
// holds at most 32 KiB of indices, so it fits HTTP/2's initial window of a
// new stream and never waits for the client's window update; every
// later chunk waits until it is whole (Awaits), so a stream that follows
// the shuffle sends as many chunks as one over a finished order. Not
// thread-safe: one cursor per stream. For a mixture it also counts the
// indices each chunk holds per source, added to the job's SourceCounters
// once the chunk is delivered (Delivered()). For a balanced-batch job it
// walks the rank's micro-batches instead (BatchWalk).
#ifndef SERVER_PLANS_SHARD_CURSOR_H_
#define SERVER_PLANS_SHARD_CURSOR_H_

#include <cstdint>
#include <memory>
#include <optional>
#include <vector>

#include "absl/status/status.h"
#include "common/plan/layouts/shard_layout.h"
#include "common/plan/orders/epoch_order.h"
#include "server/plans/batch_walk.h"
#include "server/plans/source_counters.h"
#include "shard/v1/shard.pb.h"

namespace shard::server {

class ShardCursor {
 public:
  // Requires rank < layout.world_size(), begin_offset <=
  // layout.RankShardSize(rank) and chunk_indices > 0. `by_source`: the
  // job's counters when it is a mixture, else null.
  ShardCursor(std::shared_ptr<const plan::EpochOrder> order,
              plan::ShardLayout layout, uint32_t rank, uint64_t begin_offset,
              uint32_t chunk_indices,
              std::shared_ptr<SourceCounters> by_source = nullptr);
  // A balanced-batch job's cursor: `walk` hands out the rank's
  // micro-batches; `layout` gives the epoch's length.
  ShardCursor(std::shared_ptr<const plan::EpochOrder> order,
              plan::ShardLayout layout, BatchWalk walk, uint32_t chunk_indices);

  // Replaces *chunk with the next chunk (packed fixed-width indices, see
  // proto/index_chunk_codec.h; reusing the chunk's buffers) and returns
  // true, or returns false once the shard is exhausted. The first call always
  // returns a chunk (empty when nothing is left) so the reader learns the shard
  // size.
  // While the order is being shuffled the chunk holds only the indices
  // readable now (possibly none): call it once Awaits() is nullopt.
  bool Next(shard::v1::IndexChunk* chunk);
  // The order entry that must be final before Next() may be called (wait
  // for it with order().progress()->WhenFinal), or nullopt when it may be
  // called now.
  std::optional<uint64_t> Awaits() const;

  // Why the last Next() returned false early: a balanced-batch stream whose
  // start is not a step's end (INVALID_ARGUMENT); OK otherwise.
  absl::Status status() const {
    return walk_.has_value() ? walk_->status() : absl::OkStatus();
  }

  // The chunk of the last Next() reached the client: counts its indices
  // by source (a mixture; else nothing).
  void Delivered();

  const plan::EpochOrder& order() const { return *order_; }

  uint64_t rank_shard_size() const { return shard_size_; }

 private:
  // The most indices the next chunk may hold.
  uint32_t ChunkLimit() const;

  std::shared_ptr<const plan::EpochOrder> order_;
  plan::ShardLayout layout_;
  uint32_t rank_;
  uint64_t next_offset_;
  uint64_t shard_size_;
  uint32_t chunk_indices_;
  uint32_t index_width_;
  bool sent_any_ = false;
  std::shared_ptr<SourceCounters> by_source_;
  std::vector<uint64_t> chunk_by_source_;  // the last chunk's tally
  std::optional<BatchWalk> walk_;          // balanced batches only
};

}  // namespace shard::server

#endif  // SERVER_PLANS_SHARD_CURSOR_H_
