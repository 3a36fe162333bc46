// Reads every index a ShardCursor yields, for tests of the service layer.
#ifndef TESTS_SUPPORT_CURSOR_INDICES_H_
#define TESTS_SUPPORT_CURSOR_INDICES_H_

#include <cstdint>
#include <vector>

#include "server/plans/shard_cursor.h"

namespace shard::testing {

// Drains `cursor` and returns its indices in order, waiting for its order's
// shuffle where the cursor has to (stops early if it was abandoned).
std::vector<uint64_t> CursorIndices(server::ShardCursor& cursor);

}  // namespace shard::testing

#endif  // TESTS_SUPPORT_CURSOR_INDICES_H_
