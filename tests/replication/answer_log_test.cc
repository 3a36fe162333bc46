// AnswerLog (shardd --answer-log): whole lines from many threads at once,
// appended to what the file held, and a clear error for a path it cannot
// open.
#include "server/replication/answer_log.h"

#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "gtest/gtest.h"

namespace shard::server::replication {
namespace {

std::string TempPath(const std::string& name) {
  return (std::filesystem::temp_directory_path() /
          (name + "-" + std::to_string(getpid())))
      .string();
}

TEST(AnswerLogTest, ThreadsAppendWholeLinesAfterWhatTheFileHeld) {
  const std::string path = TempPath("answer-log");
  std::ofstream(path) << "1 1\n";
  constexpr int kThreads = 8;
  constexpr int kLines = 2000;
  {
    auto log = AnswerLog::Open(path);
    ASSERT_TRUE(log.ok()) << log.status();
    std::vector<std::thread> threads;
    for (int t = 0; t < kThreads; ++t) {
      threads.emplace_back([&, t] {
        for (int i = 0; i < kLines; ++i) {
          (*log)->Record(int64_t{1} << 40 | i, 100 + t);
        }
      });
    }
    for (std::thread& thread : threads) thread.join();
  }
  std::ifstream in(path);
  std::string line;
  std::vector<int> per_revision(kThreads, 0);
  int lines = 0;
  while (std::getline(in, line)) {
    ++lines;
    if (lines == 1) {
      EXPECT_EQ(line, "1 1");
      continue;
    }
    std::istringstream fields(line);
    int64_t ns = 0, revision = 0;
    std::string rest;
    ASSERT_TRUE(fields >> ns >> revision) << line;
    EXPECT_FALSE(fields >> rest) << line;
    ASSERT_GE(revision, 100);
    ASSERT_LT(revision, 100 + kThreads);
    ++per_revision[revision - 100];
  }
  EXPECT_EQ(lines, 1 + kThreads * kLines);
  for (int count : per_revision) EXPECT_EQ(count, kLines);
  std::filesystem::remove(path);
}

TEST(AnswerLogTest, APathItCannotOpenIsABadFlag) {
  auto log = AnswerLog::Open("/nonexistent-dir/answers.log");
  ASSERT_TRUE(absl::IsInvalidArgument(log.status())) << log.status();
  EXPECT_NE(log.status().message().find("--answer-log"), std::string::npos);
  EXPECT_NE(log.status().message().find("/nonexistent-dir/answers.log"),
            std::string::npos);
}

}  // namespace
}  // namespace shard::server::replication
