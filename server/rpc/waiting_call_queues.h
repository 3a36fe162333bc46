// The completion queues, one thread each, that serve the calls that wait
// (JoinJob, StoreGet, StoreWait) on gRPC's async API; every other call
// stays on the callback API (grpc_coordinator.h).
//
// Why: the gRPC this is built against (Debian's 1.51) has its debug checks
// compiled in: a completion queue lists every operation begun on it and
// searches that list on every completion, under the queue's lock. All the
// callback API's calls share one queue, so with N calls waiting there
// every operation of every call cost O(N), and a storm of N joins O(N^2):
// 24.7 s to form a world of 100,000, 15.5 s to answer 99,999 rendezvous
// waiters, most of it in that search. Here a waiting call lengthens only
// its own queue's list, kQueues of them share the waiters, and the calls
// that do not wait never see them.
//
// Use: construct with the server's builder before BuildAndStart() (it adds
// the queues), Start() once the server runs, Stop() once the server's
// Shutdown() returned: it waits for every call to end, then shuts the
// queues down and joins their threads. Start() and Stop() are called from
// one thread; the calls run on the queues' threads and answer from any.
#ifndef SERVER_RPC_WAITING_CALL_QUEUES_H_
#define SERVER_RPC_WAITING_CALL_QUEUES_H_

#include <memory>
#include <thread>
#include <vector>

#include "grpcpp/grpcpp.h"
#include "server/rpc/async_waiting_call.h"
#include "server/rpc/grpc_coordinator.h"
#include "server/rpc/queue_handover.h"
#include "shard/v1/shard.pb.h"

namespace shard::server {

class WaitingCallQueues {
 public:
  // Queues (and threads) that share the waiting calls.
  static constexpr int kQueues = 16;
  // Calls of each method posted ahead on each queue.
  static constexpr int kPostedPerMethod = 2;

  explicit WaitingCallQueues(grpc::ServerBuilder& builder);
  ~WaitingCallQueues();  // Stop(), if Start() ran and Stop() did not.
  WaitingCallQueues(const WaitingCallQueues&) = delete;
  WaitingCallQueues& operator=(const WaitingCallQueues&) = delete;

  // Posts the calls and starts the threads; `coordinator` serves them and
  // must outlive Stop().
  void Start(GrpcCoordinator* coordinator);
  void Stop();

 private:
  // Runs the events of `queue` until it is shut down and drained.
  static void Drain(grpc::ServerCompletionQueue* queue);
  // Shuts every queue down and drains it (on its thread, if it has one).
  void ShutDownQueues();

  std::vector<std::unique_ptr<grpc::ServerCompletionQueue>> queues_;
  // One a queue, in the same order: how answers reach its thread.
  std::vector<std::unique_ptr<QueueHandover>> handovers_;
  std::vector<std::thread> threads_;
  LiveCalls live_{0};
  bool queues_shut_down_ = false;
  WaitingMethod<shard::v1::JoinJobRequest, shard::v1::JoinJobResponse> join_;
  WaitingMethod<shard::v1::StoreGetRequest, shard::v1::StoreGetResponse>
      store_get_;
  WaitingMethod<shard::v1::StoreWaitRequest, shard::v1::StoreWaitResponse>
      store_wait_;
};

}  // namespace shard::server

#endif  // SERVER_RPC_WAITING_CALL_QUEUES_H_
