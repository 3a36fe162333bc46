// How far the build of a stored epoch order has come, and who waits for it.
//
// torch's randperm is a forward Fisher-Yates: step i swaps entry i with a
// later one, so after step i entries 0..i never change again. The builder
// reports each advance of that final prefix (Advance); a reader may read
// entry p once Final() > p, while the build goes on behind it. A reader that
// needs an entry not final yet registers a callback (WhenFinal) instead of
// waiting on a thread: the builder's thread runs it as soon as it passes
// that entry, outside every lock, or with the build's error if the build is
// abandoned (Abandon). The final prefix is a sync::Watermark. Thread-safe.
#ifndef COMMON_PLAN_SHUFFLES_ORDER_PROGRESS_H_
#define COMMON_PLAN_SHUFFLES_ORDER_PROGRESS_H_

#include <cstdint>
#include <utility>

#include "absl/status/status.h"
#include "absl/time/time.h"
#include "common/sync/watermark.h"

namespace shard::plan {

class OrderProgress {
 public:
  using Callback = sync::Watermark::Callback;

  // An order of `size` entries, none final yet.
  explicit OrderProgress(uint64_t size) : size_(size) {}
  OrderProgress(const OrderProgress&) = delete;
  OrderProgress& operator=(const OrderProgress&) = delete;

  uint64_t size() const { return size_; }
  // Entries [0, Final()) are final. Reads of them after this call see their
  // final values (acquire).
  uint64_t Final() const { return final_.reached(); }
  bool Done() const { return Final() == size_; }

  // The builder: entries [0, final) are written for good (release). Runs,
  // on this thread, the callbacks waiting for entries below `final`.
  void Advance(uint64_t final) { final_.Advance(final); }
  // The builder gave up (`error`, not OK): every waiting callback and every
  // later WhenFinal for an entry not final gets it.
  void Abandon(absl::Status error) { final_.Break(std::move(error)); }

  // Runs `done` with OK once entry `entry` (< size()) is final: at once on
  // this thread if it is, else on the builder's thread when it gets there;
  // with the build's error if it was abandoned first. `done` must be cheap.
  void WhenFinal(uint64_t entry, Callback done) {
    final_.WhenReached(entry + 1, std::move(done));
  }
  // Blocks until entry `entry` is final: OK, the build's error, or
  // DEADLINE_EXCEEDED at `deadline`.
  absl::Status AwaitFinal(uint64_t entry, absl::Time deadline);

 private:
  const uint64_t size_;
  sync::Watermark final_;  // The length of the final prefix.
};

}  // namespace shard::plan

#endif  // COMMON_PLAN_SHUFFLES_ORDER_PROGRESS_H_
