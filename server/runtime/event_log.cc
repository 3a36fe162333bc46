#include "server/runtime/event_log.h"

#include <cstdio>
#include <cstdlib>
#include <deque>
#include <string>
#include <thread>
#include <utility>

#include "absl/base/thread_annotations.h"
#include "absl/strings/str_cat.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"

namespace shard::server {
namespace {

std::string Stamped(absl::Time at, absl::string_view message) {
  return absl::StrCat(
      absl::FormatTime("%Y-%m-%dT%H:%M:%E3SZ", at, absl::UTCTimeZone()), " ",
      message, "\n");
}

// The queue and its writer thread; created on first use and never
// destroyed (lines may be logged during static destruction).
class EventWriter {
 public:
  static EventWriter& Get() {
    static EventWriter* const writer = [] {
      auto* created = new EventWriter();
      std::atexit([] { FlushEventLog(); });
      return created;
    }();
    return *writer;
  }

  void Queue(absl::Time at, absl::string_view message)
      ABSL_LOCKS_EXCLUDED(mu_) {
    absl::MutexLock lock(&mu_);
    if (queue_.size() >= kMaxQueuedEvents) {
      ++dropped_;
      return;
    }
    queue_.push_back({at, std::string(message)});
    ++queued_;
  }

  void Flush() ABSL_LOCKS_EXCLUDED(mu_) {
    absl::MutexLock lock(&mu_);
    const uint64_t target = queued_;
    while (written_ < target) written_cv_.Wait(&mu_);
  }

 private:
  EventWriter() {
    std::thread([this] { Run(); }).detach();
  }

  void Run() ABSL_LOCKS_EXCLUDED(mu_) {
    while (true) {
      std::deque<Event> lines;
      uint64_t dropped;
      {
        absl::MutexLock lock(&mu_);
        mu_.Await(absl::Condition(
            +[](std::deque<Event>* queue) { return !queue->empty(); },
            &queue_));
        lines.swap(queue_);
        dropped = std::exchange(dropped_, 0);
      }
      std::string out;
      if (dropped > 0) {
        out = Stamped(absl::Now(), absl::StrCat(dropped,
                                                " event lines dropped (stderr "
                                                "could not keep up)"));
      }
      // Formatted here, not in LogEvent: callers may hold their locks.
      for (const Event& event : lines) out += Stamped(event.at, event.message);
      std::fwrite(out.data(), 1, out.size(), stderr);
      std::fflush(stderr);
      absl::MutexLock lock(&mu_);
      written_ += lines.size();
      written_cv_.SignalAll();
    }
  }

  struct Event {
    absl::Time at;
    std::string message;
  };

  absl::Mutex mu_;
  std::deque<Event> queue_ ABSL_GUARDED_BY(mu_);
  uint64_t dropped_ ABSL_GUARDED_BY(mu_) = 0;
  uint64_t queued_ ABSL_GUARDED_BY(mu_) = 0;   // Accepted, ever.
  uint64_t written_ ABSL_GUARDED_BY(mu_) = 0;  // Of those, written.
  absl::CondVar written_cv_;
};

}  // namespace

void LogEvent(absl::string_view message) {
  EventWriter::Get().Queue(absl::Now(), message);
}

void FlushEventLog() { EventWriter::Get().Flush(); }

}  // namespace shard::server
