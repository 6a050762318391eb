// One peer asked in a calibration round, as the peers room reports it and
// the publish room records it.
#pragma once

#include <string>

namespace zcal::agent {

struct PeerAttempt {
  std::string path;      ///< "peer/ADDR:PORT"
  std::string endpoint;  ///< "ADDR:PORT"
  /// zcal_peer_probes_total's label: success, busy, auth_failed,
  /// over_limit, unsupported_version, protocol_error, unreachable,
  /// timeout, vanished, failed (PeerOutcome).
  std::string outcome;
  std::string detail;     ///< the error's sentence, "" on success
  std::string interface;  ///< egress interface, "" when not known
};

}  // namespace zcal::agent
