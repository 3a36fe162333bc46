#include "client/cli_flags.h"

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/strip.h"

namespace shard::client {

absl::StatusOr<CliFlags> CliFlags::Parse(
    const std::vector<std::string>& args,
    const std::set<std::string>& accepted) {
  CliFlags flags;
  for (size_t i = 0; i < args.size(); ++i) {
    absl::string_view arg = args[i];
    if (!absl::ConsumePrefix(&arg, "--")) {
      return absl::InvalidArgumentError(
          absl::StrCat("unexpected argument \"", arg, "\"; expected --flag"));
    }
    std::string name(arg.substr(0, arg.find('=')));
    std::string value;
    if (arg.find('=') != absl::string_view::npos) {
      value = std::string(arg.substr(arg.find('=') + 1));
    } else if (i + 1 < args.size()) {
      value = args[++i];
    } else {
      return absl::InvalidArgumentError(
          absl::StrCat("--", name, " needs a value"));
    }
    if (accepted.count(name) == 0) {
      return absl::InvalidArgumentError(
          absl::StrCat("unknown flag --", name, "; accepted: --",
                       absl::StrJoin(accepted, ", --")));
    }
    flags.values_[name] = value;
  }
  return flags;
}

absl::StatusOr<std::string> CliFlags::String(const std::string& name) const {
  auto it = values_.find(name);
  if (it == values_.end()) {
    return absl::InvalidArgumentError(absl::StrCat("--", name, " is required"));
  }
  return it->second;
}

std::string CliFlags::String(const std::string& name,
                             const std::string& fallback) const {
  auto it = values_.find(name);
  return it == values_.end() ? fallback : it->second;
}

absl::StatusOr<uint64_t> CliFlags::Uint64(const std::string& name) const {
  absl::StatusOr<std::string> text = String(name);
  if (!text.ok()) return text.status();
  uint64_t value;
  if (text->empty() || (*text)[0] == '-' || !absl::SimpleAtoi(*text, &value)) {
    return absl::InvalidArgumentError(absl::StrCat(
        "--", name, " must be a non-negative integer, got \"", *text, "\""));
  }
  return value;
}

absl::StatusOr<uint64_t> CliFlags::Uint64(const std::string& name,
                                          uint64_t fallback) const {
  return Has(name) ? Uint64(name) : fallback;
}

absl::StatusOr<double> CliFlags::Double(const std::string& name,
                                        double fallback) const {
  if (!Has(name)) return fallback;
  const std::string text = String(name, "");
  double value;
  if (!absl::SimpleAtod(text, &value)) {
    return absl::InvalidArgumentError(
        absl::StrCat("--", name, " must be a number, got \"", text, "\""));
  }
  return value;
}

absl::StatusOr<bool> CliFlags::Bool(const std::string& name,
                                    bool fallback) const {
  if (!Has(name)) return fallback;
  const std::string text = String(name, "");
  if (text == "true") return true;
  if (text == "false") return false;
  return absl::InvalidArgumentError(
      absl::StrCat("--", name, " must be true or false, got \"", text, "\""));
}

absl::StatusOr<absl::Duration> CliFlags::Duration(
    const std::string& name, absl::Duration fallback) const {
  if (!Has(name)) return fallback;
  const std::string text = String(name, "");
  absl::Duration value;
  if (!absl::ParseDuration(text, &value) || value < absl::ZeroDuration()) {
    return absl::InvalidArgumentError(absl::StrCat(
        "--", name, " must be a duration such as 30s or 5m, got \"", text,
        "\""));
  }
  return value;
}

}  // namespace shard::client
