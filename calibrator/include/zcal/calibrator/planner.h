// The sweep planner: decides which probe to run next.
//
// It is a pure object. The caller loops:
//
//   SweepPlanner planner(options);
//   while (auto request = planner.Next()) {
//     planner.Record(RunProbe(*request));   // the caller's measurement
//   }
//   Analysis result = planner.Result();
//
// Plan: a coarse geometric grid of sizes (min_size, min_size*growth, ...,
// max_size), every method at every size, `repeats` times. Within a round the
// methods are interleaved at each size and sizes are visited in order, and
// rounds repeat the whole grid, so slow drift on a shared machine affects all
// methods alike. Then, for each zerocopy method whose verdict is a threshold,
// the planner bisects between the largest losing and the smallest winning
// size until they are closer than `resolution` times the winning size, and
// adds repeats (up to max_repeats) at deciding sizes whose comparison is not
// decisive. A method that reports unsupported, fails, or whose sends the
// kernel copied is not probed again.
#pragma once

#include <cstddef>
#include <cstdint>
#include <deque>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "zcal/calibrator/decision.h"
#include "zcal/calibrator/method.h"
#include "zcal/calibrator/sample.h"

namespace zcal::calibrator {

struct PlannerOptions {
  std::string path = "default";     ///< copied into requests and results
  std::vector<Method> methods = {kAllMethods.begin(), kAllMethods.end()};
  std::uint64_t min_size = 1024;        ///< bytes, >= 1
  std::uint64_t max_size = 256 * 1024;  ///< bytes, >= min_size
  double growth = 2.0;                  ///< coarse grid factor, > 1
  double resolution = 0.125;  ///< bisect until gap <= resolution * size
  std::uint32_t repeats = 3;      ///< repeats per size on the coarse grid
  std::uint32_t max_repeats = 9;  ///< cap when adding repeats for noise
  std::size_t max_probes = 2000;  ///< hard cap on Next() requests
  std::uint64_t size_alignment = 256;  ///< bisection sizes rounded to this
  DecisionOptions decision;
};

/// Checks the options; a sentence naming the bad field, or empty if valid.
std::string ValidatePlannerOptions(const PlannerOptions& options);

struct ProbeRequest {
  Method method = Method::kCopy;
  std::uint64_t size_bytes = 0;
  std::uint32_t repeat = 0;
};

class SweepPlanner {
 public:
  /// Options must be valid (ValidatePlannerOptions returns empty).
  explicit SweepPlanner(PlannerOptions options);

  /// The next probe to run, or nullopt when the plan is complete.
  std::optional<ProbeRequest> Next();

  /// Feeds the result of the request last returned by Next().
  void Record(const Sample& sample);

  /// Everything recorded so far.
  const std::vector<Sample>& samples() const { return samples_; }

  /// The analysis of the samples recorded so far (decision options of the
  /// planner; path from the options).
  Analysis Result() const;

  /// Probes issued so far and a rough estimate of the total, for progress.
  std::size_t issued() const { return issued_; }
  std::size_t EstimatedTotal() const;

  const PlannerOptions& options() const { return options_; }

 private:
  void PlanCoarse();
  void PlanRefinement();
  bool Active(Method method) const;

  PlannerOptions options_;
  std::vector<std::uint64_t> grid_;
  std::deque<ProbeRequest> queue_;
  std::vector<Sample> samples_;
  std::set<Method> dropped_;
  std::map<Method, std::uint32_t> failures_;
  std::size_t issued_ = 0;
  std::size_t refinements_ = 0;
  bool coarse_planned_ = false;
};

}  // namespace zcal::calibrator
