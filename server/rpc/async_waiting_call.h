// One call of a method that waits (a join, a store get or wait), served on
// gRPC's async API from one of WaitingCallQueues' completion queues (see
// there why). The call is posted on its queue, and when a client's call
// arrives it posts the next one, then hands the request to the method's
// `serve` with a Reply whose Cancellation fires when the client goes away.
// The answer, given on any thread, is sent from the call's own queue
// thread, through the queue's QueueHandover: a key set wakes every
// rendezvous waiter on the setter's thread, and the answers of 100,000 of
// them then go out on all the queues' threads, in batches.
//
// Lifetime: the object deletes itself once its queue reported both the
// call done (gRPC's done notification) and its finish sent, or at once
// when the posted call never arrived (the server shut down: a call posted
// after that fails at once). A queue must not be shut down while calls
// are live on it: its owner shuts the server down first, then waits for
// LiveCalls to reach 0. Events run on the queue's thread; the answer may
// be given on any thread, once.
#ifndef SERVER_RPC_ASYNC_WAITING_CALL_H_
#define SERVER_RPC_ASYNC_WAITING_CALL_H_

#include <atomic>
#include <functional>
#include <memory>
#include <utility>

#include "absl/status/statusor.h"
#include "grpcpp/grpcpp.h"
#include "server/rpc/grpc_status.h"
#include "server/rpc/queue_event.h"
#include "server/rpc/queue_handover.h"
#include "server/waiting/reply.h"

namespace shard::server {

// One method served this way. `request` posts a call of it on a queue
// (the generated service's RequestX); `serve` serves one that arrived.
template <typename Request, typename Response>
struct WaitingMethod {
  std::function<void(grpc::ServerContext*, Request*,
                     grpc::ServerAsyncResponseWriter<Response>*,
                     grpc::ServerCompletionQueue*, void* tag)>
      request;
  std::function<void(grpc::ServerContext*, const Request&, Reply<Response>)>
      serve;
};

// Calls posted or in flight, of every method: what the queues' owner waits
// to reach 0 before it shuts the queues down.
using LiveCalls = std::atomic<int64_t>;

template <typename Request, typename Response>
class AsyncWaitingCall {
 public:
  // Posts one call of `method` on the queue of `handover`, counted in
  // `live`; each call that arrives posts the next. All three must outlive
  // every call posted.
  static void Post(const WaitingMethod<Request, Response>* method,
                   QueueHandover* handover, LiveCalls* live) {
    new AsyncWaitingCall(method, handover, live);
  }

 private:
  // Routes a queue event to the call's member that handles it.
  class Event final : public QueueEvent {
   public:
    Event(AsyncWaitingCall* call, void (AsyncWaitingCall::*on)(bool))
        : call_(call), on_(on) {}
    void Happened(bool ok) override { (call_->*on_)(ok); }

   private:
    AsyncWaitingCall* const call_;
    void (AsyncWaitingCall::*const on_)(bool);
  };

  AsyncWaitingCall(const WaitingMethod<Request, Response>* method,
                   QueueHandover* handover, LiveCalls* live)
      : method_(method), handover_(handover), live_(live) {
    live_->fetch_add(1);
    context_.AsyncNotifyWhenDone(&done_);
    method_->request(&context_, &request_, &responder_, handover_->queue(),
                     &arrived_);
  }
  ~AsyncWaitingCall() { live_->fetch_sub(1); }

  void OnArrived(bool ok) {
    if (!ok) {  // The server shut down before a client's call came.
      delete this;
      return;
    }
    Post(method_, handover_, live_);
    method_->serve(&context_, request_,
                   Reply<Response>(
                       [this](absl::StatusOr<Response> answer) {
                         Finish(std::move(answer));
                       },
                       cancellation_));
  }
  // Any thread: keeps the answer and hands it to the queue's thread (the
  // handover's lock orders this write before OnAnswered's read).
  void Finish(absl::StatusOr<Response> answer) {
    answer_ = std::move(answer);
    handover_->Send(&answered_);
  }
  void OnAnswered(bool) {
    if (answer_.ok()) {
      responder_.Finish(*answer_, grpc::Status::OK, &finished_);
    } else {
      responder_.FinishWithError(ToGrpcStatus(answer_.status()), &finished_);
    }
  }
  void OnDone(bool) {
    if (context_.IsCancelled()) cancellation_->Cancel();
    Release();
  }
  void OnFinished(bool) { Release(); }
  // Two events end a call that arrived: done, and its finish sent.
  void Release() {
    if (pending_.fetch_sub(1) == 1) delete this;
  }

  const WaitingMethod<Request, Response>* const method_;
  QueueHandover* const handover_;
  LiveCalls* const live_;
  grpc::ServerContext context_;
  Request request_;
  grpc::ServerAsyncResponseWriter<Response> responder_{&context_};
  absl::StatusOr<Response> answer_;
  const std::shared_ptr<Cancellation> cancellation_ =
      std::make_shared<Cancellation>();
  Event arrived_{this, &AsyncWaitingCall::OnArrived};
  Event done_{this, &AsyncWaitingCall::OnDone};
  Event answered_{this, &AsyncWaitingCall::OnAnswered};
  Event finished_{this, &AsyncWaitingCall::OnFinished};
  std::atomic<int> pending_{2};
};

}  // namespace shard::server

#endif  // SERVER_RPC_ASYNC_WAITING_CALL_H_
