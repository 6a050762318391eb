// The peers of one calibration round: which exist (found on the calibrating
// thread, a DNS answer reused for peers.refresh), which K of them are asked
// (rendezvous hashing, peer_selection.h), the next of the ranking when one
// answers busy, and how each calibration ended.
//
// Thread safety: RunPeerRound blocks for as long as the resolver and the
// calibrations do; the calibration runner's worker calls it.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "zcal/agent/domain/peer_attempt.h"
#include "zcal/agent/domain/path_id.h"
#include "zcal/agent/peers/peer_discovery.h"
#include "zcal/agent/peers/peers_config.h"
#include "zcal/common/result.h"
#include "zcal/probes/calibration/calibration.h"

namespace zcal::agent {

/// The calibration of one path; probes::RunCalibration in the agent.
using CalibrateFn = std::function<Result<probes::CalibrationReport, probes::CalibrationError>(
    const probes::CalibrationOptions&,
    const std::function<void(const probes::CalibrationProgress&)>&)>;

/// The peers of a round: K of them probed one after another; a peer that
/// answers busy is followed, after a pause of kPeerBusyPause with jitter, by
/// the next peer of the ranking not yet asked, up to kPeerTriesPerSlot
/// peers per slot.
struct PeerRoundPlan {
  PeersConfig settings;
  std::string identity;      ///< this host's, for the rendezvous score
  std::uint64_t round = 0;   ///< the rendezvous round
  /// Options of every peer job (target and path name are set per peer);
  /// budget_seconds is one peer's share.
  probes::CalibrationOptions base;
  /// The last discovery, reused while it is younger than settings.refresh
  /// (`discovered_at`, steady clock).
  std::optional<Discovery> previous;
  std::chrono::steady_clock::time_point discovered_at{};
};

inline constexpr std::chrono::milliseconds kPeerBusyPause{300};  ///< +/- 200 ms
inline constexpr int kPeerTriesPerSlot = 3;

/// A peer that calibrated, under its path (PathId::Peer of its sink).
struct PeerReport {
  PathId path;
  probes::CalibrationReport report;
};

struct PeerRoundOutcome {
  std::vector<PeerReport> reports;     ///< the peers whose outcome is success
  std::vector<PeerAttempt> attempts;   ///< every peer asked, in order
  /// The discovery this round ran a lookup for (nullopt when it reused the
  /// previous one), and when (steady clock).
  std::optional<Discovery> discovery;
  std::chrono::steady_clock::time_point discovered_at{};
  bool cancelled = false;  ///< `cancel` was set, or a probe reported it
};

/// Runs the peers of `plan` with `calibrate`, which gets `cancel` in its
/// options; stops asking once `cancel` is set.
PeerRoundOutcome RunPeerRound(const PeerRoundPlan& plan, const CalibrateFn& calibrate,
                              std::atomic<bool>& cancel);

/// How a peer calibration ended, from the typed failures the probes report
/// (probes::PeerFailure), never from their messages: a session that did
/// not open, or was lost, by its kind (busy, auth_failed, over_limit,
/// unsupported_version, protocol_error, unreachable, timeout, vanished);
/// a report whose probes all failed, or whose last probes failed for two
/// methods or more (the session was lost: the peer killed, its link down),
/// is timeout when the last failed probe met a deadline and vanished
/// otherwise; its partial results are not used. A failure with no peer
/// kind, or of this host's own (invalid_request, local_error), is failed.
/// Any other report is success.
PeerOutcome ClassifyPeerCalibration(
    const Result<probes::CalibrationReport, probes::CalibrationError>& report);

/// The outcome label of a peer failure kind.
PeerOutcome OutcomeOf(probes::PeerFailure failure);

}  // namespace zcal::agent
