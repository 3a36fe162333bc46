// The command lines of shardd, shardctl, shard-train and the project's
// tools, on CLI11: --kebab-case options, --help/-h on every (sub)command
// listing each option with its default, --version, and one way to report
// a usage error.
//
// Not thread-safe (command lines are parsed once, in main). Options bind
// to variables the caller owns; those must outlive the parse.
#ifndef COMMON_CLI_COMMAND_LINE_H_
#define COMMON_CLI_COMMAND_LINE_H_

#include <optional>
#include <string>

#include "CLI/CLI.hpp"
#include "absl/time/time.h"

namespace shard::cli {

// Exit code of a usage error (bad or missing flags), as every binary uses.
inline constexpr int kExitUsage = 2;

// An app named `program` whose --help shows each option's default, whose
// --version prints "PROGRAM <version>", and where an option given twice
// takes its last value.
void Configure(CLI::App& app, const std::string& program);

// Adds option `name` (e.g. "--lease") taking a duration with its unit:
// "10s", "2m", "1h30m", "250ms" (or "0"). A bare number is refused with
// "give a unit, e.g. 10s", a negative duration too. --help shows *value
// as the default.
CLI::Option* AddDuration(CLI::App& app, const std::string& name,
                         absl::Duration* value, const std::string& help);

// Parses the command line. nullopt: go on. Otherwise the process should
// exit with the returned code: 0 after printing --help or --version
// (stdout), kExitUsage after printing "PROGRAM: <error>" and where to find
// the usage (stderr).
std::optional<int> Parse(CLI::App& app, int argc, const char* const* argv);

// "PROGRAM [SUBCOMMAND...]": the deepest subcommand the parse selected.
std::string SelectedCommandPath(const CLI::App& app);

}  // namespace shard::cli

#endif  // COMMON_CLI_COMMAND_LINE_H_
