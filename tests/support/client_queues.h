// Completion queues of gRPC's async client API, one thread each, that run
// the events of many calls in flight at once (AsyncCalls): no thread per
// call, and no single queue holding every call.
//
// Why several queues: Debian's gRPC 1.51 has its debug checks compiled in,
// so a completion queue searches the list of every operation begun on it
// at each completion. The callback client API puts all of a process's
// calls on one queue, which made 100,000 calls in flight from one
// benchmark process cost O(N) per completion (see
// server/rpc/waiting_call_queues.h for the server's side of it).
//
// Thread-safe. The destructor shuts the queues down and joins their
// threads: every call started on them must have ended.
#ifndef TESTS_SUPPORT_CLIENT_QUEUES_H_
#define TESTS_SUPPORT_CLIENT_QUEUES_H_

#include <atomic>
#include <cstddef>
#include <memory>
#include <thread>
#include <vector>

#include "grpcpp/grpcpp.h"

namespace shard::testing {

// The tag of every operation started on ClientQueues' queues.
class ClientQueueEvent {
 public:
  virtual void Happened(bool ok) = 0;

 protected:
  ~ClientQueueEvent() = default;
};

class ClientQueues {
 public:
  static constexpr int kDefaultQueues = 8;

  explicit ClientQueues(int queues = kDefaultQueues);
  ~ClientQueues();
  ClientQueues(const ClientQueues&) = delete;
  ClientQueues& operator=(const ClientQueues&) = delete;

  // The queues in turn, for the next call to start on.
  grpc::CompletionQueue* Next();

 private:
  std::vector<std::unique_ptr<grpc::CompletionQueue>> queues_;
  std::vector<std::thread> threads_;
  std::atomic<size_t> next_{0};
};

}  // namespace shard::testing

#endif  // TESTS_SUPPORT_CLIENT_QUEUES_H_
