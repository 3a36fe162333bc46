#include "server/rpc/callback_queue_waker.h"

#include <utility>

#include "grpcpp/client_context.h"
#include "grpcpp/server_builder.h"
#include "grpcpp/support/byte_buffer.h"
#include "grpcpp/support/channel_arguments.h"
#include "grpcpp/support/slice.h"

namespace shard::server {
namespace {

// The private server implements no method: any name is answered at once.
constexpr char kWakeMethod[] = "/shard.internal.Waker/Wake";

}  // namespace

CallbackQueueWaker::CallbackQueueWaker(absl::Duration period)
    : period_(period) {}

absl::StatusOr<std::unique_ptr<CallbackQueueWaker>> CallbackQueueWaker::Start(
    absl::Duration period) {
  std::unique_ptr<CallbackQueueWaker> waker(new CallbackQueueWaker(period));
  grpc::ServerBuilder builder;
  builder.RegisterCallbackGenericService(&waker->service_);
  waker->server_ = builder.BuildAndStart();
  if (waker->server_ == nullptr) {
    return absl::InternalError("cannot start the callback queue's waker");
  }
  waker->stub_ = std::make_unique<grpc::GenericStub>(
      waker->server_->InProcessChannel(grpc::ChannelArguments()));
  waker->thread_ = std::thread([w = waker.get()] { w->CallUntilStopped(); });
  return waker;
}

CallbackQueueWaker::~CallbackQueueWaker() {
  stop_.Notify();
  if (thread_.joinable()) thread_.join();
  if (server_ != nullptr) {
    server_->Shutdown();
    server_->Wait();
  }
}

uint64_t CallbackQueueWaker::calls_answered() const {
  return calls_answered_.load(std::memory_order_relaxed);
}

void CallbackQueueWaker::CallUntilStopped() {
  // An empty message (a default ByteBuffer is no message at all).
  grpc::Slice empty;
  const grpc::ByteBuffer request(&empty, 1);
  do {
    grpc::ClientContext context;
    grpc::ByteBuffer response;
    absl::Notification answered;
    stub_->UnaryCall(&context, kWakeMethod, grpc::StubOptions(), &request,
                     &response, [&](const grpc::Status&) {
                       calls_answered_.fetch_add(1, std::memory_order_relaxed);
                       answered.Notify();
                     });
    // The call ends promptly: it only crosses the process.
    answered.WaitForNotification();
  } while (!stop_.WaitForNotificationWithTimeout(period_));
}

}  // namespace shard::server
