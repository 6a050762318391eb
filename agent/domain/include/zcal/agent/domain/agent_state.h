// What the agent knows: the published result of every (path, method, depth
// class), the hysteresis candidates, and the peers it asked, each keyed by
// its PathId. The state room keeps it in a file (state/state.h); the
// publish room builds from it the one published table (publish/results.h)
// that the segment and the metrics' published families are made of; the
// report shows it.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "zcal/agent/domain/contradiction_record.h"
#include "zcal/agent/domain/depth_class.h"
#include "zcal/agent/domain/host_info.h"
#include "zcal/agent/domain/path_id.h"
#include "zcal/agent/domain/peer_attempt.h"
#include "zcal/agent/domain/traffic_mix.h"
#include "zcal/calibrator/decision.h"
#include "zcal/calibrator/method.h"
#include "zcal/probes/host/cpu_accounting.h"

namespace zcal::agent {

/// What is known about one (path, method, depth class).
struct MethodState {
  calibrator::MethodResult published;  ///< what readers are told
  /// CLOCK_REALTIME ns of the calibration that produced `published`, or the
  /// latest one that agreed with it.
  std::uint64_t measured_at_ns = 0;
  /// A differing result waiting for a second calibration to agree.
  std::optional<calibrator::MethodResult> pending;
  /// The host's load over the probes of that same calibration (the one
  /// measured_at_ns is of), so that a reader sees what the published
  /// result was measured under. nullopt when it was not measured
  /// (/proc/stat unreadable, a window under a clock tick, a state file
  /// written without it) and for a peer aggregate, which is no one
  /// calibration.
  std::optional<probes::HostLoad> load;
};

/// Which result of a path: a zerocopy method at the depth class it was
/// measured at. Ordered by method, then depth with stream first, the order
/// of the segment's entries. A method alone names its stream class, what
/// every result was before depth classes.
struct MethodKey {
  // Implicit on purpose: `paths[p][method]` is the stream result.
  MethodKey(calibrator::Method m = calibrator::Method::kMsgZerocopy,
            DepthClass d = DepthClass::kStream)
      : method(m), depth(d) {}
  calibrator::Method method;
  DepthClass depth;
  friend auto operator<=>(const MethodKey&, const MethodKey&) = default;
};

/// One path's results: (method, depth class) -> state.
using MethodStates = std::map<MethodKey, MethodState>;

/// What is known about one peer besides its results (AgentState::paths
/// under the same PathId, which holds its sink's endpoint).
struct PeerRecord {
  /// The interface a connection to it left through at the last success
  /// (peers/peer_discovery.h, EgressInterface); "" when not known.
  std::string interface;
  std::uint64_t last_attempt_ns = 0;  ///< CLOCK_REALTIME
  std::uint64_t last_success_ns = 0;  ///< 0 = never; results are from then
  PeerOutcome last_outcome = PeerOutcome::kFailed;
  /// CLOCK_MONOTONIC (ns) of last_success_ns when this process measured
  /// it, so that its age survives a step of the wall clock; 0 for a result
  /// loaded from the state file (not saved: another boot's steady clock
  /// means nothing here).
  std::int64_t last_success_steady_ns = 0;
};

struct AgentState {
  std::uint64_t saved_at_ns = 0;         ///< CLOCK_REALTIME when written
  std::uint64_t fingerprint = 0;         ///< host facts of the calibration
  std::uint64_t last_success_ns = 0;     ///< end of the last calibration
  HostInfo host;  ///< the facts it ran under, for people (the report)
  /// path -> (method, depth class) -> state. Zerocopy methods only;
  /// every method with a numeric class has its stream class too (the
  /// probes calibrate stream with every class: calibrator/depth.h).
  std::map<PathId, MethodStates> paths;
  /// Peer (PathId::Peer) -> what is known of it: the peers whose results are
  /// kept (at most peers.keep with results) and those tried without one.
  std::map<PathId, PeerRecord> peers;
  /// Calibration rounds that probed peers; the round of the rendezvous
  /// choice (peers/peer_selection.h), kept across restarts so that a
  /// restarting agent moves on to the next peers instead of asking the
  /// same again.
  std::uint64_t peer_round = 0;
  /// Path -> which traffic mix its last accepted calibration was decided
  /// for; paths without results have none (PruneDecidedFor).
  std::map<PathId, DecidedFor> decided_for;
  /// The field contradictions in force when it was saved, so that a
  /// restart keeps their entries flagged (Publisher::LoadSaved).
  std::vector<ContradictionRecord> contradictions;

  bool empty() const { return paths.empty(); }
};

/// The kept peers' results through one interface, for one method and depth
/// class.
struct InterfaceAggregate {
  /// The median result: the results ordered by threshold (`always` by its
  /// start, `never` above every threshold), the upper of the two middle
  /// ones for an even count so that ties lean to copying; its
  /// measured_at_ns is the newest of those aggregated.
  MethodState state;
  std::size_t peers = 0;  ///< results aggregated
  /// Largest minus smallest threshold among them; nullopt with fewer than
  /// two thresholds.
  std::optional<std::uint64_t> spread_bytes;
};
/// interface -> (method, depth class) -> aggregate.
using InterfaceAggregates = std::map<std::string, std::map<MethodKey, InterfaceAggregate>>;

}  // namespace zcal::agent
