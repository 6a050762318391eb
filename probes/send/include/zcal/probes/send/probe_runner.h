// The body of a probe, shared by the paths: each path brings its own
// connected socket (TCP to a sink, UDP in the discard namespace).
#pragma once

#include <functional>
#include <optional>

#include "zcal/calibrator/sample.h"
#include "zcal/common/unique_fd.h"
#include "zcal/probes/send/buffer_pool.h"
#include "zcal/probes/send/probe.h"
#include "zcal/probes/types/peer_failure.h"

namespace zcal::probes {

/// A probe's sample and, set exactly when its status is kFailed, how it
/// failed: the connection's kind (ConnectTcp, a peer session's data
/// connection), the sender's (sender.h: SendResult), kTimeout when not one
/// byte was sent by the deadline, kLocalError for this host's part
/// (buffers, sender setup, cancel). A probe that measured, or found its
/// method unsupported, carries none.
struct ProbeOutcome {
  calibrator::Sample sample;
  std::optional<PeerFailure> failure;
};

/// How a path connects a probe's socket.
using ProbeConnect = std::function<Result<common::UniqueFd, PeerError>()>;

/// RunProbe with the socket from `connect` (called once, after the buffers
/// are allocated and before the sender is set up; the probe closes the
/// socket), and how a failed probe failed. The buffers come from `arena`
/// when given (the probes of one calibration), else from a mapping of the
/// probe's own. options.sink is not used.
ProbeOutcome ProbeOn(const ProbeOptions& options, const ProbeConnect& connect,
                     BufferArena* arena = nullptr);

/// ProbeOn's sample, for a `connect` that does not type its failures (they
/// count as this host's).
calibrator::Sample RunProbeOn(const ProbeOptions& options,
                              const std::function<Result<common::UniqueFd>()>& connect);

}  // namespace zcal::probes
