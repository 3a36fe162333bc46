// The command lines of shardd, shardctl, shard-train and the project's
// tools, on CLI11: --kebab-case options, --help/-h on every (sub)command
// listing each option with its default, --version, and one way to report
// a usage error.
//
// Not thread-safe (command lines are parsed once, in main). Options bind
// to variables the caller owns; those must outlive the parse.
#ifndef COMMON_CLI_COMMAND_LINE_H_
#define COMMON_CLI_COMMAND_LINE_H_

#include <algorithm>
#include <cstdint>
#include <functional>
#include <limits>
#include <optional>
#include <string>
#include <type_traits>
#include <vector>

#include "CLI/CLI.hpp"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"
#include "common/net/address.h"

namespace shard::cli {

// Exit code of a usage error (bad or missing flags), as every binary uses.
inline constexpr int kExitUsage = 2;

// An app named `program` whose --help shows each option's default, whose
// --version prints "PROGRAM <version>", and where an option given twice
// takes its last value.
void Configure(CLI::App& app, const std::string& program);

// The checks a number option gets (see AddOption). CLI11 2.1 converts "-1"
// for an unsigned option by wrapping it (18446744073709551615), reads "010"
// as octal and "0x10" as hex, clamps a number past the type's range, and
// takes "nan" for a floating-point one. DecimalNumber takes only decimal
// digits (no sign, no leading zero) up to `max`.
CLI::Validator DecimalNumber(uint64_t max);
// The rules of DecimalNumber for a number inside an option's value (e.g.
// --source NAME:SIZE:choose=C): INVALID_ARGUMENT with the same message.
absl::StatusOr<uint64_t> ParseDecimal(absl::string_view text, uint64_t max);
// A fraction inside an option's value (weight=W): decimal digits with at
// most one '.' and an optional exponent ("0.25", "3", "1e-3"); no sign, no
// hex float ("0x10"), no nan or infinity. INVALID_ARGUMENT saying so.
absl::StatusOr<double> ParseDecimalFraction(absl::string_view text);
CLI::Validator FiniteNumber();
// A whole number of at least `min`, saying so in those words (CLI11's
// PositiveNumber says "not in range 0.000000 to 1.79e308").
CLI::Validator AtLeast(uint64_t min);
// A check that refuses a value with the message of `check`'s error.
CLI::Validator StatusCheck(
    std::function<absl::Status(const std::string& text)> check);
// An address option checked by the rule of common/net/address.h: one
// address for `use`, or with `list` a comma-separated list to dial.
CLI::Validator AddressCheck(net::AddressUse use, bool list = false);
// A text option that may not be empty; `why` completes "may not be empty: ".
CLI::Validator NotEmpty(const std::string& why);

template <typename T>
struct OptionValue {
  using type = T;
};
template <typename T>
struct OptionValue<std::optional<T>> {
  using type = T;
};
template <typename T>
struct OptionValue<std::vector<T>> {
  using type = T;
};

// Adds option `name` bound to `value`, as CLI11's add_option does, plus the
// checks CLI11 lacks for numbers: an integer option (no option of this
// project takes a negative number) takes decimal digits only, refusing "-1",
// "010", "0x10" and a number past its type's range instead of reading or
// clamping them; a floating-point one refuses nan and infinities. Each refusal
// is a usage error naming the option and the value typed. Every option with a
// value is added through it. `max` (0: the type's largest) bounds an integer
// option, and the refusal names that bound.
template <typename T>
CLI::Option* AddOption(CLI::App& app, const std::string& name, T& value,
                       const std::string& help = "", uint64_t max = 0) {
  CLI::Option* option = app.add_option(name, value, help);
  using Number = typename OptionValue<T>::type;
  if constexpr (std::is_floating_point_v<Number>) {
    option->check(FiniteNumber());
  } else if constexpr (std::is_integral_v<Number> &&
                       !std::is_same_v<Number, bool>) {
    const uint64_t largest = std::numeric_limits<Number>::max();
    option->check(DecimalNumber(max == 0 ? largest : std::min(max, largest)));
  }
  return option;
}

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
