// The coordinator's lease bookkeeping at cluster scale
// (server/core/lease_table.h), for one job of W members (W = 16,000, 32,000,
// 100,000):
//   BM_Sweep       - one lease sweep: whether each of the W members expired
//                    (what MembershipService::ExpireLeases does under the
//                    core's lock every lease / 4; nobody expires here);
//   BM_RenewAtPace - one heartbeat's lease update among W members.
// Run: build/bin/shard-lease-sweep-bench
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "benchmark/benchmark.h"
#include "server/core/lease_table.h"

namespace {

using shard::server::LeaseTable;

const std::string kJob = "train-llm-100000-ranks";
const absl::Duration kLease = absl::Seconds(10);
const absl::Duration kPace = absl::Seconds(6);

std::vector<std::string> Members(int64_t world) {
  std::vector<std::string> members;
  for (int64_t i = 0; i < world; ++i) {
    members.push_back(absl::StrCat("host-", i / 8, "-rank-", i));
  }
  return members;
}

// A table that heard from every member of `members` just now.
void RenewAll(LeaseTable& table, const std::vector<std::string>& members) {
  for (const std::string& member : members) {
    table.RenewAtPace(kJob, member, kPace);
  }
}

void BM_Sweep(benchmark::State& state) {
  const std::vector<std::string> members = Members(state.range(0));
  LeaseTable table([] { return absl::Now(); });
  RenewAll(table, members);
  for (auto _ : state) {
    int expired = 0;
    for (const std::string& member : members) {
      expired += table.Expired(kJob, member, kLease) ? 1 : 0;
    }
    benchmark::DoNotOptimize(expired);
  }
  state.counters["ns_per_member"] =
      benchmark::Counter(static_cast<double>(state.range(0)),
                         benchmark::Counter::kIsIterationInvariantRate |
                             benchmark::Counter::kInvert);
}
BENCHMARK(BM_Sweep)->Arg(16000)->Arg(32000)->Arg(100000)->Unit(
    benchmark::kMillisecond);

void BM_RenewAtPace(benchmark::State& state) {
  const std::vector<std::string> members = Members(state.range(0));
  LeaseTable table([] { return absl::Now(); });
  RenewAll(table, members);
  size_t next = 0;
  for (auto _ : state) {
    table.RenewAtPace(kJob, members[next], kPace);
    next = next + 1 == members.size() ? 0 : next + 1;
  }
}
BENCHMARK(BM_RenewAtPace)->Arg(16000)->Arg(32000)->Arg(100000);

}  // namespace

BENCHMARK_MAIN();
