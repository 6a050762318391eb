#include <iostream>
#include <vector>

#include "zcal/agent/cli/commands.h"

namespace zcal::agent {

namespace {
std::span<char* const> g_arguments;
}  // namespace

std::span<char* const> CommandLineArguments() { return g_arguments; }

int RunCli(int argc, char** argv, std::span<const CommandFactory> factories) {
  CLI::App app{"zcal: measures from which message size zerocopy send pays off "
               "on this host, and publishes it.",
               "zcal"};
  app.set_version_flag("--version", std::string("zcal ") + ZCAL_VERSION);
  app.require_subcommand(1);
  app.fallthrough(false);

  if (argc > 1) g_arguments = std::span<char* const>(argv + 1, static_cast<std::size_t>(argc - 1));
  std::vector<Command> commands;
  for (const CommandFactory add : factories) commands.push_back(add(app));

  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    // --help and --version are "errors" with exit code 0 in CLI11.
    const int rc = app.exit(e);
    return rc == 0 ? kExitOk : ExitStatusOf(Errc::kInvalidArgument);
  }
  for (const Command& command : commands) {
    if (command.app->parsed()) return command.run();
  }
  return ExitStatusOf(Errc::kInvalidArgument);
}

}  // namespace zcal::agent
