// zcal agent: the long-running service, and its configuration checks.
#include <iostream>
#include <memory>
#include <string>

#include <spdlog/sinks/stdout_color_sinks.h>
#include <spdlog/spdlog.h>

#include "zcal/agent/cli/commands.h"
#include "zcal/agent/config/config.h"
#include "zcal/agent/service/service.h"

namespace zcal::agent {
namespace {

struct AgentArgs {
  std::string config;
  std::string check;
  CLI::Option* check_option = nullptr;
  bool print_default = false;
};

Result<Config> LoadConfig(const std::string& path) {
  if (path.empty()) return DefaultConfig();
  return LoadConfigFile(path);
}

int RunAgent(const AgentArgs& args) {
  if (args.print_default) {
    std::cout << DefaultConfigYaml();
    return kExitOk;
  }
  if (args.check_option->count() > 0) {
    const std::string path = args.check.empty() ? args.config : args.check;
    const Result<Config> config = LoadConfig(path);
    if (!config) {
      std::cerr << config.error().message << "\n"
                << "zcal agent: the configuration is invalid\n";
      return ExitStatusOf(config.error(), kExitUsage);
    }
    std::cout << config->source << ": the configuration is valid\n";
    return kExitOk;
  }
  // Logs go to stderr: journald and container runtimes collect it.
  auto logger = spdlog::stderr_color_mt("zcal");
  logger->set_pattern("%Y-%m-%dT%H:%M:%S.%e %^%l%$ %v");
  spdlog::set_default_logger(logger);
  spdlog::flush_on(spdlog::level::info);

  Result<Config> config = LoadConfig(args.config);
  if (!config) {
    std::istringstream lines(config.error().message);
    for (std::string line; std::getline(lines, line);) {
      spdlog::error("{}", line);
    }
    spdlog::error("zcal agent: not started, the configuration is invalid "
                  "(check it with `zcal agent --check-config FILE`)");
    return ExitStatusOf(config.error(), kExitUsage);
  }
  Service service(std::move(*config), args.config);
  return service.Run();
}

}  // namespace

Command AddAgentCommand(CLI::App& parent) {
  auto args = std::make_shared<AgentArgs>();
  CLI::App* app = parent.add_subcommand(
      "agent",
      "Run the calibration service: calibrate at start and on a schedule, "
      "publish thresholds to shared memory and Prometheus. Signals: SIGHUP "
      "reloads the configuration, SIGUSR1 calibrates now, SIGTERM/SIGINT "
      "stop.");
  app->add_option("-c,--config", args->config,
                  "YAML configuration file; keys it omits keep their default "
                  "(default: the embedded configs/default.yaml)");
  args->check_option =
      app->add_option("--check-config", args->check,
                      "Validate FILE (or the --config file, or the embedded "
                      "default) and exit: 0 when valid, 2 when not")
          ->expected(0, 1);
  app->add_flag("--print-default-config", args->print_default,
                "Print the embedded default configuration and exit");
  return {app, [args] { return RunAgent(*args); }};
}

}  // namespace zcal::agent
