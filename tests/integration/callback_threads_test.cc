// While a coordinator server runs, gRPC's callback threads never all sleep
// at once, so a request is read and dispatched the moment it arrives.
// gRPC 1.51 runs callback-API calls on "nexting" threads that poll the
// server's sockets; each sleeps 100 ms without polling after a quiet
// second, and when all of them sleep together a request waits for the
// sleep to end (the warm-epoch stalls of run_warm_epoch_bench.py).
// server/rpc/callback_queue_waker.h keeps one of them awake.
//
// The check reads each nexting thread's current system call from
// /proc/self/task/*/syscall every few milliseconds after the server has
// been quiet for longer than the threads' 1 s wait.
#include <sys/syscall.h>

#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "absl/time/clock.h"
#include "gtest/gtest.h"
#include "tests/support/test_cluster.h"

namespace shard::testing {
namespace {

bool IsSleep(long number) {
  return number == SYS_nanosleep || number == SYS_clock_nanosleep;
}

// The threads gRPC names "nexting_thread", each by its /proc/self/task path.
std::vector<std::filesystem::path> NextingThreads() {
  std::vector<std::filesystem::path> threads;
  for (const auto& task :
       std::filesystem::directory_iterator("/proc/self/task")) {
    std::string name;
    std::getline(std::ifstream(task.path() / "comm"), name);
    if (name == "nexting_thread") threads.push_back(task.path());
  }
  return threads;
}

// Whether every one of `threads` is in a sleep now.
bool AllAsleep(const std::vector<std::filesystem::path>& threads) {
  for (const std::filesystem::path& thread : threads) {
    std::ifstream file(thread / "syscall");
    std::string first;  // A number, "running" or -1 (not in a call).
    if (!(file >> first) || first == "running") return false;
    if (!IsSleep(std::stol(first))) return false;
  }
  return true;
}

// The longest stretch of consecutive samples in which all slept.
struct Gap {
  int samples = 0;
  absl::Duration span;
};

Gap LongestSleepOfAll(const std::vector<std::filesystem::path>& threads,
                      absl::Duration watch, absl::Duration every) {
  Gap longest, current;
  absl::Time gap_began;
  const absl::Time end = absl::Now() + watch;
  while (absl::Now() < end) {
    const absl::Time now = absl::Now();
    if (!AllAsleep(threads)) {
      current = Gap();
    } else {
      if (current.samples == 0) gap_began = now;
      ++current.samples;
      current.span = now - gap_began;
      if (current.span > longest.span) longest = current;
    }
    absl::SleepFor(every);
  }
  return longest;
}

TEST(CallbackThreads, NeverAllAsleepAfterQuietSeconds) {
  ASSERT_TRUE(std::filesystem::exists("/proc/self/task"));
  TestCluster cluster;
  // One call, then silence: the callback threads' 1 s wait runs out.
  ASSERT_TRUE(cluster.NewClient()->ListJobs().ok());
  absl::SleepFor(absl::Milliseconds(1200));
  // Named by each thread once it runs: looked up after the call.
  const std::vector<std::filesystem::path> threads = NextingThreads();
  if (threads.empty()) GTEST_SKIP() << "this gRPC has no nexting threads";
  // Three and a half of the threads' 1.1 s cycles, sampled every 2 ms:
  // unless one is kept awake, their common 100 ms sleeps show as gaps of
  // about 50 samples. A gap needs both many samples and a long span, so a
  // sampler that was itself descheduled does not count as one.
  const Gap gap = LongestSleepOfAll(threads, absl::Milliseconds(3800),
                                    absl::Milliseconds(2));
  EXPECT_FALSE(gap.samples >= 10 && gap.span >= absl::Milliseconds(40))
      << "all " << threads.size() << " nexting threads slept for "
      << gap.samples << " samples in a row, over "
      << absl::FormatDuration(gap.span);
}

}  // namespace
}  // namespace shard::testing
