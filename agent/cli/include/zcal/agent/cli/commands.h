// The zcal subcommands. Each Add*Command registers its options on the parent
// app and returns the function that runs it once parsing succeeded; a
// program is RunCli over the commands it offers (cli/src/main.cc: all of
// them). The commands are libraries of their own, grouped by what they link
// (agent/cli/meson.build), so that one that needs no service, no Prometheus
// and no sodium (analyze, report) links none of them.
#pragma once

#include <functional>
#include <span>

#include <CLI/CLI.hpp>

#include "zcal/common/result.h"

namespace zcal::agent {

/// Exit statuses shared by all subcommands.
inline constexpr int kExitOk = 0;
inline constexpr int kExitFailure = 1;  ///< ran, and failed (e.g. no segment)
inline constexpr int kExitUsage = 2;    ///< bad arguments, config or input
inline constexpr int kExitNoProbe = 3;  ///< calibrate: no probe could run

/// The exit status of a failure of class `code`: kExitUsage for what the
/// user gave wrong (Errc::kInvalidArgument: an option, a value, a file
/// name), `otherwise` for the rest (what ran and failed; a command passes
/// kExitUsage where all it was given is the user's, such as a
/// configuration). The one place that maps error classes to exit statuses:
/// every command's failure goes through it, also one found without a
/// library call (a command line CLI11 refused).
inline int ExitStatusOf(Errc code, int otherwise = kExitFailure) {
  return code == Errc::kInvalidArgument ? kExitUsage : otherwise;
}

/// ExitStatusOf the error's class.
inline int ExitStatusOf(const Error& error, int otherwise = kExitFailure) {
  return ExitStatusOf(error.code, otherwise);
}

struct Command {
  CLI::App* app = nullptr;
  std::function<int()> run;
};

using CommandFactory = Command (*)(CLI::App& parent);

/// Parses argv among `commands`, runs the chosen one and returns its exit
/// status.
int RunCli(int argc, char** argv, std::span<const CommandFactory> commands);

/// The arguments RunCli was given (argv[1..]), for a command that must see
/// what CLI11 does not keep: whether `--` was written (zcal exec).
std::span<char* const> CommandLineArguments();

Command AddAnalyzeCommand(CLI::App& parent);
Command AddCalibrateCommand(CLI::App& parent);
Command AddReportCommand(CLI::App& parent);
Command AddShowCommand(CLI::App& parent);
Command AddAgentCommand(CLI::App& parent);
Command AddKeygenCommand(CLI::App& parent);
Command AddSinkCommand(CLI::App& parent);
Command AddExportCommand(CLI::App& parent);
Command AddExecCommand(CLI::App& parent);
Command AddDoctorCommand(CLI::App& parent);

}  // namespace zcal::agent
