// The command-line conventions every binary shares (common/cli): durations
// need a unit, usage errors exit 2 naming the option, --help and --version
// exit 0, and the shared job-spec options build the spec they describe.
#include "common/cli/command_line.h"

#include <algorithm>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_split.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"
#include "client/job_spec_flags.h"
#include "gtest/gtest.h"

namespace shard::cli {
namespace {

// Parses `args` (after the program name) with the app; the exit code
// Parse returned (nullopt: go on).
std::optional<int> ParseArgs(CLI::App& app, std::vector<std::string> args) {
  args.insert(args.begin(), "prog");
  std::vector<const char*> argv;
  for (const std::string& arg : args) argv.push_back(arg.c_str());
  return Parse(app, static_cast<int>(argv.size()), argv.data());
}

TEST(CommandLineTest, DurationsTakeAUnit) {
  CLI::App app;
  Configure(app, "prog");
  absl::Duration lease = absl::Seconds(10);
  AddDuration(app, "--lease", &lease, "lease");
  EXPECT_EQ(ParseArgs(app, {"--lease", "90s"}), std::nullopt);
  EXPECT_EQ(lease, absl::Seconds(90));
  EXPECT_EQ(ParseArgs(app, {"--lease=1h30m"}), std::nullopt);
  EXPECT_EQ(lease, absl::Minutes(90));
  EXPECT_EQ(ParseArgs(app, {"--lease", "0"}), std::nullopt);
  EXPECT_EQ(lease, absl::ZeroDuration());
}

TEST(CommandLineTest, ARepeatedOptionTakesItsLastValue) {
  CLI::App app;
  Configure(app, "prog");
  absl::Duration wait = absl::Seconds(1);
  std::string job;
  AddDuration(app, "--wait", &wait, "wait");
  app.add_option("--job", job, "job");
  EXPECT_EQ(ParseArgs(app, {"--wait", "1m", "--job", "a", "--wait=30s", "--job",
                            "b"}),
            std::nullopt);
  EXPECT_EQ(wait, absl::Seconds(30));
  EXPECT_EQ(job, "b");
}

TEST(CommandLineTest, ABareNumberSaysToGiveAUnit) {
  CLI::App app;
  Configure(app, "prog");
  absl::Duration lease = absl::Seconds(10);
  AddDuration(app, "--lease", &lease, "lease");
  testing::internal::CaptureStderr();
  EXPECT_EQ(ParseArgs(app, {"--lease", "10"}), kExitUsage);
  const std::string error = testing::internal::GetCapturedStderr();
  EXPECT_NE(error.find("--lease"), std::string::npos) << error;
  EXPECT_NE(error.find("give a unit, e.g. 10s"), std::string::npos) << error;
  EXPECT_NE(error.find("prog --help"), std::string::npos) << error;
  EXPECT_EQ(lease, absl::Seconds(10));
}

TEST(CommandLineTest, NegativeOrMalformedDurationsAreUsageErrors) {
  CLI::App app;
  Configure(app, "prog");
  absl::Duration wait = absl::Seconds(1);
  AddDuration(app, "--wait", &wait, "wait");
  testing::internal::CaptureStderr();
  EXPECT_EQ(ParseArgs(app, {"--wait", "-5s"}), kExitUsage);
  EXPECT_EQ(ParseArgs(app, {"--wait", "soon"}), kExitUsage);
  testing::internal::GetCapturedStderr();
  EXPECT_EQ(wait, absl::Seconds(1));
}

TEST(CommandLineTest, UnknownOptionsAndMissingRequiredOnesExit2) {
  CLI::App app;
  Configure(app, "prog");
  std::string job;
  app.add_option("--job", job, "job")->required();
  testing::internal::CaptureStderr();
  EXPECT_EQ(ParseArgs(app, {"--job", "j", "--wrold-size", "8"}), kExitUsage);
  EXPECT_EQ(ParseArgs(app, {}), kExitUsage);
  const std::string error = testing::internal::GetCapturedStderr();
  EXPECT_NE(error.find("--wrold-size"), std::string::npos) << error;
  EXPECT_NE(error.find("--job is required"), std::string::npos) << error;
}

// Whether one line of `text` holds every one of `parts`.
bool ALineHasAll(const std::string& text,
                 const std::vector<std::string>& parts) {
  for (absl::string_view line : absl::StrSplit(text, '\n')) {
    if (std::all_of(parts.begin(), parts.end(), [&](const std::string& part) {
          return absl::StrContains(line, part);
        })) {
      return true;
    }
  }
  return false;
}

TEST(CommandLineTest, HelpShowsDefaultsAndExits0) {
  CLI::App app;
  Configure(app, "prog");
  absl::Duration lease = absl::Seconds(10);
  uint64_t size = 4096;
  AddDuration(app, "--lease", &lease, "lease");
  app.add_option("--size", size, "samples");
  testing::internal::CaptureStdout();
  EXPECT_EQ(ParseArgs(app, {"--help"}), 0);
  const std::string help = testing::internal::GetCapturedStdout();
  // Each option's line names its type and its default (CLI11 2.1 prints
  // "--lease DURATION=10s", 2.6 "--lease DURATION [10s]").
  EXPECT_TRUE(ALineHasAll(help, {"--lease", "DURATION", "10s"})) << help;
  EXPECT_TRUE(ALineHasAll(help, {"--size", "UINT", "4096"})) << help;
  EXPECT_FALSE(ALineHasAll(help, {"--size", "10s"})) << help;
}

// Whole numbers are decimal: "010" is not octal 8, "0x10" not hex 16, and a
// number past the option's type is refused, not clamped; each names the
// option.
TEST(CommandLineTest, WholeNumbersAreDecimalAndInRange) {
  uint64_t size = 7;
  uint32_t rate = 7;
  const auto parse = [&](const std::vector<std::string>& args) {
    CLI::App app;
    Configure(app, "prog");
    AddOption(app, "--size", size, "samples");
    AddOption(app, "--rate", rate, "rate");
    return ParseArgs(app, args);
  };
  for (const std::vector<std::string>& bad :
       {std::vector<std::string>{"--size", "010"},
        {"--size", "0x10"},
        {"--size", "-1"},
        {"--size", "1e3"},
        {"--size", "99999999999999999999999"},
        {"--rate", "4294967296"}}) {
    testing::internal::CaptureStderr();
    EXPECT_EQ(parse(bad), kExitUsage) << bad[1];
    const std::string error = testing::internal::GetCapturedStderr();
    EXPECT_NE(error.find(bad[0]), std::string::npos) << error;
    EXPECT_EQ(size, 7u) << bad[1];
    EXPECT_EQ(rate, 7u) << bad[1];
  }
  EXPECT_EQ(parse({"--size", "18446744073709551615", "--rate", "0"}),
            std::nullopt);
  EXPECT_EQ(size, UINT64_MAX);
  EXPECT_EQ(rate, 0u);
}

TEST(CommandLineTest, VersionPrintsTheProgramAndExits0) {
  CLI::App app;
  Configure(app, "prog");
  testing::internal::CaptureStdout();
  EXPECT_EQ(ParseArgs(app, {"--version"}), 0);
  EXPECT_EQ(testing::internal::GetCapturedStdout().rfind("prog ", 0), 0u);
}

TEST(CommandLineTest, SubcommandErrorsPointAtTheSubcommandsHelp) {
  CLI::App app;
  Configure(app, "prog");
  CLI::App* sub = app.add_subcommand("create-job", "create");
  std::string job;
  sub->add_option("--job", job, "job")->required();
  testing::internal::CaptureStderr();
  EXPECT_EQ(ParseArgs(app, {"create-job"}), kExitUsage);
  const std::string error = testing::internal::GetCapturedStderr();
  EXPECT_NE(error.find("prog create-job --help"), std::string::npos) << error;
}

TEST(JobSpecFlagsTest, TheOptionsBuildTheSpecTheyDescribe) {
  CLI::App app;
  Configure(app, "prog");
  client::JobSpecFlags flags;
  client::AddJobSpecOptions(app, &flags);
  EXPECT_EQ(ParseArgs(app, {}), std::nullopt);
  EXPECT_FALSE(flags.AnyGiven());
  EXPECT_EQ(ParseArgs(app, {"--seed", "7", "--tail", "drop", "--shuffle",
                            "false", "--shuffle-algorithm", "block",
                            "--block-size", "64", "--window-blocks", "4"}),
            std::nullopt);
  EXPECT_TRUE(flags.AnyGiven());
  absl::StatusOr<shard::v1::JobSpec> spec =
      client::JobSpecFromFlags(flags, 1000, 8);
  ASSERT_TRUE(spec.ok()) << spec.status();
  EXPECT_EQ(spec->seed(), 7u);
  EXPECT_EQ(spec->tail(), shard::v1::TAIL_POLICY_DROP);
  EXPECT_FALSE(spec->shuffle());
  EXPECT_EQ(spec->shuffle_algorithm(), shard::v1::SHUFFLE_ALGORITHM_BLOCK);
  EXPECT_EQ(spec->block_size(), 64u);
  EXPECT_EQ(spec->window_blocks(), 4u);
  EXPECT_EQ(spec->dataset_size(), 1000u);
  EXPECT_EQ(spec->world_size(), 8u);
  EXPECT_FALSE(client::JobSpecFromFlags(flags, 1000, uint64_t{1} << 33).ok());
}

TEST(JobSpecFlagsTest, AValueOutsideItsChoicesIsAUsageError) {
  CLI::App app;
  Configure(app, "prog");
  client::JobSpecFlags flags;
  client::AddJobSpecOptions(app, &flags);
  testing::internal::CaptureStderr();
  EXPECT_EQ(ParseArgs(app, {"--tail", "wrap"}), kExitUsage);
  const std::string error = testing::internal::GetCapturedStderr();
  EXPECT_NE(error.find("--tail"), std::string::npos) << error;
}

// shardctl create-job --source NAME:SIZE[:weight=W|repeat=R|choose=C].
TEST(JobSpecFlagsTest, ASourceFlagGivesNameSizeAndShare) {
  absl::StatusOr<shard::v1::Source> plain = client::ParseSizedSource("web:10");
  ASSERT_TRUE(plain.ok()) << plain.status();
  EXPECT_EQ(plain->name(), "web");
  EXPECT_EQ(plain->size(), 10u);
  EXPECT_EQ(plain->share_case(), shard::v1::Source::SHARE_NOT_SET);
  EXPECT_DOUBLE_EQ(client::ParseSizedSource("a:5:weight=0.25")->weight(), 0.25);
  EXPECT_DOUBLE_EQ(client::ParseSizedSource("a:5:repeat=1.5")->repeat(), 1.5);
  EXPECT_EQ(client::ParseSizedSource("a:5:choose=3")->choose(), 3u);
  EXPECT_DOUBLE_EQ(client::ParseSizedSource("a:5:weight=1e-3")->weight(),
                   0.001);
  // Every number inside the value is decimal, as an option's is: no octal
  // 010, no sign, no hex float 0x10 (16), no nan.
  for (const char* wrong :
       {"web", "web:", "web:x", "a:5:weight", "a:5:w=1", "a:5:choose=1.5",
        "a:5:weight=1:extra", "a:010", "a:+10", "a:5:choose=010",
        "a:5:choose=+3", "a:5:weight=0x10", "a:5:weight=-1", "a:5:weight=nan",
        "a:5:repeat=inf", "a:5:weight=1e", "a:5:weight=.",
        "a:5:weight=1.2.3"}) {
    absl::StatusOr<shard::v1::Source> parsed = client::ParseSizedSource(wrong);
    ASSERT_FALSE(parsed.ok()) << wrong;
    EXPECT_EQ(parsed.status().code(), absl::StatusCode::kInvalidArgument);
    // Says what a source looks like.
    EXPECT_NE(parsed.status().message().find("weight=W"), std::string::npos)
        << parsed.status().message();
  }
}

TEST(JobSpecFlagsTest, ASourceOptionsValueMayHoldColons) {
  constexpr absl::string_view kSyntax = "NAME:PATH[:weight=W]";
  auto path = client::ParseSourceOption("cls:/d/a:b.rec:weight=2", kSyntax);
  ASSERT_TRUE(path.ok()) << path.status();
  EXPECT_EQ(path->source.name(), "cls");
  EXPECT_EQ(path->value, "/d/a:b.rec");
  EXPECT_DOUBLE_EQ(path->source.weight(), 2);
  auto plain = client::ParseSourceOption("cls:/d/a:b.rec", kSyntax);
  ASSERT_TRUE(plain.ok()) << plain.status();
  EXPECT_EQ(plain->value, "/d/a:b.rec");
  EXPECT_EQ(plain->source.share_case(), shard::v1::Source::SHARE_NOT_SET);
  for (const char* wrong :
       {":/d", "cls:", "cls::weight=1", "cls:/d:weight=abc"}) {
    auto parsed = client::ParseSourceOption(wrong, kSyntax);
    EXPECT_TRUE(absl::IsInvalidArgument(parsed.status())) << wrong;
  }
}

// A last part that is not weight=, repeat= or choose= belongs to the path,
// '=' or not; an explicit share after it lets any path be written.
TEST(JobSpecFlagsTest, ASourceOptionsValueMayHoldColonsAndEquals) {
  constexpr absl::string_view kSyntax = "NAME:PATH[:weight=W]";
  auto path = client::ParseSourceOption("bag:/data/run:seed=1/bag", kSyntax);
  ASSERT_TRUE(path.ok()) << path.status();
  EXPECT_EQ(path->value, "/data/run:seed=1/bag");
  EXPECT_EQ(path->source.share_case(), shard::v1::Source::SHARE_NOT_SET);
  auto odd = client::ParseSourceOption("bag:/d:w=1", kSyntax);
  ASSERT_TRUE(odd.ok()) << odd.status();
  EXPECT_EQ(odd->value, "/d:w=1");
  auto share_like =
      client::ParseSourceOption("bag:/x:choose=5:repeat=1", kSyntax);
  ASSERT_TRUE(share_like.ok()) << share_like.status();
  EXPECT_EQ(share_like->value, "/x:choose=5");
  EXPECT_DOUBLE_EQ(share_like->source.repeat(), 1.0);
}

}  // namespace
}  // namespace shard::cli
