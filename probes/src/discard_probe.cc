#include "probe_runner.h"
#include "zcal/probes/discard.h"

namespace zcal::probes {

calibrator::Sample RunDiscardProbe(DiscardNamespace& discard, const ProbeOptions& options) {
  if (options.size_bytes > kMaxUdpPayloadBytes) {
    calibrator::Sample sample;
    sample.path = options.path;
    sample.method = options.method;
    sample.size_bytes = options.size_bytes;
    sample.repeat = options.repeat;
    sample.status = calibrator::SampleStatus::kFailed;
    sample.error = std::string(calibrator::MethodName(options.method)) + " at " +
                   std::to_string(options.size_bytes) +
                   " bytes: a UDP datagram over IPv4 carries at most " +
                   std::to_string(kMaxUdpPayloadBytes) + " bytes";
    return sample;
  }
  return RunProbeOn(options, [&discard] { return discard.ConnectUdp(); });
}

}  // namespace zcal::probes
