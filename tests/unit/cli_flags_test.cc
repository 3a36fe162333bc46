// CliFlags: both flag spellings, typed values with their errors, and
// unknown or incomplete flags refused naming what is accepted.
#include "client/cli_flags.h"

#include <string>
#include <vector>

#include "absl/time/time.h"
#include "gtest/gtest.h"

namespace shard::client {
namespace {

absl::StatusOr<CliFlags> Parse(const std::vector<std::string>& args) {
  return CliFlags::Parse(args, {"job", "world-size", "ratio", "watch", "wait"});
}

TEST(CliFlagsTest, AcceptsBothSpellingsAndTypedValues) {
  absl::StatusOr<CliFlags> flags =
      Parse({"--job", "j1", "--world-size=8", "--ratio", "0.25", "--watch=true",
             "--wait", "90s"});
  ASSERT_TRUE(flags.ok()) << flags.status();
  EXPECT_EQ(*flags->String("job"), "j1");
  EXPECT_EQ(*flags->Uint64("world-size"), 8u);
  EXPECT_DOUBLE_EQ(*flags->Double("ratio", 1.0), 0.25);
  EXPECT_TRUE(*flags->Bool("watch", false));
  EXPECT_EQ(*flags->Duration("wait", absl::ZeroDuration()), absl::Seconds(90));
}

TEST(CliFlagsTest, AbsentFlagsTakeTheirFallbackOrAreReportedMissing) {
  absl::StatusOr<CliFlags> flags = Parse({});
  ASSERT_TRUE(flags.ok());
  EXPECT_FALSE(flags->Has("job"));
  EXPECT_EQ(flags->String("job", "default"), "default");
  EXPECT_EQ(*flags->Uint64("world-size", 4), 4u);
  const absl::Status missing = flags->String("job").status();
  EXPECT_EQ(missing.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(missing.message().find("job"), absl::string_view::npos);
}

TEST(CliFlagsTest, AnUnknownFlagIsRefusedNamingTheAcceptedOnes) {
  absl::StatusOr<CliFlags> flags = Parse({"--wrold-size", "8"});
  ASSERT_FALSE(flags.ok());
  EXPECT_EQ(flags.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(flags.status().message().find("wrold-size"),
            absl::string_view::npos);
  EXPECT_NE(flags.status().message().find("world-size"),
            absl::string_view::npos);
}

TEST(CliFlagsTest, AFlagWithoutItsValueOrAStrayWordIsRefused) {
  EXPECT_FALSE(Parse({"--job"}).ok());
  EXPECT_FALSE(Parse({"job", "j1"}).ok());
}

TEST(CliFlagsTest, BadValuesAreRefusedNamingTheFlag) {
  absl::StatusOr<CliFlags> flags = Parse(
      {"--world-size", "-3", "--ratio", "x", "--watch", "yes", "--wait", "9"});
  ASSERT_TRUE(flags.ok());
  for (const absl::Status& status :
       {flags->Uint64("world-size").status(),
        flags->Double("ratio", 1).status(),
        flags->Bool("watch", false).status(),
        flags->Duration("wait", absl::ZeroDuration()).status()}) {
    EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument) << status;
  }
  EXPECT_NE(flags->Uint64("world-size").status().message().find("world-size"),
            absl::string_view::npos);
}

}  // namespace
}  // namespace shard::client
