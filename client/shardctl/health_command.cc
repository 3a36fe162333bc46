#include "client/shardctl/health_command.h"

#include <cstdio>
#include <memory>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "client/health_check.h"
#include "common/cli/command_line.h"
#include "shard/client/coordinator_channel.h"
#include "shard/client/coordinator_replicas.h"

namespace shard::shardctl {

namespace {

absl::Status CheckEndpoints(const client::ClientOptions& options,
                            const std::string& service) {
  absl::StatusOr<std::vector<std::string>> addresses =
      client::ParseCoordinatorAddresses(options.address);
  if (!addresses.ok()) return addresses.status();
  int unhealthy = 0;
  for (const std::string& address : *addresses) {
    absl::StatusOr<std::shared_ptr<grpc::Channel>> channel =
        client::NewCoordinatorChannel(
            address, options.security,
            client::CoordinatorClient::kMaxReceiveBytes);
    if (!channel.ok()) return channel.status();
    const absl::Time began = absl::Now();
    absl::StatusOr<client::ServingStatus> health =
        client::CheckHealth(*channel, service, options.rpc_timeout);
    const std::string took = absl::FormatDuration(absl::Now() - began);
    const bool serving =
        health.ok() && *health == client::ServingStatus::kServing;
    unhealthy += !serving;
    std::printf(
        "%s is %s: %s\n", address.c_str(), serving ? "healthy" : "unhealthy",
        health.ok()
            ? absl::StrCat(client::ServingStatusName(*health), " (took ", took,
                           ")")
                  .c_str()
            : absl::StrCat(absl::StatusCodeToString(health.status().code()),
                           ": ", health.status().message())
                  .c_str());
  }
  std::fflush(stdout);
  if (unhealthy == 0) return absl::OkStatus();
  return absl::UnavailableError(absl::StrCat(
      unhealthy, " of ", addresses->size(), " endpoint",
      addresses->size() == 1 ? "" : "s", " unhealthy",
      service.empty() ? "" : absl::StrCat(" (service \"", service, "\")")));
}

}  // namespace

Command AddHealth(CLI::App& shardctl) {
  auto service = std::make_shared<std::string>();
  CLI::App* app = shardctl.add_subcommand(
      "health",
      "ask each --coordinator address for its gRPC health; exit 1 unless "
      "all are SERVING");
  cli::AddOption(*app, "--service", *service,
                 "health service: \"\" (serving: the leader), "
                 "shard.v1.Coordinator, or liveness (every running "
                 "replica)");
  return {app, [service](const client::ClientOptions& options) {
            return CheckEndpoints(options, *service);
          }};
}

}  // namespace shard::shardctl
