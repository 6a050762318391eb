#include "zcal/probes/calibration/path_runner.h"

#include <algorithm>

namespace zcal::probes {

namespace {

// Probe durations over TCP: shorter ones are dominated by connection setup
// and the TCP ramp; longer ones would let a handful of probes eat the
// budget.
constexpr PathSeconds kMinTcpProbe{0.02};
constexpr PathSeconds kMaxTcpProbe{0.25};

}  // namespace

Support PathRunner::SupportOf(calibrator::Method method, const std::string& root) const {
  return CheckSupport(method, CapabilityOptions{root});
}

PathSeconds TcpProbeDuration(PathSeconds remaining, std::size_t left) {
  return std::clamp(remaining * kBudgetShareForProbes / static_cast<double>(left),
                    kMinTcpProbe, kMaxTcpProbe);
}

Result<std::unique_ptr<PathRunner>, CalibrationError> OpenPath(const CalibrationOptions& options) {
  switch (options.target.kind) {
    case TargetKind::kLoopback:
      return OpenLoopbackPath(options);
    case TargetKind::kPeer:
      return OpenPeerPath(options);
    case TargetKind::kDiscard:
      return OpenDiscardPath(options);
  }
  return FailCalibration(Errc::kInvalidArgument, "path: unknown kind of target");
}

}  // namespace zcal::probes
