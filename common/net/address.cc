#include "common/net/address.h"

#include <algorithm>
#include <cstdint>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"

namespace shard::net {
namespace {

constexpr absl::string_view kExample =
    "give HOST:PORT, e.g. shardd:7070 or [::1]:7070";

bool IsTargetUri(absl::string_view address) {
  return absl::StrContains(address, "://") ||
         absl::StartsWith(address, "unix:") ||
         absl::StartsWith(address, "unix-abstract:") ||
         absl::StartsWith(address, "ipv4:") ||
         absl::StartsWith(address, "ipv6:");
}

absl::Status Refused(absl::string_view address, absl::string_view what) {
  return absl::InvalidArgumentError(absl::StrCat("\"", address, "\" ", what));
}

}  // namespace

absl::Status CheckAddress(absl::string_view address, AddressUse use) {
  if (use == AddressUse::kDial && IsTargetUri(address)) {
    return absl::OkStatus();
  }
  absl::string_view host, port;
  if (absl::StartsWith(address, "[")) {
    const size_t end = address.find(']');
    if (end == absl::string_view::npos) {
      return Refused(address, absl::StrCat("has no closing ']'; ", kExample));
    }
    host = address.substr(1, end - 1);
    absl::string_view rest = address.substr(end + 1);
    if (!absl::ConsumePrefix(&rest, ":")) {
      return Refused(address, absl::StrCat("has no port: ", kExample));
    }
    port = rest;
  } else {
    const size_t colon = address.find(':');
    if (colon == absl::string_view::npos) {
      return Refused(
          address, absl::StrCat("has no port: ", kExample,
                                use == AddressUse::kDial
                                    ? " (without one gRPC would dial port 443)"
                                    : ""));
    }
    if (address.find(':', colon + 1) != absl::string_view::npos) {
      return Refused(address,
                     "has more than one ':'; an IPv6 address goes in "
                     "brackets: [::1]:7070");
    }
    host = address.substr(0, colon);
    port = address.substr(colon + 1);
  }
  if (host.empty())
    return Refused(address, absl::StrCat("has no host; ", kExample));
  const uint32_t lowest = use == AddressUse::kListen ? 0 : 1;
  if (port.empty() ||
      !std::all_of(port.begin(), port.end(), absl::ascii_isdigit)) {
    return Refused(address, absl::StrCat("has no port: ", kExample));
  }
  // Digits that do not fit 32 bits are out of range all the same.
  uint32_t number = UINT32_MAX;
  if (!absl::SimpleAtoi(port, &number)) number = UINT32_MAX;
  if (number < lowest || number > 65535) {
    return Refused(address, absl::StrCat("has port ", port,
                                         ", out of range: give a port from ",
                                         lowest, " to 65535"));
  }
  return absl::OkStatus();
}

absl::StatusOr<std::vector<std::string>> ParseAddressList(
    absl::string_view addresses) {
  std::vector<std::string> parsed;
  for (absl::string_view address : absl::StrSplit(addresses, ',')) {
    address = absl::StripAsciiWhitespace(address);
    if (address.empty()) continue;
    if (absl::Status s = CheckAddress(address, AddressUse::kDial); !s.ok()) {
      return s;
    }
    parsed.emplace_back(address);
  }
  if (parsed.empty()) {
    return absl::InvalidArgumentError(absl::StrCat(
        "\"", addresses, "\" holds no address: give HOST:PORT[,HOST:PORT...]"));
  }
  return parsed;
}

}  // namespace shard::net
