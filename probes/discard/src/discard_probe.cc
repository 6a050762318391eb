#include "zcal/probes/discard/discard.h"
#include "zcal/probes/send/probe_runner.h"
#include "zcal/probes/types/peer_failure.h"

namespace zcal::probes {

ProbeOutcome DiscardProbeOn(DiscardNamespace& discard, const ProbeOptions& options,
                            BufferArena* arena) {
  if (options.size_bytes > kMaxUdpPayloadBytes) {
    calibrator::Sample sample;
    sample.path = options.path;
    sample.method = options.method;
    sample.size_bytes = options.size_bytes;
    sample.repeat = options.repeat;
    sample.depth = calibrator::IsZerocopy(options.method) ? options.depth : calibrator::kStreamDepth;
    sample.status = calibrator::SampleStatus::kFailed;
    sample.error = std::string(calibrator::MethodName(options.method)) + " at " +
                   std::to_string(options.size_bytes) +
                   " bytes: a UDP datagram over IPv4 carries at most " +
                   std::to_string(kMaxUdpPayloadBytes) + " bytes";
    return {std::move(sample), PeerFailure::kLocalError};
  }
  return ProbeOn(
      options,
      [&discard]() -> Result<common::UniqueFd, PeerError> {
        // The namespace's helper is this host's: whatever fails there is local.
        auto fd = discard.ConnectUdp();
        if (!fd) return FailPeer(PeerFailure::kLocalError, fd.error().code, fd.error().message);
        return std::move(*fd);
      },
      arena);
}

calibrator::Sample RunDiscardProbe(DiscardNamespace& discard, const ProbeOptions& options) {
  return DiscardProbeOn(discard, options).sample;
}

}  // namespace zcal::probes
