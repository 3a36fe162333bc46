// shardctl: command-line client of the shardd coordinator.
//
//   shardctl [--coordinator HOST:PORT[,HOST:PORT...]] [--timeout 30s]
//            [--retry-deadline 60s]
//            [--tls-ca PEM] [--tls-cert PEM --tls-key PEM]
//            [--auth-token-file FILE] COMMAND [command flags]
//
// Exit code 0 on success; 1 with a one-line error on stderr when the command
// fails; 2 for a usage error.
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "client/cli_flags.h"
#include "client/retry_report.h"
#include "client/security_flags.h"
#include "client/shardctl/admin_commands.h"
#include "client/shardctl/commands.h"
#include "client/shardctl/health_command.h"
#include "shard/client/coordinator_client.h"
#include "shard/version.h"

namespace {

constexpr char kUsage[] =
    "usage: shardctl [--coordinator HOST:PORT[,HOST:PORT...]] [--timeout 30s] "
    "[--retry-deadline 60s] COMMAND [flags]\n"
    "commands:\n"
    "  create-job --job ID --size N --world-size W [--seed S]\n"
    "             [--shuffle true|false] [--tail pad|drop|uneven]\n"
    "             [--torch-randperm legacy|2.6]\n"
    "             [--min-world-size N] [--max-world-size N]\n"
    "             [--shuffle-algorithm torch|feistel|block]\n"
    "             [--block-size B] [--window-blocks K]\n"
    "  plan       --job ID --epoch E --rank R\n"
    "  consume    --job ID --member M [--epochs K] [--wait 5m]\n"
    "  status     [--output table|json]   (with several replicas: their "
    "roles too)\n"
    "  describe   --job ID [--output table|json]\n"
    "  delete-job --job ID [--force true] [--output table|json]\n"
    "  drain      [--output table|json]\n"
    "  health     [--service NAME]   (each address; exit 1 unless all are\n"
    "             SERVING; --service liveness: every running replica)\n"
    "security flags (before COMMAND): [--tls-ca PEM] [--tls-cert PEM "
    "--tls-key PEM]\n"
    "  [--auth-token-file FILE]\n"
    "The coordinator defaults to $SHARD_COORDINATOR, else 127.0.0.1:7070.\n";

int Fail(const std::string& message, int code) {
  std::fprintf(stderr, "shardctl: %s\n", message.c_str());
  return code;
}

// A command's status as the exit code: 0; 2 (usage) for INVALID_ARGUMENT;
// else 1, with the status on stderr.
int Exit(const absl::Status& status) {
  if (status.ok()) return 0;
  return Fail(std::string(absl::StatusCodeToString(status.code())) + ": " +
                  std::string(status.message()),
              absl::IsInvalidArgument(status) ? 2 : 1);
}

}  // namespace

int main(int argc, char** argv) {
  std::vector<std::string> global_args;
  int i = 1;
  while (i < argc && absl::StartsWith(argv[i], "--") &&
         std::string(argv[i]) != "--version" &&
         std::string(argv[i]) != "--help") {
    global_args.push_back(argv[i++]);
    if (global_args.back().find('=') == std::string::npos && i < argc) {
      global_args.push_back(argv[i++]);
    }
  }
  if (i >= argc) {
    std::fputs(kUsage, stderr);
    return 2;
  }
  const std::string command = argv[i];
  const std::vector<std::string> command_args(argv + i + 1, argv + argc);
  if (command == "--version" || command == "version") {
    std::printf("shardctl %s\n", shard::Version().c_str());
    return 0;
  }
  if (command == "help" || command == "--help") {
    std::fputs(kUsage, stdout);
    return 0;
  }

  std::set<std::string> global_names = {"coordinator", "timeout",
                                        "retry-deadline"};
  shard::client::AddSecurityFlagNames(global_names);
  absl::StatusOr<shard::client::CliFlags> global =
      shard::client::CliFlags::Parse(global_args, global_names);
  if (!global.ok()) return Fail(std::string(global.status().message()), 2);
  const char* env_address = std::getenv("SHARD_COORDINATOR");
  shard::client::ClientOptions options;
  options.address = global->String(
      "coordinator", env_address != nullptr ? env_address : "127.0.0.1:7070");
  absl::StatusOr<absl::Duration> timeout =
      global->Duration("timeout", options.rpc_timeout);
  absl::StatusOr<absl::Duration> retry_deadline =
      global->Duration("retry-deadline", options.retry.deadline);
  if (!timeout.ok()) return Fail(std::string(timeout.status().message()), 2);
  if (!retry_deadline.ok()) {
    return Fail(std::string(retry_deadline.status().message()), 2);
  }
  options.rpc_timeout = *timeout;
  options.retry.deadline = *retry_deadline;
  options.retry.on_retrying =
      shard::client::RetryReporter("shardctl", options.address);
  options.security = shard::client::SecurityFromFlags(*global);

  if (command == "health") {
    return Exit(shard::shardctl::Health(options, command_args));
  }
  auto connected = shard::client::CoordinatorClient::Connect(options);
  if (!connected.ok()) {
    return Fail(std::string(connected.status().message()), 2);
  }
  std::shared_ptr<shard::client::CoordinatorClient> client =
      *std::move(connected);

  absl::Status status;
  if (command == "create-job") {
    status = shard::shardctl::CreateJob(*client, command_args);
  } else if (command == "plan") {
    status = shard::shardctl::Plan(*client, command_args);
  } else if (command == "consume") {
    status = shard::shardctl::Consume(client, command_args);
  } else if (command == "status") {
    status = shard::shardctl::Status(*client, options, command_args);
  } else if (command == "describe") {
    status = shard::shardctl::Describe(*client, command_args);
  } else if (command == "delete-job") {
    status = shard::shardctl::DeleteJob(*client, command_args);
  } else if (command == "drain") {
    status = shard::shardctl::Drain(*client, command_args);
  } else {
    std::fputs(kUsage, stderr);
    return Fail("unknown command \"" + command + "\"", 2);
  }
  return Exit(status);
}
