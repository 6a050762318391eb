// The body of a probe, shared by the paths: each path brings its own
// connected socket (TCP to a sink, UDP in the discard namespace).
#pragma once

#include <functional>

#include "zcal/common/result.h"
#include "zcal/common/unique_fd.h"
#include "zcal/calibrator/sample.h"
#include "zcal/probes/probe.h"

namespace zcal::probes {

/// RunProbe with the socket from `connect` (called once, after the buffers
/// are allocated and before the sender is set up; the probe closes the
/// socket). options.sink is not used.
calibrator::Sample RunProbeOn(const ProbeOptions& options,
                              const std::function<Result<common::UniqueFd>()>& connect);

}  // namespace zcal::probes
