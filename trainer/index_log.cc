#include "trainer/index_log.h"

namespace shard::trainer {

IndexLog::~IndexLog() {
  if (file_ != nullptr) std::fclose(file_);
}

void IndexLog::Write(uint64_t epoch, uint32_t rank,
                     const std::vector<int64_t>& indices) {
  if (file_ == nullptr) return;
  for (int64_t index : indices) {
    std::fprintf(file_, "%llu %u %lld\n",
                 static_cast<unsigned long long>(epoch), rank,
                 static_cast<long long>(index));
  }
  std::fflush(file_);
  lines_ += indices.size();
}

}  // namespace shard::trainer
