// zcal doctor: whether zerocopy can work and pay on this host, as the user
// that runs it sees it, one line per check with what to change.

#include <iostream>
#include <memory>
#include <string>

#include "zcal/agent/cli/commands.h"
#include "zcal/agent/config/config.h"
#include "zcal/agent/doctor/doctor.h"

namespace zcal::agent {

namespace {

struct DoctorArgs {
  std::string config;
  std::string segment;
  std::string state;
  std::string root;
  bool json = false;
  bool strict = false;
};

// The agent's configuration decides what the checks compare against: the
// segment and state file it writes, the sizes and methods it probes.
Result<doctor::DoctorOptions> OptionsOf(const DoctorArgs& args) {
  Config config = DefaultConfig();
  if (!args.config.empty()) {
    Result<Config> loaded = LoadConfigFile(args.config);
    if (!loaded) return tl::unexpected(loaded.error());
    config = std::move(*loaded);
  }
  doctor::DoctorOptions options;
  options.root = args.root.empty() ? config.host_root : args.root;
  options.segment = args.segment.empty() ? config.segment.name : args.segment;
  options.state_path = args.state.empty() ? config.state_path : args.state;
  options.min_size_bytes = config.min_size_bytes;
  options.max_size_bytes = config.max_size_bytes;
  options.methods = config.methods;
  // Ten beats missed: longer than any pause of a loaded host, far shorter
  // than the time an operator would wait for a dead agent.
  options.max_heartbeat_age_seconds =
      std::max(30.0, 10 * std::chrono::duration<double>(config.segment.heartbeat).count());
  return options;
}

void PrintText(std::ostream& out, const std::vector<doctor::Finding>& findings) {
  std::size_t width = 0;
  for (const doctor::Finding& f : findings) width = std::max(width, f.check.size());
  for (const doctor::Finding& f : findings) {
    const std::string_view status = doctor::StatusName(f.status);
    out << status << std::string(6 - status.size(), ' ') << f.check
        << std::string(width - f.check.size() + 2, ' ') << f.detail << "\n";
    if (f.status != doctor::Status::kOk) {
      out << std::string(6 + width + 2, ' ') << "fix: " << f.fix << "\n";
    }
  }
}

int RunDoctor(const DoctorArgs& args) {
  const Result<doctor::DoctorOptions> options = OptionsOf(args);
  if (!options) {
    // Whatever is wrong with it, the configuration is what the user gave.
    std::cerr << "zcal doctor: " << options.error().message << "\n";
    return ExitStatusOf(options.error(), kExitUsage);
  }
  const doctor::Observations seen = doctor::Observe(*options);
  const std::vector<doctor::Finding> findings = doctor::Diagnose(*options, seen);
  const doctor::Status worst = doctor::Worst(findings);
  if (args.json) {
    std::cout << doctor::FindingsJson(findings).dump(2) << "\n";
  } else {
    PrintText(std::cout, findings);
  }
  const bool failed =
      worst == doctor::Status::kFail || (args.strict && worst == doctor::Status::kWarn);
  return failed ? kExitFailure : kExitOk;
}

}  // namespace

Command AddDoctorCommand(CLI::App& parent) {
  auto args = std::make_shared<DoctorArgs>();
  CLI::App* app = parent.add_subcommand(
      "doctor",
      "Check whether zerocopy send can work and pay on this host, as the user that "
      "runs this sees it: io_uring, kernel features, option and locked memory, user "
      "namespaces, each NIC's IOMMU and offloads, and the agent. One line per check, "
      "ok, warn or fail, with the fix. Exit status 1 when a check fails (with "
      "--strict, also when one warns), 0 otherwise, 2 for bad arguments.");
  app->add_option("-c,--config", args->config,
                  "The agent's YAML configuration (e.g. /etc/zcal/agent.yaml): its "
                  "segment, state file, sizes and methods are checked (default: the "
                  "embedded configs/default.yaml)");
  app->add_option("--segment", args->segment,
                  "Segment name, \"/NAME\" (default: the configuration's segment.name)");
  app->add_option("--state", args->state,
                  "The agent's state file (default: the configuration's state.path)");
  app->add_option("--root", args->root,
                  "Read procfs and sysfs under this directory (default: the "
                  "configuration's host.root, /)");
  app->add_flag("--json", args->json, "Print JSON instead of lines");
  app->add_flag("--strict", args->strict, "Exit with status 1 on a warning too");
  return {app, [args] { return RunDoctor(*args); }};
}

}  // namespace zcal::agent
