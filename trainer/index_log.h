// shard-train --log-indices: appends "EPOCH RANK INDEX" for every sample a
// step trains and counts the lines. Written and flushed as the step starts,
// before its collective: a SIGKILL loses nothing that any rank trained (a
// step's gradients reach no rank before every rank logged it); the lines
// of a step the kill cut short lie past every committed position. Not
// thread-safe (the training loop's).
#ifndef TRAINER_INDEX_LOG_H_
#define TRAINER_INDEX_LOG_H_

#include <cstdint>
#include <cstdio>
#include <vector>

namespace shard::trainer {

class IndexLog {
 public:
  // Owns `file` (closes it); null: nothing is written.
  explicit IndexLog(std::FILE* file) : file_(file) {}
  ~IndexLog();
  IndexLog(const IndexLog&) = delete;
  IndexLog& operator=(const IndexLog&) = delete;

  void Write(uint64_t epoch, uint32_t rank,
             const std::vector<int64_t>& indices);
  uint64_t lines() const { return lines_; }

 private:
  std::FILE* file_;
  uint64_t lines_ = 0;
};

}  // namespace shard::trainer

#endif  // TRAINER_INDEX_LOG_H_
