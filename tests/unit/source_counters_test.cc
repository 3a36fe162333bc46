// SourceCounters: indices counted by source with bounded labels;
// SourceCounterTable: one set of counters per mixture job, dropped with
// the job.
#include "server/plans/source_counters.h"

#include <set>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "common/plan/spec/job_spec.h"
#include "gtest/gtest.h"
#include "server/plans/source_counter_table.h"

namespace shard::server {
namespace {

using Counts = std::vector<std::pair<std::string, uint64_t>>;

// A mixture of `sources` sources, source k of k + 1 samples.
shard::v1::JobSpec MixtureOf(int sources) {
  shard::v1::JobSpec spec;
  spec.set_world_size(1);
  for (int k = 0; k < sources; ++k) {
    shard::v1::Source* source = spec.add_sources();
    source->set_name(absl::StrCat("s", k));
    source->set_size(k + 1);
  }
  absl::StatusOr<shard::v1::JobSpec> normal =
      plan::NormalizeJobSpec(spec, UINT64_MAX);
  EXPECT_TRUE(normal.ok()) << normal.status();
  return *normal;
}

// Tallies `indices` as one delivered chunk.
void Deliver(SourceCounters& counters, const std::vector<uint64_t>& indices) {
  std::vector<uint64_t> tally(counters.tally_size(), 0);
  counters.Tally(indices, tally);
  counters.Add(tally);
}

TEST(SourceCountersTest, CountsEachIndexUnderItsSource) {
  SourceCounters counters(MixtureOf(3));  // s0: 0, s1: 1..2, s2: 3..5
  Deliver(counters, {0, 1, 2, 5, 3, 0});
  Deliver(counters, {4});
  EXPECT_EQ(counters.Counts(), (Counts{{"s0", 2}, {"s1", 2}, {"s2", 3}}));
}

TEST(SourceCountersTest, SourcesAfterTheSixteenthCountTogether) {
  SourceCounters counters(MixtureOf(20));
  // Source k starts at k(k+1)/2: s15 at 120, s16 at 136, s19 at 190..209.
  Deliver(counters, {120, 135, 136, 190, 209});
  const Counts counts = counters.Counts();
  ASSERT_EQ(counts.size(), SourceCounters::kMaxNamedSources + 1);
  EXPECT_EQ(counts[15], (std::pair<std::string, uint64_t>{"s15", 2}));
  EXPECT_EQ(counts[16], (std::pair<std::string, uint64_t>{"(other)", 3}));
}

// Any valid source name, "_other" included, differs from the catch-all:
// two series with the same labels in one scrape are one too many.
TEST(SourceCountersTest, NoSourceNameIsTheCatchAllLabel) {
  shard::v1::JobSpec spec = MixtureOf(20);
  spec.mutable_sources(3)->set_name("_other");
  spec.mutable_sources(4)->set_name("other");
  std::set<std::string> labels;
  for (const auto& [label, count] : SourceCounters(spec).Counts()) {
    EXPECT_TRUE(labels.insert(label).second) << "label " << label << " twice";
  }
  EXPECT_EQ(labels.size(), SourceCounters::kMaxNamedSources + 1);
}

TEST(SourceCounterTableTest, OneSetPerMixtureJobDroppedWithTheJob) {
  SourceCounterTable table;
  shard::v1::JobSpec plain;
  plain.set_dataset_size(10);
  EXPECT_EQ(
      table.ForJob(1, plain, [] { return absl::flat_hash_set<uint64_t>{}; }),
      nullptr);
  const auto live = [] { return absl::flat_hash_set<uint64_t>{7, 8}; };
  std::shared_ptr<SourceCounters> seven = table.ForJob(7, MixtureOf(2), live);
  ASSERT_NE(seven, nullptr);
  EXPECT_EQ(table.ForJob(7, MixtureOf(2), live), seven);
  EXPECT_EQ(table.Find(7), seven);
  EXPECT_EQ(table.Find(8), nullptr);  // no stream yet
  // Making job 8's drops job 7's once 7 is gone.
  table.ForJob(8, MixtureOf(2),
               [] { return absl::flat_hash_set<uint64_t>{8}; });
  EXPECT_EQ(table.Find(7), nullptr);
  EXPECT_NE(table.Find(8), nullptr);
  table.Retain({});
  EXPECT_EQ(table.Find(8), nullptr);
}

}  // namespace
}  // namespace shard::server
