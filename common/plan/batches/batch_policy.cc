#include "common/plan/batches/batch_policy.h"

#include <algorithm>

namespace shard::plan {

uint64_t BatchPolicy::WindowSamples(uint64_t world_size) const {
  const uint64_t wanted =
      std::max(window == 0 ? kDefaultBatchWindow : window, 16 * world_size);
  const uint64_t step_samples = world_size * std::max<uint64_t>(batch_size, 1);
  return (wanted + step_samples - 1) / step_samples * step_samples;
}

}  // namespace shard::plan
