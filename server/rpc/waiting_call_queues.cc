#include "server/rpc/waiting_call_queues.h"

#include <memory>
#include <utility>

#include "absl/time/clock.h"

namespace shard::server {
namespace {

// How often Stop() looks whether every call ended.
constexpr absl::Duration kEndedPoll = absl::Milliseconds(1);

// The method whose calls `coordinator` posts with its member `request`
// (the generated RequestX) and serves with its member `serve`.
template <typename Request, typename Response, typename RequestCall,
          typename ServeCall>
WaitingMethod<Request, Response> MethodOf(GrpcCoordinator* coordinator,
                                          RequestCall request,
                                          ServeCall serve) {
  return {
      [coordinator, request](
          grpc::ServerContext* context, Request* message,
          grpc::ServerAsyncResponseWriter<Response>* responder,
          grpc::ServerCompletionQueue* queue, void* tag) {
        (coordinator->*request)(context, message, responder, queue, queue, tag);
      },
      [coordinator, serve](grpc::ServerContext* context, const Request& message,
                           Reply<Response> reply) {
        (coordinator->*serve)(context, message, std::move(reply));
      }};
}

template <typename Request, typename Response>
void PostAll(const WaitingMethod<Request, Response>* method,
             QueueHandover* handover, LiveCalls* live) {
  for (int i = 0; i < WaitingCallQueues::kPostedPerMethod; ++i) {
    AsyncWaitingCall<Request, Response>::Post(method, handover, live);
  }
}

}  // namespace

WaitingCallQueues::WaitingCallQueues(grpc::ServerBuilder& builder) {
  for (int i = 0; i < kQueues; ++i) {
    queues_.push_back(builder.AddCompletionQueue());
    handovers_.push_back(std::make_unique<QueueHandover>(queues_.back().get()));
  }
}

WaitingCallQueues::~WaitingCallQueues() {
  if (!threads_.empty()) {
    Stop();
  } else {
    ShutDownQueues();
  }
}

void WaitingCallQueues::Start(GrpcCoordinator* coordinator) {
  using shard::v1::JoinJobRequest, shard::v1::JoinJobResponse;
  using shard::v1::StoreGetRequest, shard::v1::StoreGetResponse;
  using shard::v1::StoreWaitRequest, shard::v1::StoreWaitResponse;
  join_ = MethodOf<JoinJobRequest, JoinJobResponse>(
      coordinator, &GrpcCoordinator::RequestJoinJob,
      &GrpcCoordinator::ServeJoinJob);
  store_get_ = MethodOf<StoreGetRequest, StoreGetResponse>(
      coordinator, &GrpcCoordinator::RequestStoreGet,
      &GrpcCoordinator::ServeStoreGet);
  store_wait_ = MethodOf<StoreWaitRequest, StoreWaitResponse>(
      coordinator, &GrpcCoordinator::RequestStoreWait,
      &GrpcCoordinator::ServeStoreWait);
  for (const auto& handover : handovers_) {
    PostAll(&join_, handover.get(), &live_);
    PostAll(&store_get_, handover.get(), &live_);
    PostAll(&store_wait_, handover.get(), &live_);
    threads_.emplace_back(&WaitingCallQueues::Drain, handover->queue());
  }
}

void WaitingCallQueues::Stop() {
  if (queues_shut_down_) return;
  // The server shut down: posted calls fail, calls that arrived end once
  // answered and done.
  while (live_.load() > 0) absl::SleepFor(kEndedPoll);
  ShutDownQueues();
}

void WaitingCallQueues::ShutDownQueues() {
  if (queues_shut_down_) return;
  queues_shut_down_ = true;
  for (const auto& queue : queues_) queue->Shutdown();
  if (threads_.empty()) {
    for (const auto& queue : queues_) Drain(queue.get());
  }
  for (std::thread& thread : threads_) thread.join();
}

void WaitingCallQueues::Drain(grpc::ServerCompletionQueue* queue) {
  void* tag = nullptr;
  bool ok = false;
  while (queue->Next(&tag, &ok)) static_cast<QueueEvent*>(tag)->Happened(ok);
}

}  // namespace shard::server
