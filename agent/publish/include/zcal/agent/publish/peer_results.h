// Peer results in the state: which are kept, which are stale, and their
// aggregate per egress interface, which the interface entries and the host
// default are made of (host_default.h, rule 1).
//
// Thread safety: pure functions over the values passed.
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "zcal/agent/config/config.h"
#include "zcal/agent/domain/agent_state.h"
#include "zcal/agent/domain/peer_attempt.h"
#include "zcal/calibrator/method.h"

namespace zcal::agent {

/// A peer result older than peers.stale_after, or one that never
/// succeeded. The age is taken on the steady clock (`now_steady_ns`,
/// CLOCK_MONOTONIC) for a result this process measured, so that a step of
/// the wall clock neither ages nor rejuvenates it; on the wall clock
/// (`now_ns`, CLOCK_REALTIME) for one loaded from the state file, where a
/// stamp in the future counts as fresh (age 0).
bool PeerStale(const PeerRecord& peer, const Config& config, std::uint64_t now_ns,
               std::optional<std::int64_t> now_steady_ns = std::nullopt);

/// Aggregates, per egress interface, method and depth class, the kept peer
/// results that are fresh
/// (not PeerStale) and usable (UsableForHostDefault: never a kernel-copied,
/// failed or inconclusive result). Peers whose interface is unknown are
/// left out.
InterfaceAggregates AggregatePeers(const AgentState& state, const Config& config,
                                   std::uint64_t now_ns,
                                   std::optional<std::int64_t> now_steady_ns = std::nullopt);

/// Takes a round's peer attempts into the records: the attempt time and
/// outcome of every peer asked; for a success also the egress interface
/// and last_success_ns with `steady_ns` (CLOCK_MONOTONIC, see PeerRecord)
/// (the caller merged its results under its path).
void RecordPeerAttempts(AgentState& state, const std::vector<PeerAttempt>& attempts,
                        std::uint64_t now_ns, std::int64_t steady_ns = 0);

/// Keeps the peers.keep peers with results that succeeded last (their
/// records and results), drops records of peers without results, and every
/// peer when no peers are configured.
void PrunePeers(AgentState& state, const Config& config);

}  // namespace zcal::agent
