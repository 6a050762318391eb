#include "decision_args.h"

#include <string>

namespace zcal::agent {

calibrator::DecisionOptions DecisionArgs::ToOptions() const {
  calibrator::DecisionOptions options;
  // CLI11 checked membership and the traffic validator the histogram, so
  // both parse.
  options.objective = *calibrator::ParseObjective(objective);
  options.tolerance = tolerance_pct / 100;
  options.margin = margin_pct / 100;
  if (!traffic.empty()) options.traffic = *ParseTraffic(traffic);
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
  app.add_option("--traffic", args.traffic,
                 "Message sizes the application sends, as SIZE:WEIGHT pairs "
                 "(e.g. 4KiB:30,64KiB:70, weights in any unit); the threshold "
                 "minimises the expected excess cost under these weights "
                 "instead of uniform weights in log size")
      ->type_name("SIZE:WEIGHT,...")
      ->check(CLI::Validator(
          [](const std::string& text) {
            auto parsed = ParseTraffic(text);
            return parsed ? std::string() : parsed.error().message;
          },
          ""));
}

}  // namespace zcal::agent
