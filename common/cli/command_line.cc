#include "common/cli/command_line.h"

#include <algorithm>
#include <cmath>
#include <iostream>
#include <utility>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/strip.h"
#include "shard/version.h"

namespace shard::cli {

void Configure(CLI::App& app, const std::string& program) {
  app.name(program);
  app.option_defaults()->always_capture_default();
  // A repeated option takes its last value, as scripts that append an
  // override expect.
  app.option_defaults()->multi_option_policy(CLI::MultiOptionPolicy::TakeLast);
  app.set_version_flag("--version", program + " " + Version());
  app.get_formatter()->column_width(34);
}

absl::StatusOr<uint64_t> ParseDecimal(absl::string_view text, uint64_t max) {
  const absl::string_view trimmed = absl::StripAsciiWhitespace(text);
  if (absl::StartsWith(trimmed, "-")) {
    return absl::InvalidArgumentError(absl::StrCat(
        "\"", text, "\" is negative; give a whole number, 0 or more"));
  }
  const bool digits =
      !trimmed.empty() &&
      std::all_of(trimmed.begin(), trimmed.end(), absl::ascii_isdigit);
  // A leading 0 would read as octal, 0x as hex: decimal only.
  if (!digits || (trimmed.size() > 1 && trimmed.front() == '0')) {
    return absl::InvalidArgumentError(
        absl::StrCat("\"", text,
                     "\" is not a decimal whole number (no leading zeros, "
                     "no 0x)"));
  }
  uint64_t number;
  if (!absl::SimpleAtoi(trimmed, &number) || number > max) {
    return absl::InvalidArgumentError(
        absl::StrCat("\"", text, "\" is above the largest value, ", max));
  }
  return number;
}

absl::StatusOr<double> ParseDecimalFraction(absl::string_view text) {
  const absl::string_view trimmed = absl::StripAsciiWhitespace(text);
  // Digits with at most one '.', then an optional exponent: no sign, no
  // hex (SimpleAtod reads "0x10" as 16), no nan or infinity.
  const size_t exponent = trimmed.find_first_of("eE");
  const absl::string_view mantissa = trimmed.substr(0, exponent);
  const bool mantissa_ok =
      std::count(mantissa.begin(), mantissa.end(), '.') <= 1 &&
      std::any_of(mantissa.begin(), mantissa.end(), absl::ascii_isdigit) &&
      std::all_of(mantissa.begin(), mantissa.end(),
                  [](char c) { return absl::ascii_isdigit(c) || c == '.'; });
  absl::string_view power =
      exponent == absl::string_view::npos ? "0" : trimmed.substr(exponent + 1);
  absl::ConsumePrefix(&power, "-") || absl::ConsumePrefix(&power, "+");
  const bool power_ok =
      !power.empty() &&
      std::all_of(power.begin(), power.end(), absl::ascii_isdigit);
  double number;
  if (!mantissa_ok || !power_ok || !absl::SimpleAtod(trimmed, &number) ||
      !std::isfinite(number)) {
    return absl::InvalidArgumentError(
        absl::StrCat("\"", text,
                     "\" is not a decimal number (e.g. 0.25, 3 or 1e-3; no "
                     "sign, no 0x)"));
  }
  return number;
}

CLI::Validator DecimalNumber(uint64_t max) {
  return CLI::Validator(
      [max](std::string& text) -> std::string {
        const absl::StatusOr<uint64_t> number = ParseDecimal(text, max);
        return number.ok() ? "" : std::string(number.status().message());
      },
      "");
}

CLI::Validator FiniteNumber() {
  return CLI::Validator(
      [](std::string& text) -> std::string {
        double number;
        if (absl::SimpleAtod(absl::StripAsciiWhitespace(text), &number) &&
            !std::isfinite(number)) {
          return absl::StrCat("\"", text, "\" is not a finite number");
        }
        return "";
      },
      "");
}

CLI::Validator AtLeast(uint64_t min) {
  return CLI::Validator(
      [min](std::string& text) -> std::string {
        uint64_t number;
        if (absl::SimpleAtoi(absl::StripAsciiWhitespace(text), &number) &&
            number < min) {
          return absl::StrCat("\"", text, "\" is below the minimum, ", min);
        }
        return "";
      },
      "");
}

CLI::Validator StatusCheck(
    std::function<absl::Status(const std::string& text)> check) {
  return CLI::Validator(
      [check = std::move(check)](std::string& text) -> std::string {
        const absl::Status status = check(text);
        return status.ok() ? "" : std::string(status.message());
      },
      "");
}

CLI::Validator AddressCheck(net::AddressUse use, bool list) {
  return StatusCheck([use, list](const std::string& text) {
    return list ? net::ParseAddressList(text).status()
                : net::CheckAddress(text, use);
  });
}

CLI::Validator NotEmpty(const std::string& why) {
  return CLI::Validator(
      [why](std::string& text) -> std::string {
        return text.empty() ? "may not be empty: " + why : "";
      },
      "");
}

CLI::Option* AddDuration(CLI::App& app, const std::string& name,
                         absl::Duration* value, const std::string& help) {
  CLI::Option* option = app.add_option_function<std::string>(
      name,
      [name, value](const std::string& text) {
        double bare;
        const std::string trimmed(absl::StripAsciiWhitespace(text));
        if (trimmed != "0" && absl::SimpleAtod(trimmed, &bare)) {
          throw CLI::ValidationError(
              name, absl::StrCat("\"", text,
                                 "\" has no unit; give a unit, e.g. 10s, 2m, "
                                 "1h30m or 250ms"));
        }
        absl::Duration parsed;
        if (!absl::ParseDuration(trimmed, &parsed)) {
          throw CLI::ValidationError(
              name, absl::StrCat("\"", text,
                                 "\" is not a duration; give a number with a "
                                 "unit, e.g. 10s, 2m, 1h30m or 250ms"));
        }
        if (parsed < absl::ZeroDuration()) {
          throw CLI::ValidationError(
              name, absl::StrCat("\"", text, "\" is negative"));
        }
        *value = parsed;
      },
      help);
  option->type_name("DURATION");
  option->default_str(absl::FormatDuration(*value));
  return option;
}

std::string SelectedCommandPath(const CLI::App& app) {
  std::string path = app.get_name();
  const CLI::App* current = &app;
  while (true) {
    std::vector<const CLI::App*> selected = current->get_subcommands(
        [](const CLI::App* sub) { return sub->parsed(); });
    if (selected.empty()) return path;
    current = selected.front();
    absl::StrAppend(&path, " ", current->get_name());
  }
}

namespace {

// A required option has no default to show: its captured one (e.g. "=0")
// would mislead.
void HideDefaultsOfRequiredOptions(CLI::App& app) {
  for (CLI::Option* option : app.get_options()) {
    if (option->get_required()) option->default_str("");
  }
  for (CLI::App* sub : app.get_subcommands([](CLI::App*) { return true; })) {
    HideDefaultsOfRequiredOptions(*sub);
  }
}

}  // namespace

std::optional<int> Parse(CLI::App& app, int argc, const char* const* argv) {
  HideDefaultsOfRequiredOptions(app);
  try {
    app.parse(argc, argv);
    return std::nullopt;
  } catch (const CLI::ParseError& error) {
    if (error.get_exit_code() == 0) return app.exit(error);  // help, version
    std::string message = error.what();
    // A misspelt command is left over, and CLI11 would only say that a
    // command is required.
    if (const std::vector<std::string> left = app.remaining(true);
        !left.empty() && app.get_require_subcommand_min() > 0 &&
        app.get_subcommands().empty()) {
      message = absl::StrCat("unknown command \"", left.front(), "\"");
    }
    std::cerr << app.get_name() << ": " << message << "\n"
              << "Run '" << SelectedCommandPath(app)
              << " --help' for the options.\n";
    return kExitUsage;
  }
}

}  // namespace shard::cli
