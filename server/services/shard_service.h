// Reading a rank's shard over the coordinator's core: streamed
// (StreamShard, opened here as a ShardCursor) or a page at a time
// (PreviewShard). The request is checked against the job's formed world
// (a stream) or its spec (a preview) under the core's lock, which claims
// the epoch order in the same look at the state; the order is delivered
// outside the lock through EpochOrderCache::WhenReady as soon as it is
// allocated, so no thread waits for it, and waiting for order memory ends
// after max_wait. A stream reads the order while it is being shuffled
// (ShardCursor); a preview answers once the entries of its page are final.
//
// A new job with balanced batches has the first window of its epoch 0
// arranged ahead, on this service's own thread, for the world its spec
// names (ArrangeFirstWindowAhead), so that its first stream finds it.
//
// Also keeps the indices streams delivered per source of each mixture job
// (source_counters(), for the metrics).
//
// Thread-safe; holds the core, which must outlive it, and the counters.
#ifndef SERVER_SERVICES_SHARD_SERVICE_H_
#define SERVER_SERVICES_SHARD_SERVICE_H_

#include <cstdint>
#include <memory>
#include <optional>
#include <string>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "common/plan/batches/cost_table.h"
#include "common/plan/batches/epoch_batches.h"
#include "common/plan/layouts/shard_layout.h"
#include "server/core/coordinator_core.h"
#include "server/plans/balance_tally.h"
#include "server/plans/epoch_order_cache.h"
#include "server/plans/job_table.h"
#include "server/plans/shard_cursor.h"
#include "server/plans/shared_window_table.h"
#include "server/plans/source_counter_table.h"
#include "server/runtime/work_pool.h"
#include "server/waiting/reply.h"
#include "shard/v1/shard.pb.h"

namespace shard::server {

// The incarnations of the jobs `core` holds (SourceCounterTable's live
// set).
absl::flat_hash_set<uint64_t> LiveIncarnations(const LockedCore& core);

class ShardService {
 public:
  explicit ShardService(CoordinatorCore* core) : core_(core) {}

  // Validates a stream request; `reply` gets a cursor over the rank's
  // shard once the epoch order is allocated (on this thread if it is, or
  // small enough to compute here; else on the thread that allocated it).
  // Never waits behind another job's order computation.
  void StartOpenShard(const shard::v1::StreamShardRequest& request,
                      Reply<ShardCursor> reply);
  // A page of a rank's shard as the job's spec plans it: `reply` runs
  // once the page's entries of the epoch order are final. Waiting for order
  // memory ends at `call_deadline` or after max_wait, whichever comes first,
  // with RESOURCE_EXHAUSTED naming the budget.
  void StartPreviewShard(const shard::v1::PreviewShardRequest& request,
                         absl::Time call_deadline,
                         Reply<shard::v1::PreviewShardResponse> reply);

  // For a job just created with balanced batches (called under the
  // core's lock, by its JobCreatedObserver): claims epoch 0's order now;
  // then, on this service's thread, touches its costs' pages
  // (CostTable::TouchPages) and arranges the first window of the world of
  // the spec's world_size (the first world's size) once its entries are
  // final, keeping it until that world's first stream takes it. Other
  // jobs: nothing.
  void ArrangeFirstWindowAhead(LockedCore& core, const JobState& job);

  // Indices delivered per source of each mixture job that has streamed.
  SourceCounterTable& source_counters() { return source_counters_; }
  // The windows of balanced-batch worlds being streamed, and the balance
  // of each job's steps.
  SharedWindowTable& shared_windows() { return shared_windows_; }
  JobTable<BalanceTally>& balance_tallies() { return balance_tallies_; }

 private:
 public:
  // Where a balanced-batch job's stream starts: the epoch's worlds (the
  // stream serves the last one's part) and the job's incarnation.
  struct BatchedStart {
    uint64_t incarnation;
    std::shared_ptr<BalanceTally> balance;  // the job's
    plan::EpochWorlds worlds;
    uint64_t seed;
    uint64_t epoch;
    uint64_t start_position;
    std::string costs_sha256;
  };

 private:
  // A validated stream request with its claimed epoch order.
  struct PreparedShard {
    EpochOrderCache::Claim claim;
    plan::ShardLayout layout;
    uint32_t rank;
    uint64_t offset;                               // In the rank's shard.
    uint32_t chunk;                                // Indices per chunk.
    std::shared_ptr<SourceCounters> by_source;     // null: not a mixture
    std::optional<BatchedStart> batched;           // balanced batches only
    std::shared_ptr<const plan::CostTable> costs;  // with `batched`

    // `windows`: the service's, for a balanced-batch stream.
    absl::StatusOr<ShardCursor> Open(
        absl::StatusOr<EpochOrderCache::Order> order,
        SharedWindowTable& windows) const;
  };
  // Opens the cursor once the claimed order is ready.
  void OpenWhenOrdered(PreparedShard prepared, Reply<ShardCursor> reply);
  // A validated preview request with its claimed epoch order.
  struct PreparedPage {
    EpochOrderCache::Claim claim;
    plan::ShardLayout layout;
    uint64_t shard_size;
  };
  // The rank's indices offset .. offset + count - 1, read from `order`
  // (whose entries they read are final).
  static shard::v1::PreviewShardResponse PreviewPage(
      const plan::EpochOrder& order, const plan::ShardLayout& layout,
      uint32_t rank, uint64_t offset, uint64_t count);
  // Validates a stream request against the state and claims its order.
  absl::StatusOr<PreparedShard> PrepareShard(
      const shard::v1::StreamShardRequest& request);
  // Validates a preview request against the job's spec and claims its
  // order.
  absl::StatusOr<PreparedPage> PreparePage(
      const shard::v1::PreviewShardRequest& request);

  CoordinatorCore* const core_;
  SourceCounterTable source_counters_;
  SharedWindowTable shared_windows_;
  JobTable<BalanceTally> balance_tallies_;
  // Starts ArrangeFirstWindowAhead's work off the core's lock. Declared
  // last: destroyed first, running what is queued while the rest lives.
  WorkPool ahead_{1};
};

}  // namespace shard::server

#endif  // SERVER_SERVICES_SHARD_SERVICE_H_
