// The cost model: what one send method costs at any message size on one
// path, fitted over all sizes and repeats of its samples (docs/calibrator.md,
// "The cost model").
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "zcal/calibrator/method.h"

namespace zcal::calibrator {

/// The fitted curves of one method on one path. With s the message size in
/// bytes:
///
///   cpu_ns_per_byte(s) = per_byte_ns + per_send_ns / s
///   throughput(s)      = min(line_rate_bytes_per_second,
///                            cpu_bound_cores * 1e9 / cpu_ns_per_byte(s))
///
/// in bytes per second. A cap that is absent (nullopt) was not reached in
/// the fitted sizes: without a line rate the sender was CPU-bound at every
/// size, without cpu_bound_cores it ran at the line rate at every size.
/// Standard errors and the covariance come from the bootstrap (0 when the
/// model was rejected before the bootstrap ran).
struct MethodFit {
  Method method = Method::kCopy;
  double per_byte_ns = 0;  ///< a: sender CPU ns per byte moved, >= 0
  double per_send_ns = 0;  ///< b: sender CPU ns per send call, >= 0
  std::optional<double> line_rate_bytes_per_second;
  std::optional<double> cpu_bound_cores;  ///< CPU (cores) when CPU-bound
  double per_byte_ns_se = 0;
  double per_send_ns_se = 0;
  double per_byte_per_send_cov = 0;  ///< covariance of a and b, ns^2/byte
  std::optional<double> line_rate_se;       ///< bytes per second
  std::optional<double> cpu_bound_cores_se;  ///< cores
  /// Robust standard deviation of the relative residuals (0.1 = 10 %).
  double cpu_residual = 0;
  double throughput_residual = 0;
  std::uint32_t samples = 0;  ///< successful samples fitted
  std::uint32_t sizes = 0;    ///< distinct sizes among them
  std::uint64_t min_size_bytes = 0;
  std::uint64_t max_size_bytes = 0;

  /// The curves above; size_bytes > 0.
  double CpuNsPerByte(double size_bytes) const;
  double ThroughputBytesPerSecond(double size_bytes) const;
};

/// Sizes where the curves do not hold but their own comparison does: a
/// local deviation of one or two adjacent sizes that repeated samples
/// confirm (a dip in the copy path at one size, say). The fits leave these
/// sizes out, and the threshold rule takes their per-size cost there.
struct ModelException {
  std::uint64_t min_size_bytes = 0;
  std::uint64_t max_size_bytes = 0;
  std::string reason;  ///< as CostModel::rejection

  bool operator==(const ModelException&) const = default;
};

/// The model behind one zerocopy method's verdict: its fit and its
/// baseline's, compared over [min_size_bytes, max_size_bytes] (the sizes
/// both were probed at).
struct CostModel {
  MethodFit zerocopy;
  MethodFit baseline;
  std::uint64_t min_size_bytes = 0;
  std::uint64_t max_size_bytes = 0;
  /// False when the residuals showed structure the curves cannot follow;
  /// `rejection` then says where ("copy CPU per byte at 16384 bytes is 14 %
  /// below the fit ...") and the verdict comes from per-size comparisons.
  bool accepted = false;
  std::string rejection;
  /// With a rejection: the run of sizes that showed it (bytes), and whether
  /// repeats confirm it (every size in it has two samples or more). An
  /// unconfirmed one may be one wild probe: the planner probes there again.
  std::uint64_t rejected_min_size_bytes = 0;
  std::uint64_t rejected_max_size_bytes = 0;
  bool rejection_confirmed = false;
  /// With a rejection (accepted false): a local fit of zerocopy's cost
  /// relative to the baseline's over the probed sizes decided instead of
  /// the curves (docs/calibrator.md, "When the model is rejected"). The
  /// fits above are then the rejected curves.
  bool local_fit = false;
  /// Ascending: at most two off the curves, four in all with a local fit
  /// (sizes off the local fit beyond their noise; reason "... above the
  /// local fit ...").
  std::vector<ModelException> exceptions;
  std::uint32_t bootstrap_replicates = 0;  ///< 0 when none ran
};

}  // namespace zcal::calibrator
