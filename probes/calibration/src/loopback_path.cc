// The loopback path: TCP to a sink of this process on 127.0.0.1.
#include <memory>

#include "zcal/probes/calibration/path_runner.h"
#include "zcal/probes/send/connect.h"
#include "zcal/probes/sink/sink.h"
#include "zcal/probes/types/target.h"

namespace zcal::probes {

namespace {

class LoopbackPath final : public PathRunner {
 public:
  explicit LoopbackPath(std::unique_ptr<Sink> sink) : sink_(std::move(sink)) {}

  PathSeconds ProbeDuration(PathSeconds remaining, std::size_t left) const override {
    return TcpProbeDuration(remaining, left);
  }

  Result<void> Prepare(ProbeOptions& probe, std::size_t /*left*/) override {
    probe.sink = sink_->endpoint();
    return {};
  }

  PathProbe Probe(const ProbeOptions& probe) override {
    return {ProbeOn(probe, [&probe] { return ConnectTcp(probe.sink); }, &arena_),
            std::nullopt};
  }

  std::optional<SessionLoss> Close(const std::vector<calibrator::Sample>& /*samples*/,
                                   bool /*stopped*/) override {
    sink_.reset();
    return std::nullopt;
  }

 private:
  std::unique_ptr<Sink> sink_;
};

}  // namespace

Result<std::unique_ptr<PathRunner>, CalibrationError> OpenLoopbackPath(
    const CalibrationOptions& /*options*/) {
  auto started = Sink::Start(SinkOptions{});
  if (!started) {
    return FailCalibration(Errc::kUnsupported,
                           "no probe could run on path loopback: " + started.error().message);
  }
  return std::make_unique<LoopbackPath>(std::move(*started));
}

}  // namespace zcal::probes
