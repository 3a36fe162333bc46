// Shared by the benchmarks: timing, and the sampler benchmarks' JSON line
//   {"mode":..., "first_index_s":..., "drain_s":..., "indices":...,
//    "peak_rss_mib":..., "checksum":...}
#ifndef TESTS_BENCH_BENCH_REPORT_H_
#define TESTS_BENCH_BENCH_REPORT_H_

#include <sys/resource.h>

#include <chrono>
#include <cstdint>
#include <cstdio>
#include <string>

namespace shard::bench {

using Clock = std::chrono::steady_clock;

inline double Seconds(Clock::time_point from, Clock::time_point to) {
  return std::chrono::duration<double>(to - from).count();
}

// Peak resident set size of this process so far.
inline double PeakRssMib() {
  rusage usage{};
  getrusage(RUSAGE_SELF, &usage);
  return usage.ru_maxrss / 1024.0;
}

// `checksum`: sum of (i + 1) * index_i mod 2^64 over the indices received,
// in order (0 where not computed).
inline void Report(const std::string& mode, double first, double drain,
                   uint64_t indices, uint64_t checksum = 0) {
  std::printf(
      "{\"mode\":\"%s\",\"first_index_s\":%.6f,\"drain_s\":%.6f,"
      "\"indices\":%llu,\"peak_rss_mib\":%.1f,\"checksum\":%llu}\n",
      mode.c_str(), first, drain, static_cast<unsigned long long>(indices),
      PeakRssMib(), static_cast<unsigned long long>(checksum));
}

inline int Fail(const std::string& message) {
  std::fprintf(stderr, "sampler bench: %s\n", message.c_str());
  return 1;
}

}  // namespace shard::bench

#endif  // TESTS_BENCH_BENCH_REPORT_H_
