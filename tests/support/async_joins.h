// Many JoinJob calls in flight at once through gRPC's callback client API
// (no client thread per call), for tests and benchmarks of waiting joins.
// Members are named "<prefix><i>"; call i goes to stubs[i % stubs.size()].
// Thread-safe. The destructor cancels the calls still running and waits for
// all of them to end; the stubs must outlive this object.
#ifndef TESTS_SUPPORT_ASYNC_JOINS_H_
#define TESTS_SUPPORT_ASYNC_JOINS_H_

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"
#include "grpcpp/grpcpp.h"
#include "shard/v1/shard.grpc.pb.h"

namespace shard::testing {

class AsyncJoins {
 public:
  AsyncJoins(const std::vector<shard::v1::Coordinator::Stub*>& stubs,
             const std::string& job, const std::string& member_prefix,
             int count, uint32_t wait_ms);
  ~AsyncJoins();
  AsyncJoins(const AsyncJoins&) = delete;
  AsyncJoins& operator=(const AsyncJoins&) = delete;

  void CancelAll();
  // Blocks until every call ended.
  void AwaitDone() ABSL_LOCKS_EXCLUDED(mu_);
  // Calls ended so far, and those that ended OK.
  size_t finished() ABSL_LOCKS_EXCLUDED(mu_);
  size_t ok() ABSL_LOCKS_EXCLUDED(mu_);
  // Call i's status and response once it ended.
  grpc::Status status(int i) ABSL_LOCKS_EXCLUDED(mu_);
  const shard::v1::JoinJobResponse& response(int i) const {
    return calls_[i].response;
  }

 private:
  struct Call {
    grpc::ClientContext context;
    shard::v1::JoinJobRequest request;
    shard::v1::JoinJobResponse response;
    grpc::Status status;
  };
  std::vector<Call> calls_;
  absl::Mutex mu_;
  absl::CondVar all_done_;
  size_t finished_ ABSL_GUARDED_BY(mu_) = 0;
  size_t ok_ ABSL_GUARDED_BY(mu_) = 0;
};

}  // namespace shard::testing

#endif  // TESTS_SUPPORT_ASYNC_JOINS_H_
