// Keeps gRPC's callback threads awake so that a request after a quiet
// second is read at once.
//
// gRPC 1.51 (Debian bookworm) runs every callback-API call of a process
// on one shared completion queue. Its two or more "nexting" threads are
// also the only threads that poll the process's sockets, and each waits
// at most 1 s for an event, then sleeps 100 ms without polling. When all
// of them sleep at once, a request that arrives then (a trainer's next
// epoch after a pause, a heartbeat after a quiet spell) is read up to
// 100 ms late: about one call in ten after a second of silence.
//
// The waker sends a no-op in-process call through that queue every
// `period` (less than 1 s): the thread that takes it is back in its wait
// within microseconds with a fresh second to go, so at any moment at
// least one thread polls (the one woken last) and no request waits for a
// sleep to end. The call goes to a private server of the waker's own (no port,
// no interceptors, a generic service that answers every call UNIMPLEMENTED at
// once), so nothing shows in the coordinator's RPC metrics. Cost: one
// in-process call per period.
//
// Thread-safety: Start and the destructor from one thread; the waker's
// own thread does the calls. Owns its server, channel and thread.
#ifndef SERVER_RPC_CALLBACK_QUEUE_WAKER_H_
#define SERVER_RPC_CALLBACK_QUEUE_WAKER_H_

#include <atomic>
#include <cstdint>
#include <memory>
#include <thread>

#include "absl/status/statusor.h"
#include "absl/synchronization/notification.h"
#include "absl/time/time.h"
#include "grpcpp/generic/async_generic_service.h"
#include "grpcpp/generic/generic_stub.h"
#include "grpcpp/server.h"

namespace shard::server {

class CallbackQueueWaker {
 public:
  // The default period: well inside the threads' 1 s wait.
  static constexpr absl::Duration kDefaultPeriod = absl::Milliseconds(250);

  // Starts the private server and the calling thread. INTERNAL when gRPC
  // cannot build the server.
  static absl::StatusOr<std::unique_ptr<CallbackQueueWaker>> Start(
      absl::Duration period = kDefaultPeriod);
  // Stops the calls, then the private server.
  ~CallbackQueueWaker();

  CallbackQueueWaker(const CallbackQueueWaker&) = delete;
  CallbackQueueWaker& operator=(const CallbackQueueWaker&) = delete;

  // No-op calls answered so far (for tests).
  uint64_t calls_answered() const;

 private:
  explicit CallbackQueueWaker(absl::Duration period);
  // One no-op call each period until stop_ is notified.
  void CallUntilStopped();

  const absl::Duration period_;
  grpc::CallbackGenericService service_;
  std::unique_ptr<grpc::Server> server_;
  std::unique_ptr<grpc::GenericStub> stub_;
  std::atomic<uint64_t> calls_answered_{0};
  absl::Notification stop_;
  std::thread thread_;
};

}  // namespace shard::server

#endif  // SERVER_RPC_CALLBACK_QUEUE_WAKER_H_
