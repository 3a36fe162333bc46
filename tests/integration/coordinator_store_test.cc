// The c10d::Store adapter passes the behaviours c10d relies on, and real
// Gloo process groups form through it; gather_uneven over such a group
// returns exactly N results for uneven shards.
#include "shard/client/torch/coordinator_store.h"

#include <atomic>
#include <set>
#include <thread>
#include <vector>

#include "gtest/gtest.h"
#include "tests/support/test_cluster.h"
#include "torch/torch.h"
#include "trainer/gather_uneven.h"
#include "trainer/process_group.h"

namespace shard {
namespace {

using torch_adapter::CoordinatorStore;

std::vector<uint8_t> Bytes(const std::string& text) {
  return {text.begin(), text.end()};
}

class CoordinatorStoreTest : public ::testing::Test {
 protected:
  void SetUp() override { members_ = Join(kWorld); }

  // Joins `world` members of job "job" and returns them by rank.
  std::vector<client::Membership> Join(uint32_t world) {
    shard::v1::JobSpec spec;
    spec.set_dataset_size(10);
    spec.set_world_size(world);
    std::vector<std::thread> threads;
    std::vector<client::Membership> members(world);
    for (uint32_t i = 0; i < world; ++i) {
      threads.emplace_back([&, i] {
        auto m = client_->Join("job", "m" + std::to_string(i), spec,
                               absl::Seconds(20));
        ASSERT_TRUE(m.ok()) << m.status();
        members[m->rank] = *m;
      });
    }
    for (std::thread& t : threads) t.join();
    return members;
  }

  c10::intrusive_ptr<CoordinatorStore> Store(
      uint32_t rank,
      std::chrono::milliseconds timeout = std::chrono::milliseconds(5000)) {
    return c10::make_intrusive<CoordinatorStore>(client_, members_[rank],
                                                 timeout);
  }

  static constexpr uint32_t kWorld = 3;
  testing::TestCluster cluster_;
  std::shared_ptr<client::CoordinatorClient> client_ = cluster_.NewClient();
  std::vector<client::Membership> members_;
};

TEST_F(CoordinatorStoreTest, SetGetAcrossMembers) {
  Store(0)->set("key", Bytes("value"));
  EXPECT_EQ(Store(2)->get("key"), Bytes("value"));
  EXPECT_TRUE(Store(1)->check({"key"}));
  EXPECT_FALSE(Store(1)->check({"key", "other"}));
}

TEST_F(CoordinatorStoreTest, GetBlocksUntilTheKeyIsSet) {
  auto store = Store(0);
  std::thread setter([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
    Store(1)->set("late", Bytes("here"));
  });
  EXPECT_EQ(store->get("late"), Bytes("here"));
  setter.join();
}

TEST_F(CoordinatorStoreTest, GetAndWaitTimeOut) {
  auto store = Store(0, std::chrono::milliseconds(100));
  const auto start = std::chrono::steady_clock::now();
  EXPECT_THROW(store->get("never"), std::runtime_error);
  EXPECT_GE(std::chrono::steady_clock::now() - start,
            std::chrono::milliseconds(90));
  EXPECT_THROW(store->wait({"never"}, std::chrono::milliseconds(50)),
               std::runtime_error);
  store->set("now", Bytes("x"));
  store->wait({"now"}, std::chrono::milliseconds(50));
}

TEST_F(CoordinatorStoreTest, AddIsAtomicUnderConcurrency) {
  constexpr int kThreads = 8, kAdds = 50;
  std::vector<std::thread> threads;
  std::vector<std::set<int64_t>> seen(kThreads);
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      auto store = Store(t % kWorld);
      for (int i = 0; i < kAdds; ++i) seen[t].insert(store->add("counter", 1));
    });
  }
  for (std::thread& t : threads) t.join();
  std::set<int64_t> all;
  for (const auto& s : seen) all.insert(s.begin(), s.end());
  EXPECT_EQ(all.size(), static_cast<size_t>(kThreads * kAdds));
  EXPECT_EQ(*all.rbegin(), kThreads * kAdds);
  EXPECT_EQ(Store(0)->add("counter", 0), kThreads * kAdds);
}

