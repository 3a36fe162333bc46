// QueueHandover on a real gRPC completion queue: events sent before the
// queue's thread takes them run from one queue event, in order, once each;
// the handover arms again after a batch ran; events sent from many threads
// all run once, on the queue's thread.
#include "server/rpc/queue_handover.h"

#include <atomic>
#include <memory>
#include <thread>
#include <vector>

#include "absl/time/clock.h"
#include "gtest/gtest.h"

namespace shard::server {
namespace {

// Records the order it ran in (into a shared counter) and on which thread.
class RecordingEvent final : public QueueEvent {
 public:
  explicit RecordingEvent(std::atomic<int>* clock) : clock_(clock) {}
  void Happened(bool ok) override {
    ok_ = ok;
    order_ = clock_->fetch_add(1);
    thread_ = std::this_thread::get_id();
    runs_.fetch_add(1);
  }
  int order() const { return order_; }
  int runs() const { return runs_.load(); }
  bool ok() const { return ok_; }
  std::thread::id thread() const { return thread_; }

 private:
  std::atomic<int>* const clock_;
  int order_ = -1;
  bool ok_ = false;
  std::thread::id thread_;
  std::atomic<int> runs_{0};
};

// A started server with one completion queue of its own (no ports: only
// the queue is used).
class QueueHandoverTest : public ::testing::Test {
 protected:
  void SetUp() override {
    grpc::ServerBuilder builder;
    queue_ = builder.AddCompletionQueue();
    server_ = builder.BuildAndStart();
    ASSERT_NE(server_, nullptr);
    handover_ = std::make_unique<QueueHandover>(queue_.get());
  }
  void TearDown() override { StopQueue(); }
  // Shuts the queue down and drains it (on its thread, if it has one).
  // Idempotent.
  void StopQueue() {
    server_->Shutdown();
    queue_->Shutdown();
    if (queue_thread_.joinable()) {
      queue_thread_.join();
      return;
    }
    void* tag = nullptr;
    bool ok = false;
    while (queue_->Next(&tag, &ok)) {
    }
  }
  // The next queue event if one is queued now (a handover's alarm is due
  // in the past: queued before Send returns), else null.
  QueueEvent* Queued() {
    void* tag = nullptr;
    bool ok = false;
    const auto got =
        queue_->AsyncNext(&tag, &ok, gpr_inf_past(GPR_CLOCK_REALTIME));
    return got == grpc::CompletionQueue::GOT_EVENT
               ? static_cast<QueueEvent*>(tag)
               : nullptr;
  }
  // Runs the queue's events on a thread of its own until TearDown.
  void RunQueueThread() {
    queue_thread_ = std::thread([this] {
      void* tag = nullptr;
      bool ok = false;
      while (queue_->Next(&tag, &ok)) {
        static_cast<QueueEvent*>(tag)->Happened(ok);
      }
    });
  }

  std::unique_ptr<grpc::ServerCompletionQueue> queue_;
  std::unique_ptr<grpc::Server> server_;
  std::unique_ptr<QueueHandover> handover_;
  std::atomic<int> clock_{0};
  std::thread queue_thread_;
};

std::vector<std::unique_ptr<RecordingEvent>> Events(int n,
                                                    std::atomic<int>* clock) {
  std::vector<std::unique_ptr<RecordingEvent>> events;
  for (int i = 0; i < n; ++i) {
    events.push_back(std::make_unique<RecordingEvent>(clock));
  }
  return events;
}

TEST_F(QueueHandoverTest, EventsSentBeforeTheQueueRunsRunFromOneQueueEvent) {
  const auto events = Events(1000, &clock_);
  for (const auto& event : events) handover_->Send(event.get());
  QueueEvent* queued = Queued();
  ASSERT_EQ(queued, handover_.get());
  EXPECT_EQ(Queued(), nullptr) << "one queue event for the whole batch";
  EXPECT_EQ(events[0]->runs(), 0) << "nothing runs before the queue's turn";
  queued->Happened(true);
  for (int i = 0; i < 1000; ++i) {
    EXPECT_EQ(events[i]->runs(), 1);
    EXPECT_EQ(events[i]->order(), i);
    EXPECT_TRUE(events[i]->ok());
  }
}

TEST_F(QueueHandoverTest, ASendAfterABatchRanQueuesTheHandoverAgain) {
  const auto events = Events(2, &clock_);
  handover_->Send(events[0].get());
  ASSERT_EQ(Queued(), handover_.get());
  handover_->Happened(true);
  EXPECT_EQ(Queued(), nullptr);
  handover_->Send(events[1].get());
  ASSERT_EQ(Queued(), handover_.get());
  handover_->Happened(true);
  EXPECT_EQ(events[0]->runs(), 1);
  EXPECT_EQ(events[1]->runs(), 1);
}

TEST_F(QueueHandoverTest, EventsSentFromManyThreadsRunOnceOnTheQueueThread) {
  constexpr int kSenders = 8;
  constexpr int kEach = 2000;
  const auto events = Events(kSenders * kEach, &clock_);
  RunQueueThread();
  const std::thread::id queue_thread = queue_thread_.get_id();
  std::vector<std::thread> senders;
  for (int s = 0; s < kSenders; ++s) {
    senders.emplace_back([&, s] {
      for (int i = 0; i < kEach; ++i) {
        handover_->Send(events[s * kEach + i].get());
      }
    });
  }
  for (std::thread& sender : senders) sender.join();
  // A liveness bound, not a timing check.
  const absl::Time give_up = absl::Now() + absl::Minutes(1);
  while (clock_.load() < kSenders * kEach && absl::Now() < give_up) {
    absl::SleepFor(absl::Milliseconds(1));
  }
  StopQueue();  // Joined: every write of the queue's thread is seen here.
  for (int s = 0; s < kSenders; ++s) {
    for (int i = 0; i < kEach; ++i) {
      const RecordingEvent& event = *events[s * kEach + i];
      ASSERT_EQ(event.runs(), 1);
      EXPECT_EQ(event.thread(), queue_thread);
      if (i > 0) {
        EXPECT_GT(event.order(), events[s * kEach + i - 1]->order());
      }
    }
  }
}

}  // namespace
}  // namespace shard::server
