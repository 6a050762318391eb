#include "decision_args.h"

namespace zcal::agent {

calibrator::DecisionOptions DecisionArgs::ToOptions() const {
  calibrator::DecisionOptions options;
  // CLI11 checked membership, so the name parses.
  options.objective = *calibrator::ParseObjective(objective);
  options.tolerance = tolerance_pct / 100;
  options.margin = margin_pct / 100;
  return options;
}

void AddDecisionOptions(CLI::App& app, DecisionArgs& args) {
  app.add_option("--objective", args.objective,
                 "efficiency: same throughput for less CPU per byte; "
                 "throughput: more bytes per second; cpu: less CPU per byte")
      ->check(CLI::IsMember({"efficiency", "throughput", "cpu"}))
      ->capture_default_str();
  app.add_option("--tolerance", args.tolerance_pct,
                 "Throughput loss allowed under the efficiency objective, in "
                 "percent")
      ->check(CLI::Range(0.0, 99.0))
      ->capture_default_str();
  app.add_option("--margin", args.margin_pct,
                 "Gain required for zerocopy to win, in percent")
      ->check(CLI::Range(0.0, 99.0))
      ->capture_default_str();
}

}  // namespace zcal::agent
