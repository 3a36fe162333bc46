// RendezvousStore: every operation against open, ended, never-opened and
// draining spaces; limits; waits woken by keys and by the generation's end.
#include "server/core/rendezvous_store.h"

#include <atomic>
#include <functional>
#include <string>
#include <thread>
#include <vector>

#include "absl/time/clock.h"
#include "gtest/gtest.h"
#include "tests/support/await_reply.h"

namespace shard::server {
namespace {

using Scope = RendezvousStore::Scope;

const Scope kLive{"job", 3};
absl::Time Now() { return absl::Now(); }
absl::Time Later() { return absl::Now() + absl::Seconds(60); }

// StartGet and StartWait, blocking until the answer.
absl::StatusOr<std::optional<std::string>> Get(RendezvousStore& store,
                                               const Scope& scope,
                                               const std::string& key,
                                               absl::Time deadline) {
  return testing::AwaitReply<std::optional<std::string>>([&](auto reply) {
    store.StartGet(scope, key, deadline, std::move(reply));
  });
}
absl::StatusOr<bool> Wait(RendezvousStore& store, const Scope& scope,
                          const std::vector<std::string>& keys,
                          absl::Time deadline) {
  return testing::AwaitReply<bool>([&](auto reply) {
    store.StartWait(scope, keys, deadline, std::move(reply));
  });
}

// EndGeneration and EndJob as the coordinator calls them, running what
// they leave to their caller once they return.
void EndGeneration(RendezvousStore& store, const Scope& scope) {
  AfterUnlock then;
  store.EndGeneration(scope, then);
}
void EndJob(RendezvousStore& store, const std::string& job_id) {
  AfterUnlock then;
  store.EndJob(job_id, then);
}

// Every operation of the store on one scope, as a status.
std::vector<std::pair<
    std::string, std::function<absl::Status(RendezvousStore&, const Scope&)>>>
AllOperations() {
  return {
      {"Set",
       [](RendezvousStore& s, const Scope& c) { return s.Set(c, "k", "v"); }},
      {"Get", [](RendezvousStore& s,
                 const Scope& c) { return Get(s, c, "k", Now()).status(); }},
      {"Add", [](RendezvousStore& s,
                 const Scope& c) { return s.Add(c, "n", 1).status(); }},
      {"CompareSet",
       [](RendezvousStore& s, const Scope& c) {
         return s.CompareSet(c, "k", "", "v").status();
       }},
      {"Wait",
       [](RendezvousStore& s, const Scope& c) {
         return Wait(s, c, {"k"}, Now()).status();
       }},
      {"Delete", [](RendezvousStore& s,
                    const Scope& c) { return s.Delete(c, "k").status(); }},
      {"Count",
       [](RendezvousStore& s, const Scope& c) { return s.Count(c).status(); }},
  };
}

TEST(RendezvousStoreTest, OperationsWorkOnAnOpenSpace) {
  RendezvousStore store;
  store.OpenGeneration(kLive);
  ASSERT_TRUE(store.Set(kLive, "k", "v").ok());
  EXPECT_EQ(**Get(store, kLive, "k", Now()), "v");
  EXPECT_FALSE(Get(store, kLive, "missing", Now())->has_value());
  EXPECT_EQ(*store.Add(kLive, "n", 5), 5);
  EXPECT_EQ(*store.Add(kLive, "n", -7), -2);
  EXPECT_EQ(*store.CompareSet(kLive, "k", "v", "w"), "w");
  EXPECT_EQ(*store.CompareSet(kLive, "k", "nope", "x"), "w");
  EXPECT_EQ(*store.CompareSet(kLive, "new", "", "fresh"), "fresh");
  EXPECT_EQ(*store.CompareSet(kLive, "absent", "expected", "x"), "expected");
  EXPECT_TRUE(*Wait(store, kLive, {"k", "n"}, Now()));
  EXPECT_FALSE(*Wait(store, kLive, {"k", "missing"}, Now()));
  EXPECT_EQ(*store.Count(kLive), 3);
  EXPECT_TRUE(*store.Delete(kLive, "k"));
  EXPECT_FALSE(*store.Delete(kLive, "k"));
  EXPECT_EQ(*store.Count(kLive), 2);
  // Opening an open space again keeps its keys.
  store.OpenGeneration(kLive);
  EXPECT_EQ(*store.Count(kLive), 2);
}

// A call that passed the caller's generation check just before the
// generation ended must not re-create the space (that used to leak keys
// into a job re-created under the same id).
TEST(RendezvousStoreTest,
     EveryOperationOnAnEndedSpaceIsAbortedAndCreatesNothing) {
  for (const auto& [name, operation] : AllOperations()) {
    RendezvousStore store;
    store.OpenGeneration(kLive);
    ASSERT_TRUE(store.Set(kLive, "k", "v").ok());
    EndGeneration(store, kLive);
    EXPECT_EQ(operation(store, kLive).code(), absl::StatusCode::kAborted)
        << name;
    EXPECT_EQ(store.open_spaces(), 0u) << name;
  }
}

TEST(RendezvousStoreTest,
     EveryOperationOnANeverOpenedOrForgottenSpaceIsAborted) {
  for (const auto& [name, operation] : AllOperations()) {
    RendezvousStore store;
    EXPECT_EQ(operation(store, kLive).code(), absl::StatusCode::kAborted)
        << name;
    store.OpenGeneration(kLive);
    store.OpenGeneration({"job", 4});
    store.OpenGeneration({"other", 1});
    EndJob(store, "job");
    EXPECT_EQ(operation(store, kLive).code(), absl::StatusCode::kAborted)
        << name;
    EXPECT_EQ(operation(store, {"job", 4}).code(), absl::StatusCode::kAborted)
        << name;
    EXPECT_TRUE(operation(store, {"other", 1}).ok()) << name;
    EXPECT_EQ(store.open_spaces(), 1u) << name;
  }
}

TEST(RendezvousStoreTest, EveryOperationWhileDrainingIsUnavailable) {
  for (const auto& [name, operation] : AllOperations()) {
    RendezvousStore store;
    store.OpenGeneration(kLive);
    store.Drain();
    EXPECT_EQ(operation(store, kLive).code(), absl::StatusCode::kUnavailable)
        << name;
  }
}

TEST(RendezvousStoreTest, EndingAGenerationFreesItsKeysOnly) {
  RendezvousStore store;
  store.OpenGeneration(kLive);
  store.OpenGeneration({"job", 5});
  ASSERT_TRUE(store.Set(kLive, "k", std::string(1000, 'x')).ok());
  ASSERT_TRUE(store.Set({"job", 5}, "k", "v").ok());
  EndGeneration(store, kLive);
  EXPECT_EQ(store.open_spaces(), 1u);
  EXPECT_EQ(**Get(store, {"job", 5}, "k", Now()), "v");
}

TEST(RendezvousStoreTest, EnforcesKeyValueAndCountLimits) {
  RendezvousLimits limits;
  limits.max_key_bytes = 4;
  limits.max_value_bytes = 8;
  limits.max_keys_per_space = 2;
  RendezvousStore store(limits);
  store.OpenGeneration(kLive);
  EXPECT_EQ(store.Set(kLive, "", "v").code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(store.Set(kLive, "toolong", "v").code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(store.Set(kLive, "k", "123456789").code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(store.CompareSet(kLive, "k", "", "123456789").status().code(),
            absl::StatusCode::kInvalidArgument);
  ASSERT_TRUE(store.Set(kLive, "a", "1").ok());
  ASSERT_TRUE(store.Set(kLive, "b", "2").ok());
  EXPECT_EQ(store.Set(kLive, "c", "3").code(),
            absl::StatusCode::kResourceExhausted);
  EXPECT_EQ(store.Add(kLive, "c", 1).status().code(),
            absl::StatusCode::kResourceExhausted);
  EXPECT_TRUE(store.Set(kLive, "a", "over").ok());  // Existing key.
}

// All spaces together stay within max_total_bytes, every write kind is
// counted, and ending a generation gives its bytes back.
TEST(RendezvousStoreTest, TotalByteBudgetCoversAllSpacesAndIsFreedAtTheEnd) {
  const std::string value(1000, 'v');
  const size_t entry = 2 + value.size() + RendezvousStore::kEntryOverheadBytes;
  RendezvousLimits limits;
  limits.max_total_bytes = 4 * entry;
  RendezvousStore store(limits);
  const Scope first("job", 1), second("other", 2);
  store.OpenGeneration(first);
  store.OpenGeneration(second);
  ASSERT_TRUE(store.Set(first, "k1", value).ok());
  ASSERT_TRUE(store.Set(first, "k2", value).ok());
  ASSERT_TRUE(store.Set(second, "k3", value).ok());
  ASSERT_TRUE(store.Set(second, "k4", value).ok());
  EXPECT_EQ(store.total_bytes(), 4 * entry);
  absl::Status full = store.Set(second, "k5", value);
  EXPECT_EQ(full.code(), absl::StatusCode::kResourceExhausted) << full;
  EXPECT_NE(full.message().find("--store-max-bytes"), std::string::npos);
  EXPECT_EQ(store.CompareSet(second, "k6", "", value).status().code(),
            absl::StatusCode::kResourceExhausted);
  EXPECT_EQ(store.Set(second, "k4", value + "more").code(),
            absl::StatusCode::kResourceExhausted);
  // Replacing a value by one of the same size fits.
  EXPECT_TRUE(store.Set(second, "k4", std::string(1000, 'w')).ok());
  EXPECT_EQ(store.Count(second).value(), 2);

  EndGeneration(store, first);
  EXPECT_EQ(store.total_bytes(), 2 * entry);
  ASSERT_TRUE(store.Set(second, "k5", value).ok());
  EXPECT_EQ(store.Delete(second, "k5").value(), true);
  EXPECT_EQ(store.total_bytes(), 2 * entry);
  EndJob(store, "other");
  EXPECT_EQ(store.total_bytes(), 0u);
}

TEST(RendezvousStoreTest, AddRefusesOverflowAndNonIntegers) {
  RendezvousStore store;
  store.OpenGeneration(kLive);
  ASSERT_EQ(*store.Add(kLive, "n", INT64_MAX), INT64_MAX);
  EXPECT_EQ(store.Add(kLive, "n", 1).status().code(),
            absl::StatusCode::kOutOfRange);
  EXPECT_EQ(**Get(store, kLive, "n", Now()), std::to_string(INT64_MAX));
  ASSERT_EQ(*store.Add(kLive, "m", INT64_MIN), INT64_MIN);
  EXPECT_EQ(store.Add(kLive, "m", -1).status().code(),
            absl::StatusCode::kOutOfRange);
  ASSERT_TRUE(store.Set(kLive, "text", "abc").ok());
  EXPECT_EQ(store.Add(kLive, "text", 1).status().code(),
            absl::StatusCode::kFailedPrecondition);
}

TEST(RendezvousStoreTest, WaitsWakeWhenTheKeysArrive) {
  RendezvousStore store;
  store.OpenGeneration(kLive);
  absl::StatusOr<std::optional<std::string>> got;
  absl::StatusOr<bool> waited;
  std::thread getter([&] { got = Get(store, kLive, "k", Later()); });
  std::thread waiter([&] { waited = Wait(store, kLive, {"k", "j"}, Later()); });
  absl::SleepFor(absl::Milliseconds(50));
  ASSERT_TRUE(store.Set(kLive, "k", "v").ok());
  ASSERT_TRUE(store.Set(kLive, "j", "w").ok());
  getter.join();
  waiter.join();
  ASSERT_TRUE(got.ok()) << got.status();
  EXPECT_EQ(**got, "v");
  ASSERT_TRUE(waited.ok()) << waited.status();
  EXPECT_TRUE(*waited);
}

// No thread is kept to answer parked calls: the setter answers the calls
// its key settles, once it let go of the store's lock, before Set returns.
TEST(RendezvousStoreTest, TheSetterAnswersTheCallsItSettlesOutsideTheLock) {
  RendezvousStore store;
  store.OpenGeneration(kLive);
  std::thread::id answered_on;
  bool lock_free_when_answered = false;
  store.StartGet(kLive, "k", Later(),
                 [&](absl::StatusOr<std::optional<std::string>> value) {
                   answered_on = std::this_thread::get_id();
                   // Another store call from the answer would deadlock if
                   // the store's lock were still held.
                   lock_free_when_answered = store.Count(kLive).ok();
                   EXPECT_TRUE(value.ok() && *value == "v");
                 });
  EXPECT_EQ(answered_on, std::thread::id());  // Parked, not answered.
  ASSERT_TRUE(store.Set(kLive, "k", "v").ok());
  EXPECT_EQ(answered_on, std::this_thread::get_id());
  EXPECT_TRUE(lock_free_when_answered);
}

TEST(RendezvousStoreTest, WaitsEndWithTheGenerationAndOnDrain) {
  for (bool drain : {false, true}) {
    RendezvousStore store;
    store.OpenGeneration(kLive);
    std::atomic<int> done{0};
    absl::Status got, waited;
    std::thread getter([&] {
      got = Get(store, kLive, "never", Later()).status();
      ++done;
    });
    std::thread waiter([&] {
      waited = Wait(store, kLive, {"never"}, Later()).status();
      ++done;
    });
    absl::SleepFor(absl::Milliseconds(50));
    EXPECT_EQ(done.load(), 0);  // Both still waiting for the key.
    if (drain) {
      store.Drain();
    } else {
      EndGeneration(store, kLive);
    }
    getter.join();
    waiter.join();
    const absl::StatusCode expected =
        drain ? absl::StatusCode::kUnavailable : absl::StatusCode::kAborted;
    EXPECT_EQ(got.code(), expected) << got;
    EXPECT_EQ(waited.code(), expected) << waited;
  }
}

TEST(RendezvousStoreTest, WaitsEndAtTheirDeadline) {
  RendezvousStore store;
  store.OpenGeneration(kLive);
  absl::StatusOr<std::optional<std::string>> got =
      Get(store, kLive, "k", absl::Now() + absl::Milliseconds(20));
  ASSERT_TRUE(got.ok());
  EXPECT_FALSE(got->has_value());
  EXPECT_FALSE(
      *Wait(store, kLive, {"k"}, absl::Now() + absl::Milliseconds(20)));
}

}  // namespace
}  // namespace shard::server
