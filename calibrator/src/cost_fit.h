// Fitting the cost model of one method, and checking its residuals
// (internal to the calibrator; the model is documented in cost_model.h).
#pragma once

#include <cstddef>
#include <span>
#include <string>
#include <vector>

#include "robust_fit.h"
#include "zcal/calibrator/cost_model.h"
#include "zcal/calibrator/sample.h"

namespace zcal::calibrator::detail {

/// One method's successful samples, ascending by size.
struct Observations {
  Method method = Method::kCopy;
  std::vector<double> size;      ///< bytes
  std::vector<double> inv_size;  ///< 1 / size
  std::vector<double> cpu;       ///< ns per byte, > 0
  std::vector<double> thr;       ///< bytes per second, > 0
  /// Start index of each run of equal sizes, then size.size().
  std::vector<std::size_t> groups;

  std::size_t Sizes() const { return groups.empty() ? 0 : groups.size() - 1; }
};

/// The samples of `method` among `samples` that can be fitted (ok, with
/// bytes, wall and CPU time).
Observations Collect(std::span<const Sample> samples, Method method);

/// Observations with the same design and new values (for the bootstrap).
Observations WithValues(const Observations& design, std::vector<double> cpu,
                        std::vector<double> thr);

/// The fitted curves in the form the solver uses.
struct Curve {
  Line cpu;                    ///< ns per byte = a + b / size
  double log_line = kInf;      ///< ln(line rate, bytes/s); kInf: no cap
  double log_cores = kInf;     ///< ln(cores when CPU-bound); kInf: no cap
  /// Groups [0, cpu_bound_groups) were CPU-bound in the fit.
  std::size_t cpu_bound_groups = 0;

  double Cpu(double size) const { return cpu.a + cpu.b / size; }
  double Throughput(double size) const;
  /// Sets the linear caps from the logs (call after changing them).
  void Finish();

  double line = kInf;   ///< exp(log_line)
  double cores = kInf;  ///< exp(log_cores)
  /// Robust scales of the fit's residuals (relative CPU, log throughput per
  /// branch); refits from a start reuse them.
  double cpu_scale = 0;
  double line_scale = 0;
  double cores_scale = 0;
};

/// Fits CPU per byte, then throughput given that fit. `start` (a fit of
/// similar data) speeds up the bootstrap's refits.
Curve FitCurve(const Observations& obs, const Curve* start = nullptr);

/// Relative residuals (observed / fitted - 1), per sample.
std::vector<double> CpuResiduals(const Observations& obs, const Curve& curve);
std::vector<double> ThroughputResiduals(const Observations& obs, const Curve& curve);

/// Structure in the residuals: a run of adjacent sizes (one size or more)
/// whose median residuals deviate from the fit by more than kRejectEffect
/// and by more than kRejectSigmas standard errors; the most significant.
inline constexpr double kRejectEffect = 0.05;
inline constexpr double kRejectSigmas = 4.0;
struct Structure {
  /// A sentence naming the method, quantity, sizes and deviation; "" when
  /// the residuals show none.
  std::string reason;
  double first_size = 0;  ///< bytes, the run's smallest size
  double last_size = 0;   ///< ... and largest
  std::size_t sizes = 0;  ///< sizes in the run
  bool repeated = false;  ///< every size in the run has two samples or more
  bool interior = false;  ///< sizes on both sides of the run were probed
};
Structure FindStructure(const Observations& obs, std::span<const double> residuals,
                        std::string_view quantity);

/// The observations without the samples whose size lies in [lo, hi].
Observations Without(const Observations& obs, double lo, double hi);

/// The public form of a curve.
MethodFit ToMethodFit(const Observations& obs, const Curve& curve);

}  // namespace zcal::calibrator::detail
