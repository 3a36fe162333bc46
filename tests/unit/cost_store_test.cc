#include "server/plans/cost_store.h"

#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <filesystem>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "absl/synchronization/blocking_counter.h"
#include "absl/synchronization/mutex.h"
#include "absl/synchronization/notification.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "common/plan/batches/cost_digest.h"
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

// The real file blobs; while a completed upload is written, the costs are
// read back for another caller (a create, join or stream after a restart).
class ReadBackDuringWrite : public CountedReads {
 public:
  using CountedReads::CountedReads;
  absl::Status Write(const std::string& sha256,
                     const std::string& le32) override {
    absl::Notification loaded;
    store->WhenLoaded(sha256, [&](absl::StatusOr<Table>) { loaded.Notify(); });
    loaded.WaitForNotification();
    return CountedReads::Write(sha256, le32);
  }

  CostStore* store = nullptr;
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
    CostStore first(files_, {.max_bytes = 1 << 30});
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

  // Uploads `le32` to `store` in pieces of 50,000 costs, up to `upto`.
  static absl::StatusOr<shard::v1::PutCostsResponse> Upload(
      CostStore& store, const std::string& le32, uint64_t upto) {
    shard::v1::PutCostsRequest piece;
    piece.set_sha256(plan::Sha256Hex(le32));
    piece.set_count(le32.size() / 4);
    absl::StatusOr<shard::v1::PutCostsResponse> answer;
    for (uint64_t offset = 0; offset < upto; offset += 50000) {
      piece.set_offset(offset);
      piece.set_costs_le32(le32.substr(offset * 4, 200000));
      answer = store.Put(piece);
      if (!answer.ok()) return answer;
    }
    return answer;
  }

  // 100,000 costs other than le32_'s, by `seed`.
  static std::string OtherCosts(uint32_t seed) {
    std::string le32;
    for (uint32_t i = 0; i < 100000; ++i) {
      const uint32_t cost = 1 + (i * 7 + seed) % 5000;
      le32.append(reinterpret_cast<const char*>(&cost), 4);
    }
    return le32;
  }

  // Options with a 10-minute TTL and the test's clock (now_).
  CostStore::Options OnTestClock() {
    return {.max_bytes = 1 << 30,
            .unclaimed_ttl = absl::Minutes(10),
            .now = [this] { return now_; }};
  }

  // Waits (bounded) until the blob of `sha256` is gone.
  bool BlobRemoved(const std::string& sha256) {
    for (int i = 0; i < 500; ++i) {
      absl::StatusOr<std::vector<std::string>> names = files_->Names();
      if (names.ok() &&
          std::find(names->begin(), names->end(), sha256) == names->end()) {
        return true;
      }
      absl::SleepFor(absl::Milliseconds(10));
    }
    return false;
  }

