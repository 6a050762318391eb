#include "decision_args.h"

#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <string>

#include "zcal/common/text.h"
#include "zcal/common/units.h"

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

Result<std::vector<calibrator::TrafficBin>> ParseTraffic(std::string_view text) {
  std::vector<calibrator::TrafficBin> bins;
  double total = 0;
  for (std::string_view entry : common::Split(text, ',')) {
    entry = common::Trim(entry);
    const std::string quoted = "'" + std::string(entry) + "'";
    const auto colon = entry.find(':');
    if (colon == std::string_view::npos) {
      return Fail(Errc::kInvalidArgument,
                  quoted + " is not SIZE:WEIGHT (e.g. 4KiB:30,64KiB:70)");
    }
    auto size = common::ParseSize(common::Trim(entry.substr(0, colon)));
    if (!size || *size == 0) {
      return Fail(Errc::kInvalidArgument,
                  "the size in " + quoted + " must be a size of at least 1 byte" +
                      (size ? std::string() : " (" + size.error().message + ")"));
    }
    const std::string weight_text(common::Trim(entry.substr(colon + 1)));
    char* end = nullptr;
    errno = 0;
    const double weight = std::strtod(weight_text.c_str(), &end);
    if (weight_text.empty() || end != weight_text.c_str() + weight_text.size() ||
        errno != 0 || !std::isfinite(weight) || weight < 0) {
      return Fail(Errc::kInvalidArgument,
                  "the weight in " + quoted + " must be a number >= 0");
    }
    total += weight;
    bins.push_back({*size, weight});
  }
  if (!(total > 0)) {
    return Fail(Errc::kInvalidArgument, "the weights must not all be zero");
  }
  return bins;
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
