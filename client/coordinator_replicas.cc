#include "shard/client/coordinator_replicas.h"

#include <algorithm>
#include <utility>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "common/leader_hint.h"

namespace shard::client {
namespace {

// OK for HOST:PORT, [IPV6]:PORT or a gRPC target URI (dns:///..., unix:...);
// INVALID_ARGUMENT otherwise: without a port gRPC would dial port 443.
absl::Status CheckAddress(absl::string_view address) {
  if (absl::StrContains(address, "://") || absl::StartsWith(address, "unix:") ||
      absl::StartsWith(address, "unix-abstract:") ||
      absl::StartsWith(address, "ipv4:") ||
      absl::StartsWith(address, "ipv6:")) {
    return absl::OkStatus();
  }
  absl::string_view host = address, port;
  if (absl::StartsWith(address, "[")) {
    const size_t end = address.find("]:");
    if (end != absl::string_view::npos) {
      host = address.substr(0, end + 1);
      port = address.substr(end + 2);
    }
  } else if (const size_t colon = address.find(':');
             colon != absl::string_view::npos &&
             address.find(':', colon + 1) == absl::string_view::npos) {
    host = address.substr(0, colon);
    port = address.substr(colon + 1);
  }
  const bool port_ok =
      !port.empty() && port.size() <= 5 &&
      std::all_of(port.begin(), port.end(), absl::ascii_isdigit);
  if (!host.empty() && port_ok) return absl::OkStatus();
  return absl::InvalidArgumentError(absl::StrCat(
      "coordinator address \"", address,
      "\" has no port: give HOST:PORT, e.g. shardd:7070 or [::1]:7070 "
      "(without one gRPC would dial port 443)"));
}

}  // namespace

absl::StatusOr<std::vector<std::string>> ParseCoordinatorAddresses(
    absl::string_view addresses) {
  std::vector<std::string> parsed;
  for (absl::string_view address : absl::StrSplit(addresses, ',')) {
    address = absl::StripAsciiWhitespace(address);
    if (address.empty()) continue;
    if (absl::Status s = CheckAddress(address); !s.ok()) return s;
    parsed.emplace_back(address);
  }
  if (parsed.empty()) {
    return absl::InvalidArgumentError(
        "coordinator address is empty; expected HOST:PORT[,HOST:PORT...]");
  }
  return parsed;
}

absl::StatusOr<std::shared_ptr<CoordinatorReplicas>> CoordinatorReplicas::Open(
    const std::string& addresses, const ChannelSecurity& security,
    int max_receive_bytes) {
  absl::StatusOr<std::vector<std::string>> parsed =
      ParseCoordinatorAddresses(addresses);
  if (!parsed.ok()) return parsed.status();
  std::shared_ptr<CoordinatorReplicas> replicas(
      new CoordinatorReplicas(security, max_receive_bytes));
  absl::MutexLock lock(&replicas->mu_);
  for (const std::string& address : *parsed) {
    if (absl::Status s = replicas->Add(address); !s.ok()) return s;
  }
  return replicas;
}

absl::Status CoordinatorReplicas::Add(const std::string& address) {
  absl::StatusOr<std::shared_ptr<grpc::Channel>> channel =
      NewCoordinatorChannel(address, security_, max_receive_bytes_);
  if (!channel.ok()) return channel.status();
  addresses_.push_back(address);
  stubs_.push_back(shard::v1::Coordinator::NewStub(*channel));
  return absl::OkStatus();
}

CoordinatorReplicas::Pick CoordinatorReplicas::Current() const {
  absl::MutexLock lock(&mu_);
  return Pick{stubs_[current_], current_};
}

void CoordinatorReplicas::Failed(const Pick& used,
                                 const grpc::ClientContext& context) {
  absl::MutexLock lock(&mu_);
  if (used.index != current_) return;  // Another call moved on already.
  const auto& trailers = context.GetServerTrailingMetadata();
  if (const auto hint = trailers.find(kLeaderMetadataKey);
      hint != trailers.end()) {
    const std::string leader(hint->second.data(), hint->second.size());
    const auto known = std::find(addresses_.begin(), addresses_.end(), leader);
    if (known != addresses_.end()) {
      current_ = static_cast<size_t>(known - addresses_.begin());
      return;
    }
    if (Add(leader).ok()) {
      current_ = addresses_.size() - 1;
      return;
    }
  }
  current_ = (current_ + 1) % addresses_.size();
}

std::vector<std::string> CoordinatorReplicas::addresses() const {
  absl::MutexLock lock(&mu_);
  return addresses_;
}

}  // namespace shard::client
