#include "common/plan/batches/epoch_worlds.h"

#include <utility>

namespace shard::plan {

EpochWorlds::EpochWorlds(uint64_t order_size, Tail tail,
                         const BatchPolicy& policy,
                         std::vector<EpochLink> links)
    : order_size_(order_size),
      tail_(tail),
      policy_(policy),
      links_(std::move(links)) {
  // Sizes only: each world's rest is what its predecessor's part holds
  // after the new base, whatever the arrangement.
  uint64_t total =
      EpochBatches(order_size, links_[0].world_size, tail, policy).total();
  for (size_t k = 1; k < links_.size(); ++k) {
    const uint64_t base = links_[k].base;
    const uint64_t left = total > base ? total - base : 0;
    total =
        base + EpochBatches::Served(left, links_[k].world_size, tail, policy);
  }
  total_ = total;
}

EpochBatches EpochWorlds::Resolve(const EpochBatches::CostsOf& costs_of,
                                  uint64_t seed, uint64_t epoch) const {
  EpochBatches world(order_size_, links_[0].world_size, tail_, policy_);
  for (size_t k = 1; k < links_.size(); ++k) {
    const uint64_t base = links_[k].base;
    const EpochRest& rest = world.rest();
    if (base >= world.total()) {
      world =
          EpochBatches(rest.Replaced(rest.size(), {}), links_[k].world_size,
                       tail_, policy_, base, world.NumberOf(world.windows()));
      continue;
    }
    const uint64_t window = world.WindowOf(base);
    const WindowBatches arranged = world.Arrange(window, costs_of, seed, epoch);
    std::vector<uint64_t> left(
        arranged.positions().begin() + (base - world.WindowBegin(window)),
        arranged.positions().end());
    world = EpochBatches(
        rest.Replaced(world.WindowEnd(window) - world.base(), std::move(left)),
        links_[k].world_size, tail_, policy_, base, world.NumberOf(window) + 1);
  }
  return world;
}

}  // namespace shard::plan
