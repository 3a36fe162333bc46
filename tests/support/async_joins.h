// Many JoinJob calls in flight at once (AsyncCalls: gRPC's async client
// API, no client thread per call), for tests and benchmarks of waiting joins.
// Members are named "<prefix><i>"; call i goes to stubs[i % stubs.size()].
// Thread-safe. The destructor cancels the calls still running and waits for
// all of them to end; the stubs must outlive this object.
#ifndef TESTS_SUPPORT_ASYNC_JOINS_H_
#define TESTS_SUPPORT_ASYNC_JOINS_H_

#include <cstdint>
#include <string>
#include <vector>

#include "shard/v1/shard.grpc.pb.h"
#include "tests/support/async_calls.h"

namespace shard::testing {

class AsyncJoins
    : public AsyncCalls<shard::v1::JoinJobRequest, shard::v1::JoinJobResponse> {
 public:
  AsyncJoins(const std::vector<shard::v1::Coordinator::Stub*>& stubs,
             const std::string& job, const std::string& member_prefix,
             int count, uint32_t wait_ms);
};

}  // namespace shard::testing

#endif  // TESTS_SUPPORT_ASYNC_JOINS_H_
