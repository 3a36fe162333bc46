#include "server/cost_store.h"

#include <unistd.h>

#include <atomic>
#include <filesystem>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "absl/synchronization/blocking_counter.h"
#include "absl/synchronization/mutex.h"
#include "absl/synchronization/notification.h"
#include "common/plan/cost_digest.h"
#include "common/storage/file_system.h"
#include "gtest/gtest.h"
#include "server/storage/file_cost_blobs.h"

namespace shard::server {
namespace {

using Table = std::shared_ptr<const plan::CostTable>;

// The real file blobs, counting the reads.
class CountedReads : public storage::CostBlobs {
 public:
  explicit CountedReads(std::shared_ptr<storage::CostBlobs> inner)
      : inner_(std::move(inner)) {}
  absl::Status Write(const std::string& sha256,
                     const std::string& le32) override {
    return inner_->Write(sha256, le32);
  }
  absl::StatusOr<std::string> Read(const std::string& sha256) override {
    ++reads;
    return inner_->Read(sha256);
  }
  absl::StatusOr<std::vector<std::string>> Names() override {
    return inner_->Names();
  }
  absl::Status Remove(const std::string& sha256) override {
    return inner_->Remove(sha256);
  }
  std::string Where(const std::string& sha256) const override {
    return inner_->Where(sha256);
  }

  std::atomic<int> reads{0};

 private:
  std::shared_ptr<storage::CostBlobs> inner_;
};

class CostStoreTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = (std::filesystem::path(::testing::TempDir()) /
            ("cost-store-" + std::to_string(getpid())))
               .string();
    std::filesystem::remove_all(dir_);
    files_ = std::make_shared<storage::FileCostBlobs>(
        storage::PosixFileSystem(), dir_);
    // 100,000 costs, uploaded to a first store (written to the files).
    for (uint32_t i = 0; i < 100000; ++i) {
      const uint32_t cost = 16 + i % 1000;
      le32_.append(reinterpret_cast<const char*>(&cost), 4);
    }
    sha256_ = plan::Sha256Hex(le32_);
    CostStore first(files_, 1 << 30);
    shard::v1::PutCostsRequest piece;
    piece.set_sha256(sha256_);
    piece.set_count(100000);
    for (uint64_t offset = 0; offset < 100000; offset += 50000) {
      piece.set_offset(offset);
      piece.set_costs_le32(le32_.substr(offset * 4, 200000));
      ASSERT_TRUE(first.Put(piece).ok());
    }
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }

  shard::v1::JobSpec SpecOf(const std::string& sha256, uint64_t count) {
    shard::v1::JobSpec spec;
    spec.set_dataset_size(count);
    spec.mutable_batches()->set_costs_sha256(sha256);
    return spec;
  }

  std::string dir_;
  std::shared_ptr<storage::FileCostBlobs> files_;
  std::string le32_;
  std::string sha256_;
};

// After a restart, every caller that asks at once is answered from one read
// (one copy of the bytes in memory, one digest), on the loader thread; a
// later caller on its own thread.
TEST_F(CostStoreTest, ReadBackOnceHoweverManyAskAtOnce) {
  auto counted = std::make_shared<CountedReads>(files_);
  CostStore restarted(counted, 1 << 30);
  constexpr int kCallers = 8;
  absl::BlockingCounter answered(kCallers);
  absl::Mutex mu;
  std::vector<Table> tables;
  std::vector<std::thread> callers;
  for (int i = 0; i < kCallers; ++i) {
    callers.emplace_back([&] {
      restarted.WhenLoaded(sha256_, [&](absl::StatusOr<Table> table) {
        ASSERT_TRUE(table.ok()) << table.status();
        absl::MutexLock lock(&mu);
        tables.push_back(*table);
        answered.DecrementCount();
      });
    });
  }
  for (std::thread& caller : callers) caller.join();
  answered.Wait();
  EXPECT_EQ(counted->reads.load(), 1);
  for (const Table& table : tables) {
    EXPECT_EQ(table, tables.front());
    EXPECT_EQ(table->size(), 100000u);
    EXPECT_EQ(table->At(12345), 16u + 345u);
  }
  const std::thread::id caller = std::this_thread::get_id();
  std::thread::id answered_on;
  restarted.WhenLoaded(sha256_, [&](absl::StatusOr<Table> table) {
    answered_on = std::this_thread::get_id();
  });
  EXPECT_EQ(answered_on, caller);
  EXPECT_EQ(counted->reads.load(), 1);
}

TEST_F(CostStoreTest, ChecksAJobsCostsAfterARestart) {
  CostStore restarted(files_, 1 << 30);
  const auto check = [&](const shard::v1::JobSpec& spec) {
    absl::Notification done;
    absl::Status result;
    restarted.WhenCostsOfChecked(spec, [&](absl::Status status) {
      result = status;
      done.Notify();
    });
    done.WaitForNotification();
    return result;
  };
  EXPECT_TRUE(check(SpecOf(sha256_, 100000)).ok());
  EXPECT_EQ(check(SpecOf(sha256_, 99999)).code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(check(SpecOf(std::string(64, 'b'), 10)).code(),
            absl::StatusCode::kFailedPrecondition);
  EXPECT_TRUE(check(shard::v1::JobSpec()).ok());  // no balanced batches
}

// Damaged costs are reported, never kept: a later call reads them again.
TEST_F(CostStoreTest, DamagedCostsAreReportedEachTime) {
  std::string damaged = le32_;
  damaged[400] ^= 1;
  ASSERT_TRUE(files_->Write(sha256_, damaged).ok());
  auto counted = std::make_shared<CountedReads>(files_);
  CostStore restarted(counted, 1 << 30);
  for (int attempt = 0; attempt < 2; ++attempt) {
    absl::Notification done;
    restarted.WhenLoaded(sha256_, [&](absl::StatusOr<Table> table) {
      EXPECT_EQ(table.status().code(), absl::StatusCode::kDataLoss);
      done.Notify();
    });
    done.WaitForNotification();
  }
  EXPECT_EQ(counted->reads.load(), 2);
}

}  // namespace
}  // namespace shard::server
