// The std::mt19937 (MT19937, 32-bit) stream, generated a state's worth (624
// words) at a time into a buffer: the same numbers in the same order as
// std::mt19937 seeded with the same value, without the per-call branch and
// tempering of the standard engine, in loops the compiler vectorises.
// Not thread-safe (one generator per thread).
#ifndef COMMON_PLAN_SHUFFLES_MT19937_BATCH_H_
#define COMMON_PLAN_SHUFFLES_MT19937_BATCH_H_

#include <cstddef>
#include <cstdint>

namespace shard::plan {

class Mt19937Batch {
 public:
  explicit Mt19937Batch(uint32_t seed) {
    state_[0] = seed;
    for (uint32_t i = 1; i < kN; ++i) {
      state_[i] = 1812433253u * (state_[i - 1] ^ (state_[i - 1] >> 30)) + i;
    }
  }

  // The next number of the stream.
  uint32_t operator()() {
    if (next_ == kN) Refill();
    return buffer_[next_++];
  }

 private:
  static constexpr uint32_t kN = 624;
  static constexpr uint32_t kM = 397;

  static uint32_t Twist(uint32_t current, uint32_t next, uint32_t far) {
    const uint32_t y = (current & 0x80000000u) | (next & 0x7fffffffu);
    return far ^ (y >> 1) ^ ((y & 1u) ? 0x9908b0dfu : 0u);
  }

  // One twist of the whole state (the three ranges the recurrence splits
  // into, each free of dependencies within a vector), then tempering.
  void Refill() {
    for (uint32_t i = 0; i < kN - kM; ++i) {
      state_[i] = Twist(state_[i], state_[i + 1], state_[i + kM]);
    }
    for (uint32_t i = kN - kM; i < kN - 1; ++i) {
      state_[i] = Twist(state_[i], state_[i + 1], state_[i + kM - kN]);
    }
    state_[kN - 1] = Twist(state_[kN - 1], state_[0], state_[kM - 1]);
    for (uint32_t i = 0; i < kN; ++i) {
      uint32_t y = state_[i];
      y ^= y >> 11;
      y ^= (y << 7) & 0x9d2c5680u;
      y ^= (y << 15) & 0xefc60000u;
      y ^= y >> 18;
      buffer_[i] = y;
    }
    next_ = 0;
  }

  uint32_t state_[kN];
  uint32_t buffer_[kN];
  uint32_t next_ = kN;
};

}  // namespace shard::plan

#endif  // COMMON_PLAN_SHUFFLES_MT19937_BATCH_H_
