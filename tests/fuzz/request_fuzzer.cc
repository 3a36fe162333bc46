// libFuzzer target: arbitrary bytes as each request type, straight into the
// request-handling layer (CoordinatorService), the code every RPC reaches
// after gRPC has parsed a message.
//
// The first byte picks the request type; the rest is parsed as that
// protobuf message (unparseable input is dropped, as gRPC would). One
// in-memory service lives across inputs, so sequences of requests
// (create, join, commit, store, delete) build up real state. Any crash,
// sanitizer report or hang is a finding. Build with -DSHARD_FUZZ=ON and
// clang (see docs/operations.md "Fuzzing").
#include <cstddef>
#include <cstdint>
#include <memory>

#include "absl/time/clock.h"
#include "server/plans/shard_cursor.h"
#include "shard/v1/shard.pb.h"
#include "tests/support/blocking_coordinator.h"

namespace {

using shard::testing::BlockingCoordinator;

BlockingCoordinator& Service() {
  static BlockingCoordinator* service = [] {
    shard::server::CoordinatorOptions options;
    // Bound the work one input can cause: small shuffled orders, short
    // waits, no background lease thread.
    options.max_order_bytes = 16 << 20;
    options.max_wait = absl::Milliseconds(1);
    options.expire_leases_in_background = false;
    return new BlockingCoordinator(options);
  }();
  return *service;
}

template <typename Request>
bool Parse(const uint8_t* data, size_t size, Request* request) {
  return request->ParseFromArray(data, static_cast<int>(size));
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  BlockingCoordinator& service = Service();
  const uint8_t kind = data[0];
  ++data;
  --size;
  const absl::Time deadline = absl::Now() + absl::Milliseconds(5);
  switch (kind % 18) {
    case 0: {
      shard::v1::CreateJobRequest r;
      if (Parse(data, size, &r)) service.CreateJob(r).IgnoreError();
      break;
    }
    case 1: {
      shard::v1::GetJobRequest r;
      if (Parse(data, size, &r)) service.GetJob(r).IgnoreError();
      break;
    }
    case 2: {
      shard::v1::ListJobsRequest r;
      if (Parse(data, size, &r)) service.ListJobs(r).IgnoreError();
      break;
    }
    case 3: {
      shard::v1::JoinJobRequest r;
      if (Parse(data, size, &r)) service.JoinJob(r, deadline).IgnoreError();
      break;
    }
    case 4: {
      shard::v1::StreamShardRequest r;
      if (!Parse(data, size, &r)) break;
      absl::StatusOr<shard::server::ShardCursor> cursor = service.OpenShard(r);
      shard::v1::IndexChunk chunk;
      for (int i = 0; cursor.ok() && i < 2 && cursor->Next(&chunk); ++i) {
      }
      break;
    }
    case 5: {
      shard::v1::PreviewShardRequest r;
      if (Parse(data, size, &r))
        service.PreviewShard(r, deadline).IgnoreError();
      break;
    }
    case 6: {
      shard::v1::HeartbeatRequest r;
      if (Parse(data, size, &r)) service.Heartbeat(r).IgnoreError();
      break;
    }
    case 7: {
      shard::v1::LeaveRequest r;
      if (Parse(data, size, &r)) service.Leave(r).IgnoreError();
      break;
    }
    case 8: {
      shard::v1::CommitProgressRequest r;
      if (Parse(data, size, &r)) service.CommitProgress(r).IgnoreError();
      break;
    }
    case 9: {
      shard::v1::StoreSetRequest r;
      if (Parse(data, size, &r)) service.store().StoreSet(r).IgnoreError();
      break;
    }
    case 10: {
      shard::v1::StoreGetRequest r;
      if (Parse(data, size, &r)) service.StoreGet(r, deadline).IgnoreError();
      break;
    }
    case 11: {
      shard::v1::StoreAddRequest r;
      if (Parse(data, size, &r)) service.store().StoreAdd(r).IgnoreError();
      break;
    }
    case 12: {
      shard::v1::StoreCompareSetRequest r;
      if (Parse(data, size, &r))
        service.store().StoreCompareSet(r).IgnoreError();
      break;
    }
    case 13: {
      shard::v1::StoreWaitRequest r;
      if (Parse(data, size, &r)) service.StoreWait(r, deadline).IgnoreError();
      break;
    }
    case 14: {
      shard::v1::StoreDeleteRequest r;
      if (Parse(data, size, &r)) service.store().StoreDelete(r).IgnoreError();
      break;
    }
    case 15: {
      shard::v1::StoreCountRequest r;
      if (Parse(data, size, &r)) service.store().StoreCount(r).IgnoreError();
      break;
    }
    case 16: {
      shard::v1::DeleteJobRequest r;
      if (Parse(data, size, &r)) service.DeleteJob(r).IgnoreError();
      break;
    }
    case 17:
      service.ExpireLeases();
      break;
  }
  return 0;
}
