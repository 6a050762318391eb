// Runs a program and captures its exit status and output, for tests that
// start the real zcal binary.
#pragma once

#include <string>
#include <vector>

namespace zcal::testing {

struct CommandResult {
  int exit_status = -1;  ///< exit code, or 128 + signal number
  std::string out;
  std::string err;
  long max_rss_kib = 0;  ///< peak resident memory of the child, KiB
};

/// Runs argv[0] (a path) with the arguments, stdin from `input`.
CommandResult RunCommand(const std::vector<std::string>& argv,
                         const std::string& input = {});

/// The zcal binary under test: $ZCAL, set by meson.
std::string ZcalPath();

/// A file in the source tree: $ZCAL_SOURCE_ROOT/relative.
std::string SourcePath(const std::string& relative);

}  // namespace zcal::testing
