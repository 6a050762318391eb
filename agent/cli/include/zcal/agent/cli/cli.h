// Entry point of the zcal command line.
#pragma once

namespace zcal::agent {

/// Parses argv, runs the chosen subcommand and returns the exit status
/// (see the kExit* constants in the subcommands).
int RunCli(int argc, char** argv);

}  // namespace zcal::agent
