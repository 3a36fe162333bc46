// JoinOrder: join order kept across removals anywhere, no duplicates, and
// copies (a JobState copied for a snapshot) independent of the original.
#include "server/state/join_order.h"

#include <memory>
#include <string>
#include <vector>

#include "gtest/gtest.h"

namespace shard::server {
namespace {

std::vector<std::string> Listed(const JoinOrder& order) {
  return {order.begin(), order.end()};
}

TEST(JoinOrderTest, KeepsJoinOrderAcrossRemovals) {
  JoinOrder order;
  for (const char* member : {"a", "b", "c", "d"})
    EXPECT_TRUE(order.Add(member));
  EXPECT_FALSE(order.Add("b"));
  order.Remove("b");
  order.Remove("x");  // Not in: nothing happens.
  EXPECT_EQ(Listed(order), (std::vector<std::string>{"a", "c", "d"}));
  EXPECT_TRUE(order.Add("b"));  // Joins again: last.
  EXPECT_EQ(Listed(order), (std::vector<std::string>{"a", "c", "d", "b"}));
  EXPECT_TRUE(order.Contains("b"));
  EXPECT_FALSE(order.Contains("x"));
  EXPECT_EQ(order.size(), 4u);
}

TEST(JoinOrderTest, CopiesAreIndependent) {
  auto original = std::make_unique<JoinOrder>();
  for (const char* member : {"a", "b", "c"}) original->Add(member);
  JoinOrder copy = *original;
  JoinOrder assigned;
  assigned.Add("z");
  assigned = *original;
  original->Remove("a");
  original.reset();  // The copies' indexes must not point into it.
  copy.Remove("b");
  assigned.Remove("c");
  EXPECT_EQ(Listed(copy), (std::vector<std::string>{"a", "c"}));
  EXPECT_EQ(Listed(assigned), (std::vector<std::string>{"a", "b"}));
  JoinOrder moved = std::move(copy);
  moved.Remove("a");
  EXPECT_EQ(Listed(moved), (std::vector<std::string>{"c"}));
}

// All members of a large job leave in join order, the order a lease
// expiry finds them: each removal is O(1), the rest stays in order.
TEST(JoinOrderTest, RemovingEveryMemberOfALargeJob) {
  constexpr int kMembers = 200000;
  JoinOrder order;
  for (int i = 0; i < kMembers; ++i) order.Add("member-" + std::to_string(i));
  for (int i = 0; i < kMembers - 1; ++i) {
    order.Remove("member-" + std::to_string(i));
  }
  EXPECT_EQ(
      Listed(order),
      (std::vector<std::string>{"member-" + std::to_string(kMembers - 1)}));
}

}  // namespace
}  // namespace shard::server
