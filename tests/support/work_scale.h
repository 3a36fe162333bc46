// The size of CPU-bound test work (shuffling large epoch orders), for the
// build the test runs in. .ci/run's sanitizer build (AddressSanitizer,
// UBSan and libFuzzer's coverage instrumentation of every comparison) ran
// the tests that shuffle orders of 20,000,000 and 50,000,000 entries for
// minutes each (StreamOpenTest.ASmallJobDoesNotWaitForOtherJobsOrders:
// 808 s, against 2.8 s in the optimized build). There, tests shuffle a tenth
// of the size (the same test: 5.4 s). A test about the timing of large
// against small work (a small order never waits behind a large one) keeps
// its proportions: the large work still takes far longer than the small,
// and more than an order's front (131,072 entries).
#ifndef TESTS_SUPPORT_WORK_SCALE_H_
#define TESTS_SUPPORT_WORK_SCALE_H_

#include <cstdint>

namespace shard::testing {

#if defined(__SANITIZE_ADDRESS__)
inline constexpr bool kSanitizedBuild = true;
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
inline constexpr bool kSanitizedBuild = true;
#else
inline constexpr bool kSanitizedBuild = false;
#endif
#else
inline constexpr bool kSanitizedBuild = false;
#endif

// `entries` of an order a test shuffles, scaled down in a sanitized build.
constexpr uint64_t LargeOrderSize(uint64_t entries) {
  return kSanitizedBuild ? entries / 10 : entries;
}

}  // namespace shard::testing

#endif  // TESTS_SUPPORT_WORK_SCALE_H_
