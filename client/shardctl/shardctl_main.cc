// shardctl: command-line client of the shardd coordinator.
//
//   shardctl [global options] COMMAND [command options]
//   shardctl COMMAND --help | shardctl help COMMAND | shardctl --version
//
// Global options may also follow the command. Exit code 0 on success; 1
// with a one-line error on stderr when the command fails; 2 for a usage
// error.
#include <cstdio>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "client/progress_lines.h"
#include "client/security_flags.h"
#include "client/shardctl/admin_commands.h"
#include "client/shardctl/commands.h"
#include "client/shardctl/health_command.h"
#include "common/cli/command_line.h"
#include "shard/client/coordinator_client.h"
#include "shard/version.h"

namespace {

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
              absl::IsInvalidArgument(status) ? shard::cli::kExitUsage : 1);
}

// `shardctl help [COMMAND]`: the options of the app or of one command.
int PrintHelp(const CLI::App& app, const std::string& topic,
              const std::vector<shard::shardctl::Command>& commands) {
  if (topic.empty()) {
    std::fputs(app.help().c_str(), stdout);
    return 0;
  }
  for (const shard::shardctl::Command& command : commands) {
    if (command.app->get_name() == topic) {
      std::fputs(command.app->help("shardctl").c_str(), stdout);
      return 0;
    }
  }
  return Fail("unknown command \"" + topic +
                  "\"; run 'shardctl --help' for the commands",
              shard::cli::kExitUsage);
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app("Command-line client of the shardd data-sharding coordinator.");
  shard::cli::Configure(app, "shardctl");
  app.fallthrough();  // global options may follow the command
  app.require_subcommand(1);
  app.footer(
      "Run 'shardctl COMMAND --help' (or 'shardctl help COMMAND') for a "
      "command's options.");

  shard::client::ClientOptions options;
  options.address = "127.0.0.1:7070";
  shard::cli::AddOption(
      app, "--coordinator", options.address,
      "the coordinator's HOST:PORT, or the replicas' as a comma-"
      "separated list")
      ->type_name("HOST:PORT[,...]")
      ->envname("SHARD_COORDINATOR")
      ->check(shard::cli::AddressCheck(shard::net::AddressUse::kDial,
                                       /*list=*/true));
  shard::cli::AddDuration(app, "--timeout", &options.rpc_timeout,
                          "deadline of each call");
  shard::cli::AddDuration(app, "--retry-deadline", &options.retry.deadline,
                          "how long to retry an unavailable coordinator");
  shard::client::AddSecurityOptions(app, &options.security);

  std::vector<shard::shardctl::Command> commands = {
      shard::shardctl::AddCreateJob(app), shard::shardctl::AddPlan(app),
      shard::shardctl::AddConsume(app),   shard::shardctl::AddStatus(app),
      shard::shardctl::AddDescribe(app),  shard::shardctl::AddDeleteJob(app),
      shard::shardctl::AddDrain(app),     shard::shardctl::AddHealth(app),
  };
  std::string help_topic;
  CLI::App* help = app.add_subcommand("help", "show a command's options");
  shard::cli::AddOption(*help, "COMMAND", help_topic, "the command");
  CLI::App* version = app.add_subcommand("version", "print the version");

  if (std::optional<int> exit_code = shard::cli::Parse(app, argc, argv)) {
    return *exit_code;
  }
  if (version->parsed()) {
    std::printf("shardctl %s\n", shard::Version().c_str());
    return 0;
  }
  if (help->parsed()) return PrintHelp(app, help_topic, commands);
  options.retry.on_retrying =
      shard::client::RetryReporter("shardctl", options.address);
  options.on_waiting = shard::client::WaitingReporter("shardctl");
  for (const shard::shardctl::Command& command : commands) {
    if (command.app->parsed()) return Exit(command.run(options));
  }
  return Fail("no command given", shard::cli::kExitUsage);
}
