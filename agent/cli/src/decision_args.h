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

/// The traffic grammar of --traffic (calibrator/decision_options.h).
using calibrator::ParseTraffic;

/// Registers --objective, --tolerance, --margin and --traffic on `app`,
/// bound to `args`.
void AddDecisionOptions(CLI::App& app, DecisionArgs& args);

}  // namespace zcal::agent