TEST_F(CoordinatorStoreTest, CompareSetDeleteAndCount) {
  auto store = Store(0);
  EXPECT_EQ(store->compareSet("cas", Bytes("x"), Bytes("y")), Bytes("x"));
  EXPECT_EQ(store->compareSet("cas", {}, Bytes("a")), Bytes("a"));
  EXPECT_EQ(store->compareSet("cas", Bytes("zzz"), Bytes("b")), Bytes("a"));
  EXPECT_EQ(store->compareSet("cas", Bytes("a"), Bytes("b")), Bytes("b"));
  store->set("other", Bytes("1"));
  EXPECT_EQ(store->getNumKeys(), 2);
  EXPECT_TRUE(store->deleteKey("cas"));
  EXPECT_FALSE(store->deleteKey("cas"));
  EXPECT_EQ(store->getNumKeys(), 1);
}

TEST_F(CoordinatorStoreTest, StaleGenerationIsRefused) {
  client::Membership stale = members_[0];
  stale.generation += 1;
  CoordinatorStore store(client_, stale, std::chrono::milliseconds(100));
  try {
    store.set("k", Bytes("v"));
    FAIL() << "expected an exception";
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find("ABORTED"), std::string::npos)
        << e.what();
  }
}

#ifdef SHARD_TORCH_STORE_HAS_CLONE
TEST_F(CoordinatorStoreTest, CloneSharesTheKeySpace) {
  auto store = Store(0);
  c10::intrusive_ptr<c10d::Store> copy = store->clone();
  copy->set("cloned", Bytes("yes"));
  EXPECT_EQ(store->get("cloned"), Bytes("yes"));
  EXPECT_EQ(copy->getTimeout(), store->getTimeout());
}
#endif

// Three Gloo ranks (threads) form a process group through the store; each
// holds an uneven shard of N = 10 (4, 3, 3 results); GatherUneven returns
// all 10 on every rank, in rank order, none duplicated.
TEST_F(CoordinatorStoreTest, GlooFormsAndGatherUnevenReturnsExactlyN) {
#ifndef SHARD_WITH_GLOO
  GTEST_SKIP() << "this build has no Gloo headers";
#endif
  constexpr int64_t kN = 10;
  std::vector<torch::Tensor> gathered(kWorld);
  std::vector<std::thread> ranks;
  std::atomic<int> failures{0};
  for (uint32_t r = 0; r < kWorld; ++r) {
    ranks.emplace_back([&, r] {
      trainer::ProcessGroupOptions options;
      options.backend = trainer::Backend::kGloo;
      options.gloo_interface = "lo";
      std::string backend;
      auto group = trainer::MakeProcessGroup(Store(r), static_cast<int>(r),
                                             kWorld, options, &backend);
      if (!group.ok()) {
        ++failures;
        return;
      }
      std::vector<int64_t> mine;
      for (int64_t i = r; i < kN; i += kWorld) mine.push_back(i);
      gathered[r] =
          trainer::GatherUneven(torch::tensor(mine, torch::kInt64), *group);
    });
  }
  for (std::thread& t : ranks) t.join();
  ASSERT_EQ(failures.load(), 0);
  for (uint32_t r = 0; r < kWorld; ++r) {
    ASSERT_EQ(gathered[r].numel(), kN);
    std::vector<int64_t> values(gathered[r].data_ptr<int64_t>(),
                                gathered[r].data_ptr<int64_t>() + kN);
    EXPECT_EQ(values, (std::vector<int64_t>{0, 3, 6, 9, 1, 4, 7, 2, 5, 8}));
  }
}

}  // namespace
}  // namespace shard
