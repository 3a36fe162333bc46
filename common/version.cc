#include "shard/version.h"

namespace shard {

std::string Version() { return SHARD_VERSION; }

}  // namespace shard
