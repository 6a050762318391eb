// The decision options shared by `zcal analyze` and `zcal calibrate`.
#pragma once

#include <string>

#include <CLI/CLI.hpp>

#include "zcal/calibrator/decision.h"

namespace zcal::agent {

struct DecisionArgs {
  std::string objective = "efficiency";
  double tolerance_pct = 2;
  double margin_pct = 3;

  /// The options as the calibrator takes them (percent to fractions).
  calibrator::DecisionOptions ToOptions() const;
};

/// Registers --objective, --tolerance and --margin on `app`, bound to `args`.
void AddDecisionOptions(CLI::App& app, DecisionArgs& args);

}  // namespace zcal::agent
