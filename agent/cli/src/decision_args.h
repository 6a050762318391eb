// The decision options shared by `zcal analyze` and `zcal calibrate`.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include <CLI/CLI.hpp>

#include "zcal/calibrator/decision.h"
#include "zcal/common/result.h"

namespace zcal::agent {

struct DecisionArgs {
  std::string objective = "efficiency";
  double tolerance_pct = 2;
  double margin_pct = 3;
  std::string traffic;  ///< SIZE:WEIGHT,... or "" (uniform in log size)

  /// The options as the calibrator takes them (percent to fractions).
  calibrator::DecisionOptions ToOptions() const;
};

/// Parses a traffic histogram, "SIZE:WEIGHT[,SIZE:WEIGHT...]" with sizes in
/// the size grammar (4096, 4KiB, 64k) and weights >= 0 in any unit (bytes
/// sent, a share): "4KiB:30,64KiB:70". Errc::kInvalidArgument naming the
/// bad entry (the message does not name the option; CLI11 prefixes it).
Result<std::vector<calibrator::TrafficBin>> ParseTraffic(std::string_view text);

/// Registers --objective, --tolerance, --margin and --traffic on `app`,
/// bound to `args`.
void AddDecisionOptions(CLI::App& app, DecisionArgs& args);

}  // namespace zcal::agent