  absl::Time now_ = absl::UnixEpoch();
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
  CostStore restarted(counted, {.max_bytes = 1 << 30});
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

// The costs read back from the blobs while an upload of them completes
// are counted once, and 100,000 costs of 2 bytes take 200,000 bytes.
TEST_F(CostStoreTest, CostsReadBackWhileTheirUploadCompletesCountOnce) {
  auto blobs = std::make_shared<ReadBackDuringWrite>(files_);
  CostStore restarted(blobs, {.max_bytes = 1 << 30});
  blobs->store = &restarted;
  absl::StatusOr<shard::v1::PutCostsResponse> done =
      Upload(restarted, le32_, 100000);
  ASSERT_TRUE(done.ok()) << done.status();
  EXPECT_TRUE(done->complete());
  EXPECT_EQ(blobs->reads.load(), 1);
  EXPECT_EQ(restarted.MemoryBytes(), 200000u);
}

// An upload answered complete because its costs became resident meanwhile
// gives back what it staged at once, not after the TTL.
TEST_F(CostStoreTest, AnUploadOfResidentCostsGivesItsStagedBytesBack) {
  CostStore restarted(files_, {.max_bytes = 1 << 30});
  ASSERT_TRUE(Upload(restarted, le32_, 50000).ok());  // half staged
  EXPECT_EQ(restarted.MemoryBytes(), 200000u);
  absl::Notification loaded;
  restarted.WhenLoaded(sha256_,
                       [&](absl::StatusOr<Table>) { loaded.Notify(); });
  loaded.WaitForNotification();
  EXPECT_EQ(restarted.MemoryBytes(), 400000u);  // staged + the table
  absl::StatusOr<shard::v1::PutCostsResponse> done =
      Upload(restarted, le32_, 100000);
  ASSERT_TRUE(done.ok()) << done.status();
  EXPECT_TRUE(done->complete());
  EXPECT_EQ(restarted.MemoryBytes(), 200000u);
}

TEST_F(CostStoreTest, ChecksAJobsCostsAfterARestart) {
  CostStore restarted(files_, {.max_bytes = 1 << 30});
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
  CostStore restarted(counted, {.max_bytes = 1 << 30});
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

// The costs of a deleted job give their memory back at once and their blob
// goes: five jobs one after another, each over other costs, fit a budget
// that holds one upload (400,000 bytes staged) and one table (200,000).
TEST_F(CostStoreTest, TheLastJobsDeletionGivesItsCostsBack) {
  CostStore store(files_, {.max_bytes = 1000000});
  for (uint32_t job = 0; job < 5; ++job) {
    const std::string le32 = OtherCosts(job);
    const std::string sha256 = plan::Sha256Hex(le32);
    absl::StatusOr<shard::v1::PutCostsResponse> put =
        Upload(store, le32, 100000);
    ASSERT_TRUE(put.ok()) << "job " << job << ": " << put.status();
    ASSERT_TRUE(put->complete());
    store.Claim(sha256);  // created
    store.Claim(sha256);  // a second job over the same costs
    store.Unclaim(sha256);
    EXPECT_EQ(store.MemoryBytes(), 200000u);  // the other job still names them
    store.Unclaim(sha256);
    EXPECT_EQ(store.MemoryBytes(), 0u);
    EXPECT_TRUE(BlobRemoved(sha256));
  }
}

// Costs uploaded again for a new job while the last job over them is
// deleted stay for that job; costs no job names go after the TTL.
TEST_F(CostStoreTest, CostsNoJobNamesGoAfterTheTtl) {
  CostStore store(files_, OnTestClock());
  const std::string le32 = OtherCosts(1);
  const std::string sha256 = plan::Sha256Hex(le32);
  ASSERT_TRUE(Upload(store, le32, 100000).ok());
  store.Claim(sha256);
  ASSERT_TRUE(Upload(store, le32, 1).ok());  // a new job's client: resident
  store.Unclaim(sha256);
  EXPECT_EQ(store.MemoryBytes(), 200000u);
  now_ += absl::Minutes(9);
  store.ExpireUnclaimed();
  EXPECT_EQ(store.MemoryBytes(), 200000u);
  now_ += absl::Minutes(1);
  store.ExpireUnclaimed();
  EXPECT_EQ(store.MemoryBytes(), 0u);
  EXPECT_TRUE(BlobRemoved(sha256));
}

// An upload that stalls gives its reservation back after the TTL; a piece
// sent after that (or after a restart) is answered with what is held, and
// the upload goes on from there.
TEST_F(CostStoreTest, AStalledUploadExpiresAndTheClientGoesOnFromWhatIsHeld) {
  CostStore store(files_, OnTestClock());
  const std::string le32 = OtherCosts(2);
  ASSERT_TRUE(Upload(store, le32, 50000).ok());
  EXPECT_EQ(store.MemoryBytes(), 200000u);
  now_ += absl::Minutes(10);
  store.ExpireUnclaimed();
  EXPECT_EQ(store.MemoryBytes(), 0u);
  shard::v1::PutCostsRequest piece;
  piece.set_sha256(plan::Sha256Hex(le32));
  piece.set_count(100000);
  piece.set_offset(50000);
  piece.set_costs_le32(le32.substr(200000, 200000));
  absl::StatusOr<shard::v1::PutCostsResponse> answer = store.Put(piece);
  ASSERT_TRUE(answer.ok()) << answer.status();
  EXPECT_EQ(answer->received(), 0u);
  EXPECT_FALSE(answer->complete());
  answer = Upload(store, le32, 100000);
  ASSERT_TRUE(answer.ok()) << answer.status();
  EXPECT_TRUE(answer->complete());
}

// After a restart, costs in the blobs no job names (an upload whose
// CreateJob has not come yet) stay for the TTL, then go.
TEST_F(CostStoreTest, StoredCostsNoJobNamesStayForTheTtlAfterARestart) {
  CostStore restarted(files_, OnTestClock());
  restarted.AdoptStored();
  restarted.ExpireUnclaimed();
  absl::Notification loaded;
  restarted.WhenLoaded(sha256_, [&](absl::StatusOr<Table> table) {
    EXPECT_TRUE(table.ok()) << table.status();
    loaded.Notify();
  });
  loaded.WaitForNotification();
  now_ += absl::Minutes(10);
  restarted.ExpireUnclaimed();
  EXPECT_EQ(restarted.MemoryBytes(), 0u);
  EXPECT_TRUE(BlobRemoved(sha256_));
}

}  // namespace
}  // namespace shard::server
