#include "trainer/source_tally.h"

#include "absl/strings/str_cat.h"
#include "common/plan/mixtures/mixture.h"

namespace shard::trainer {
namespace {

std::vector<std::string> SourceNames(const shard::v1::JobSpec& spec) {
  std::vector<std::string> names;
  for (const shard::v1::Source& source : spec.sources()) {
    names.push_back(source.name());
  }
  return names;
}

// "NAME=COUNT ...".
std::string NameEach(const std::vector<std::string>& names,
                     const std::vector<uint64_t>& counts) {
  std::string line;
  for (size_t k = 0; k < names.size(); ++k) {
    absl::StrAppend(&line, k > 0 ? " " : "", names[k], "=", counts[k]);
  }
  return line;
}

}  // namespace

std::string PlannedPerSource(const shard::v1::JobSpec& spec) {
  if (spec.sources_size() == 0) return "";
  return NameEach(SourceNames(spec), plan::SourceCounts(spec));
}

SourceTally::SourceTally(const shard::v1::JobSpec& spec) {
  if (spec.sources_size() == 0) return;
  names_ = SourceNames(spec);
  ends_ = plan::SourceEnds(spec);
  counts_.assign(ends_.size(), 0);
}

void SourceTally::Add(const std::vector<int64_t>& indices) {
  if (!mixture()) return;
  for (int64_t index : indices) {
    const size_t k = plan::SourceOf(ends_, static_cast<uint64_t>(index));
    if (k < counts_.size()) ++counts_[k];
  }
}

std::string SourceTally::Line() const { return NameEach(names_, counts_); }

}  // namespace shard::trainer
