// Walks one rank's micro-batches of one epoch of a balanced-batch job
// (JobSpec.batches), window by window, from a step's end: arranges each
// window of the epoch's last world (epoch_worlds.h) from the epoch order
// and the job's costs (epoch_batches.h) once its order entries are final,
// then hands out the rank's micro-batch of each step, cut into chunks of
// at most a chunk's indices (a micro-batch may span chunks). The windows
// come through the world's SharedWindows, so the world's ranks arrange
// each window once between them; after a resize each stream first
// arranges the window each later world began in, once the whole order is
// final. Not thread-safe: one walk per stream (ShardCursor).
#ifndef SERVER_PLANS_BATCH_WALK_H_
#define SERVER_PLANS_BATCH_WALK_H_

#include <cstdint>
#include <memory>
#include <optional>

#include "absl/status/status.h"
#include "common/plan/batches/cost_table.h"
#include "common/plan/batches/epoch_batches.h"
#include "common/plan/batches/epoch_worlds.h"
#include "common/plan/orders/epoch_order.h"
#include "server/plans/shared_windows.h"
#include "shard/v1/shard.pb.h"

namespace shard::server {

// The last entry of `order` that window `window` of `batches` reads (its
// padding reads the order's start): it must be final before the window is
// arranged.
uint64_t LastOrderEntryOf(const plan::EpochBatches& batches, uint64_t window,
                          const plan::EpochOrder& order);

class BatchWalk {
 public:
  // Requires rank < worlds.last().world_size, worlds.last().base <=
  // start_position <= worlds.total(), costs for every sample the order
  // holds, and `windows` made for this epoch and `worlds` (shared with
  // the world's other ranks). Whether the start is a step's end is known
  // once its window is arranged (Next).
  BatchWalk(std::shared_ptr<const plan::CostTable> costs,
            plan::EpochWorlds worlds, std::shared_ptr<SharedWindows> windows,
            uint32_t rank, uint64_t seed, uint64_t epoch,
            uint64_t start_position);

  // The order entry that must be final before Next() may be called (the
  // last one the next window to arrange reads), or nullopt.
  std::optional<uint64_t> Awaits(const plan::EpochOrder& order) const;

  // Fills `chunk` with up to `max_indices` of the rank's next indices
  // (index_width bytes each) and the ends of the micro-batches that end
  // in it; rank offsets count from the walk's start. The first chunk ends
  // with the first window (so a stream starts after one window's
  // arrangement). Returns false once
  // the epoch is over, or when the start is not a step's end (status()).
  // The first call always gives a chunk (possibly empty).
  bool Next(const plan::EpochOrder& order, uint32_t max_indices,
            uint32_t index_width, shard::v1::IndexChunk* chunk);

  // INVALID_ARGUMENT when the start was not a step's end; else OK.
  const absl::Status& status() const { return status_; }

 private:
  // The last world's part, once known: window_ is then the start's.
  void SetBatches(plan::EpochBatches batches);
  // Whether window `window` of the last world may be arranged.
  bool WindowReady(const plan::EpochOrder& order, uint64_t window) const;
  // Takes window_ arranged (its entries are final).
  void Arrange(const plan::EpochOrder& order);
  // Arranges the start's window and finds its step; false if none.
  bool Start(const plan::EpochOrder& order);
  // Whether the walk is in window_ with a step left.
  bool InStep() const {
    return arranged_ != nullptr && step_ < arranged_->steps();
  }

  std::shared_ptr<const plan::CostTable> costs_;
  plan::EpochWorlds worlds_;
  std::shared_ptr<SharedWindows> windows_;
  std::optional<plan::EpochBatches> batches_;  // resolved from worlds_
  uint32_t rank_;
  uint64_t seed_;
  uint64_t epoch_;
  uint64_t start_position_;
  uint64_t window_;
  SharedWindows::Window arranged_;  // window_'s, once taken
  uint64_t step_ = 0;
  uint64_t sent_in_batch_ = 0;  // of the current micro-batch
  uint64_t sent_ = 0;           // the rank offset
  bool started_ = false;
  absl::Status status_;
};

}  // namespace shard::server

#endif  // SERVER_PLANS_BATCH_WALK_H_
