#include "common/plan/batches/batch_policy.h"

#include <algorithm>

namespace shard::plan {

uint64_t BatchPolicy::DefaultWindow(uint64_t world_size) const {
  if (batch_tokens == 0 || costs_total == 0) return kDefaultBatchWindow;
  // ceil(kDefaultWindowSteps x W x T x count / total), in 128 bits: W < 2^21,
  // T <= 2^40, count <= 2^32.
  const unsigned __int128 tokens =
      static_cast<unsigned __int128>(kDefaultWindowSteps * world_size) *
      batch_tokens * costs_count;
  const unsigned __int128 samples = (tokens + costs_total - 1) / costs_total;
  return static_cast<uint64_t>(std::clamp<unsigned __int128>(
      samples, kDefaultBatchWindow, kMaxDefaultBatchWindow));
}

uint64_t BatchPolicy::WindowSamples(uint64_t world_size) const {
  const uint64_t wanted = std::max(
      window == 0 ? DefaultWindow(world_size) : window, 16 * world_size);
  const uint64_t step_samples = world_size * std::max<uint64_t>(batch_size, 1);
  return (wanted + step_samples - 1) / step_samples * step_samples;
}

}  // namespace shard::plan
