// zcal exec: runs a command with the exported variables in its
// environment, so that a transport that reads a variable at start takes the
// measured value without a wrapper script (docs/export.md).

#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <iostream>
#include <memory>
#include <sstream>
#include <string>
#include <string_view>
#include <vector>

#include "export_options.h"
#include "zcal/agent/cli/commands.h"
#include "zcal/agent/report/export_format.h"
#include "zcal/common/clock.h"

namespace zcal::agent {

namespace {

// env(1)'s statuses for a command that could not be run.
constexpr int kExitCannotRun = 126;
constexpr int kExitNotFound = 127;

struct ExecArgs {
  ExportKeyArgs key;
  ExportPlanOptions plan;
  std::string formats = "env,libfabric";
  std::vector<std::string> command;
};

int Refuse(const std::string& message, int status) {
  std::cerr << "zcal exec: " << message << ".\n";
  return status;
}

Result<std::vector<ExportFormat>> ParseFormats(const std::string& list) {
  std::vector<ExportFormat> formats;
  std::istringstream in(list);
  for (std::string name; std::getline(in, name, ',');) {
    auto format = ParseExportFormat(name);
    if (!format) return tl::unexpected(format.error());
    if (*format != ExportFormat::kEnv && *format != ExportFormat::kLibfabric)
      return Fail(Errc::kInvalidArgument,
                  "--format " + name + " sets no variables: zcal exec takes env and libfabric");
    if (std::find(formats.begin(), formats.end(), *format) == formats.end())
      formats.push_back(*format);
  }
  if (formats.empty()) return Fail(Errc::kInvalidArgument, "--format names no format");
  return formats;
}

// CLI11 keeps no trace of `--`; the command must follow one so that none of
// its own options is taken for one of zcal's.
// The command is the arguments' tail: `--` right before it.
bool HasSeparator(std::size_t command_words) {
  const auto args = CommandLineArguments();
  return args.size() > command_words &&
         std::string_view(args[args.size() - command_words - 1]) == "--";
}

int RunExec(const ExecArgs& args) {
  if (args.command.empty() || !HasSeparator(args.command.size()))
    return Refuse("name the command after --, as in: zcal exec -- CMD ARGS",
                  ExitStatusOf(Errc::kInvalidArgument));
  auto formats = ParseFormats(args.formats);
  if (!formats) return Refuse(formats.error().message, ExitStatusOf(formats.error()));
  auto plan = args.plan.Plan(*formats);
  if (!plan) return Refuse(plan.error().message, ExitStatusOf(plan.error()));

  std::ostringstream warnings;
  // A class asked on the command line must be one the segment holds.
  ExportKeyArgs key = args.key;
  key.require_class = !plan->depth_asked.empty();
  auto selection = SelectExport(key, *plan, "zcal exec", warnings, common::RealtimeNs());
  std::cerr << warnings.str();
  if (!selection) return Refuse(selection.error().message, ExitStatusOf(selection.error()));
  // Every format sees all the methods read, so that the variables they
  // share (ZCAL_SOURCE) agree.
  for (ExportFormat f : *formats) {
    auto vars = ExportVariables(f, selection->values);
    if (!vars) return Refuse(vars.error().message, ExitStatusOf(vars.error()));
    for (const auto& [name, value] : *vars) {
      if (setenv(name.c_str(), value.c_str(), 1) != 0)
        return Refuse("cannot set " + name + ": " + std::strerror(errno), kExitFailure);
    }
  }
  std::vector<char*> argv;
  for (const std::string& a : args.command) argv.push_back(const_cast<char*>(a.c_str()));
  argv.push_back(nullptr);
  std::cout.flush();
  execvp(argv[0], argv.data());
  const int error = errno;
  return Refuse("cannot run " + args.command[0] + ": " + std::strerror(error),
                error == ENOENT || error == ENOTDIR ? kExitNotFound : kExitCannotRun);
}

}  // namespace

Command AddExecCommand(CLI::App& parent) {
  auto args = std::make_shared<ExecArgs>();
  CLI::App* app = parent.add_subcommand(
      "exec",
      "Run CMD with the variables of zcal export (env and libfabric formats) added to its "
      "environment; its exit status is zcal's. The same refusals as zcal export (for the "
      "methods the formats' consumers read); 126 or 127 when CMD cannot be run.");
  AddExportKeyOptions(*app, args->key);
  args->plan.Add(*app);
  app->add_option("--format", args->formats,
                  "Comma-separated formats whose variables to set: env, libfabric "
                  "(default: env,libfabric)");
  app->add_option("CMD", args->command, "The command and its arguments, after --");
  return {app, [args] { return RunExec(*args); }};
}

}  // namespace zcal::agent
