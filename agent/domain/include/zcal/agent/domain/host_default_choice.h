// What the host-default rule (publish/host_default.h) decided: one type for
// the segment's table and header, the log and the metrics
// (zcal_host_default_info).
#pragma once

#include <string>

#include "zcal/agent/domain/agent_state.h"
#include "zcal/agent/domain/published_entry.h"

namespace zcal::agent {

/// Where the host default comes from, or why there is none, and what it
/// publishes. Beside it are the configuration it is decided under
/// (HostDefaultConfig) and the NIC it stands for as read (HostDefaultNic).
struct HostDefaultChoice {
  /// Named where shown: HostDefaultSourceName, HostDefaultAbsenceReason.
  HostDefaultSource source = HostDefaultSource::kNoPath;
  /// The name of the NIC it stands for, as read (HostDefaultNic); "" when
  /// that NIC was not found.
  std::string interface;
  /// What to publish with scope host_default, per method and depth class
  /// (empty when there is none).
  MethodStates methods;
  bool estimated = false;
  /// One sentence for the log, `zcal show` (through the source) and the
  /// metrics: where the host default comes from, or why there is none.
  std::string explanation;
};

}  // namespace zcal::agent
