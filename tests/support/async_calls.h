// Many unary calls in flight at once through gRPC's async client API on
// ClientQueues (no client thread per call, calls spread over several
// completion queues), for tests and benchmarks of waiting calls:
// AsyncJoins, the rendezvous benchmark's StoreGets, the heartbeat load.
// Thread-safe. The destructor cancels the calls still running and waits for
// all of them to end; whatever the calls were started on (stubs) must
// outlive this object.
#ifndef TESTS_SUPPORT_ASYNC_CALLS_H_
#define TESTS_SUPPORT_ASYNC_CALLS_H_

#include <cstddef>
#include <functional>
#include <memory>
#include <utility>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "grpcpp/grpcpp.h"
#include "tests/support/client_queues.h"

namespace shard::testing {

template <typename Request, typename Response>
class AsyncCalls {
 public:
  // Prepares call i with `request` on `queue` (e.g. a stub's
  // PrepareAsyncMethod); AsyncCalls starts it.
  using Prepare =
      std::function<std::unique_ptr<grpc::ClientAsyncResponseReader<Response>>(
          int i, grpc::ClientContext* context, const Request& request,
          grpc::CompletionQueue* queue)>;

  // Starts `requests.size()` calls, call i with requests[i], on `queues`
  // (shared, e.g. by successive batches of calls; null: queues of its own).
  AsyncCalls(std::vector<Request> requests, const Prepare& prepare,
             std::shared_ptr<ClientQueues> queues = nullptr)
      : queues_(queues != nullptr ? std::move(queues)
                                  : std::make_shared<ClientQueues>()),
        calls_(requests.size()) {
    for (size_t i = 0; i < calls_.size(); ++i) {
      Call& call = calls_[i];
      call.owner = this;
      call.request = std::move(requests[i]);
      call.reader = prepare(static_cast<int>(i), &call.context, call.request,
                            queues_->Next());
      call.reader->StartCall();
      call.reader->Finish(&call.response, &call.status, &call);
    }
  }
  ~AsyncCalls() {
    CancelAll();
    AwaitDone();
  }
  AsyncCalls(const AsyncCalls&) = delete;
  AsyncCalls& operator=(const AsyncCalls&) = delete;

  void CancelAll() {
    for (Call& call : calls_) call.context.TryCancel();
  }
  // Blocks until every call ended.
  void AwaitDone() ABSL_LOCKS_EXCLUDED(mu_) {
    absl::MutexLock lock(&mu_);
    while (finished_ < calls_.size()) all_done_.Wait(&mu_);
  }
  // Calls started.
  size_t size() const { return calls_.size(); }
  // Calls ended so far, and those that ended OK.
  size_t finished() ABSL_LOCKS_EXCLUDED(mu_) {
    absl::MutexLock lock(&mu_);
    return finished_;
  }
  size_t ok() ABSL_LOCKS_EXCLUDED(mu_) {
    absl::MutexLock lock(&mu_);
    return ok_;
  }
  // Call i's status, response and end once it ended.
  grpc::Status status(int i) ABSL_LOCKS_EXCLUDED(mu_) {
    absl::MutexLock lock(&mu_);
    return calls_[i].status;
  }
  const Response& response(int i) const { return calls_[i].response; }
  absl::Time ended(int i) ABSL_LOCKS_EXCLUDED(mu_) {
    absl::MutexLock lock(&mu_);
    return calls_[i].ended;
  }

 private:
  struct Call final : ClientQueueEvent {
    void Happened(bool) override { owner->Ended(*this); }

    AsyncCalls* owner = nullptr;
    grpc::ClientContext context;
    Request request;
    Response response;
    grpc::Status status;
    absl::Time ended;
    std::unique_ptr<grpc::ClientAsyncResponseReader<Response>> reader;
  };

  void Ended(Call& call) ABSL_LOCKS_EXCLUDED(mu_) {
    absl::MutexLock lock(&mu_);
    if (call.status.ok()) ++ok_;
    call.ended = absl::Now();
    if (++finished_ == calls_.size()) all_done_.SignalAll();
  }

  const std::shared_ptr<ClientQueues> queues_;
  std::vector<Call> calls_;
  absl::Mutex mu_;
  absl::CondVar all_done_;
  size_t finished_ ABSL_GUARDED_BY(mu_) = 0;
  size_t ok_ ABSL_GUARDED_BY(mu_) = 0;
};

}  // namespace shard::testing

#endif  // TESTS_SUPPORT_ASYNC_CALLS_H_
