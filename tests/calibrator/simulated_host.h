// A simulated host for the calibrator's tests: every method's CPU per byte
// is a + b / size (a per-byte cost and a per-send cost), throughput is the
// line rate or, on a CPU-bound host, what one core can push, and every
// probe's figures carry multiplicative uniform noise. Shapes the cost model
// does not have can be added: a per-send part falling as size^-p with p != 1,
// a knee (bytes beyond a cache size cost more), a step, a dip at one size.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <random>
#include <utility>
#include <vector>

#include "zcal/calibrator/planner.h"
#include "zcal/calibrator/sample.h"

namespace zcal::calibrator::testing {

struct SimCost {
  double per_byte_ns = 0.30;
  double per_send_ns = 1500;
  /// The second part of CPU per byte is per_send_ns / size^exponent: 1 is
  /// a cost per send call (the model's shape); other values are not.
  double per_send_exponent = 1;
};

/// From size_bytes on, each byte beyond size_bytes costs extra_per_byte_ns
/// more: CPU per byte grows by extra * (size - knee) / size, as a copy whose
/// source no longer fits in a cache.
struct SimKnee {
  std::uint64_t size_bytes = 0;
  double extra_per_byte_ns = 0;
};

struct SimulatedHost {
  /// Costs per method; methods not listed cost like copy.
  std::map<Method, SimCost> costs = {{Method::kCopy, {0.30, 1500}},
                                     {Method::kMsgZerocopy, {0.12, 3500}}};
  double line_rate_bytes_per_ns = 5.0;
  /// CPU-bound host: throughput = min(line rate, 1 core / CPU per byte),
  /// CPU = one core at most. Otherwise every method runs at the line rate.
  bool cpu_bound = false;
  double noise = 0.20;  ///< uniform, +-, on throughput and CPU separately
  bool kernel_copies = false;
  /// Multiplies a method's CPU per byte at one size: a local dip (< 1) or
  /// bump (> 1) that the model cannot follow.
  std::map<std::pair<Method, std::uint64_t>, double> local_factor;
  /// Multiplies a method's CPU per byte at every size >= first by second: a
  /// step (another code path in the kernel from some size on).
  std::map<Method, std::pair<std::uint64_t, double>> step;
  std::map<Method, SimKnee> knee;

  double CpuPerByte(Method m, std::uint64_t size) const;
  double ThroughputBytesPerNs(Method m, std::uint64_t size) const;

  /// The noiseless crossover of a zerocopy method and its baseline under
  /// the efficiency objective (where its CPU per byte falls to 1 - margin
  /// of the baseline's; throughput never decides on these hosts).
  double TrueThreshold(Method zerocopy, Method baseline, double margin = 0.03) const;

  /// One probe of 0.1 s.
  Sample Probe(const ProbeRequest& request, std::mt19937_64& rng) const;

  /// A table as a benchmark would give it: `repeats` samples of each method
  /// at each size, methods interleaved.
  std::vector<Sample> Table(const std::vector<Method>& methods,
                            const std::vector<std::uint64_t>& sizes, int repeats,
                            std::mt19937_64& rng) const;
};

/// Sizes from `lo` to `hi` (inclusive) in steps of 2^(1/steps_per_octave),
/// rounded to whole bytes.
std::vector<std::uint64_t> GeometricSizes(std::uint64_t lo, std::uint64_t hi,
                                          int steps_per_octave);

struct Calibration {
  Analysis analysis;
  std::size_t probes = 0;
  std::vector<Sample> samples;
  /// The clock ended the probes with methods still refined (the runner
  /// would report those as StopReason::kBudget).
  bool clock_ended = false;
};

/// Runs the planner against the host until it stops, or, with a clock,
/// until `clock_probes` probes have run: as the runner on the discard path
/// does, the planner is told before each probe how many the clock leaves.
Calibration Calibrate(const SimulatedHost& host, PlannerOptions options,
                      std::uint64_t seed, std::optional<std::size_t> clock_probes = std::nullopt);

}  // namespace zcal::calibrator::testing
