// The discard path: UDP in a private network namespace whose lo drops
// every datagram (discard.h). Its probes have a fixed length.
#include <memory>

#include "zcal/probes/calibration/path_runner.h"
#include "zcal/probes/discard/discard.h"

namespace zcal::probes {

namespace {

class DiscardPath final : public PathRunner {
 public:
  explicit DiscardPath(std::unique_ptr<DiscardNamespace> discard)
      : discard_(std::move(discard)) {}
  // A host where no namespace can be made: every method is unsupported
  // on this path, for the one reason.
  explicit DiscardPath(Error missing) : missing_(std::move(missing)) {}

  Support SupportOf(calibrator::Method method, const std::string& root) const override {
    if (!discard_) return Support{false, missing_.message};
    return PathRunner::SupportOf(method, root);
  }

  PathSeconds ProbeDuration(PathSeconds /*remaining*/, std::size_t /*left*/) const override {
    return kDiscardProbe;
  }

  Result<void> Prepare(ProbeOptions& /*probe*/, std::size_t /*left*/) override { return {}; }

  PathProbe Probe(const ProbeOptions& probe) override {
    return {DiscardProbeOn(*discard_, probe, &arena_), std::nullopt};
  }

  std::optional<SessionLoss> Close(const std::vector<calibrator::Sample>& /*samples*/,
                                   bool /*stopped*/) override {
    discard_.reset();
    return std::nullopt;
  }

 private:
  std::unique_ptr<DiscardNamespace> discard_;
  Error missing_;
};

}  // namespace

Result<std::unique_ptr<PathRunner>, CalibrationError> OpenDiscardPath(
    const CalibrationOptions& options) {
  // The namespace lives as long as the calibration.
  auto created = DiscardNamespace::Create(DiscardNamespaceOptions{"blackhole", options.root});
  if (created) return std::make_unique<DiscardPath>(std::move(*created));
  if (created.error().code == Errc::kUnsupported) {
    return std::make_unique<DiscardPath>(created.error());
  }
  return FailCalibration(Errc::kUnsupported,
                         "no probe could run on path discard: " + created.error().message);
}

}  // namespace zcal::probes
