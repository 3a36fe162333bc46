// libtorch's DistributedRandomSampler for rank 0, measured in its own
// process. Prints bench_report.h's JSON line. The clock starts before
// set_epoch + reset (where libtorch draws the permutation).
//
//   libtorch-sampler-bench --size N --world-size W [--epoch E]
#include <string>

#include "absl/strings/numbers.h"
#include "tests/bench/bench_report.h"
#include "torch/data/samplers/distributed.h"

int main(int argc, char** argv) {
  using shard::bench::Clock;
  uint64_t size = 0, world = 8, epoch = 0;
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string flag = argv[i], value = argv[i + 1];
    uint64_t* target = flag == "--size"         ? &size
                       : flag == "--world-size" ? &world
                       : flag == "--epoch"      ? &epoch
                                                : nullptr;
    if (target == nullptr || !absl::SimpleAtoi(value, target)) {
      return shard::bench::Fail("bad flag " + flag + " " + value);
    }
  }
  if (size == 0) {
    return shard::bench::Fail("usage: --size N --world-size W [--epoch E]");
  }
  const Clock::time_point start = Clock::now();
  torch::data::samplers::DistributedRandomSampler sampler(size, world, 0);
  sampler.set_epoch(epoch);
  sampler.reset();
  auto batch = sampler.next(4096);
  const Clock::time_point first = Clock::now();
  uint64_t total = 0;
  while (batch.has_value()) {
    total += batch->size();
    batch = sampler.next(4096);
  }
  shard::bench::Report("libtorch", shard::bench::Seconds(start, first),
                       shard::bench::Seconds(start, Clock::now()), total);
  return 0;
}
