// From calibrations to what is published: hysteresis per (path, method,
// depth class) and the one published table, from which the segment takes
// its entries (SegmentEntries) and the metrics their per-path families.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "zcal/agent/config/config.h"
#include "zcal/agent/domain/agent_state.h"
#include "zcal/agent/domain/host_default_choice.h"
#include "zcal/agent/domain/host_info.h"
#include "zcal/agent/domain/published_entry.h"
#include "zcal/calibrator/decision.h"
#include "zcal/calibrator/hysteresis.h"
#include "zcal/probes/host/cpu_accounting.h"

namespace zcal::agent {

/// Merges the fresh results of one path at one depth class into `state`
/// through calibrator::ApplyHysteresis, method by method: each (method,
/// class) has its own published result and candidate. A published result that
/// a fresh one agrees with gets `now_ns` as its measurement time and
/// `load` (the host's load over the fresh calibration's probes) as its
/// load: it was just confirmed under it. A result kept against a
/// disagreeing one keeps both of the calibration behind it. Returns one sentence per method for the log, e.g.
/// "loopback/msg_zerocopy: never (kernel_copied), unchanged",
/// "discard/msg_zerocopy@1: threshold 64KiB, published".
std::vector<std::string> MergeCalibration(
    AgentState& state, const PathId& path,
    const calibrator::PathResult& fresh, std::uint64_t now_ns,
    const std::optional<probes::HostLoad>& load,
    const calibrator::HysteresisOptions& options,
    DepthClass depth = DepthClass::kStream);

/// Removes the result of (path, key) that a calibration did not probe
/// (`why`, e.g. "depths 1 and stream are both never"): its readers get the
/// scope's stream entry, which gives the same answer. The stream class is
/// never removed. Returns the log line when something was removed (once:
/// a later round finds nothing to remove), nullopt otherwise.
std::optional<std::string> DropClass(AgentState& state, const PathId& path,
                                     const MethodKey& key, std::string_view why);

/// "discard/msg_zerocopy" for the stream class, "discard/msg_zerocopy@4"
/// for another: a result in log lines.
std::string ResultName(const PathId& path, const MethodKey& key);

/// The kind of `path` under `config`: kPeer for a peer, the configured
/// type for a path of config.paths, nullopt for a path it does not hold.
std::optional<probes::TargetKind> PathKind(const Config& config, const PathId& path);

/// Drops the paths, methods and depth classes that `config` no longer
/// calibrates (CalibratedDepths: loopback keeps stream only).
void PruneState(AgentState& state, const Config& config);

/// Drops the decided_for of paths that have no results in `state`.
void PruneDecidedFor(AgentState& state);

/// What is published, once per publish: the segment's entries and the
/// metrics' published families both come from it, and where its host
/// default comes from.
struct PublishedTable {
  /// Every entry, each path's with its PathId, load and pending result;
  /// every kept peer's under its own host prefix, also where two peers
  /// share an address (SegmentEntries keeps one of them for the segment).
  std::vector<PublishedEntry> entries;
  /// The peer aggregates behind the interface entries (for the metrics).
  InterfaceAggregates interfaces;
  /// Where the host default comes from (the segment's header, the log,
  /// the metrics); its entries are among `entries`.
  HostDefaultChoice host_default;
};

/// The published table: per configured path, zerocopy method and depth
/// class one entry under the path's own scope (loopback, discard); a class
/// is published only beside its method's stream entry in the same scope
/// (readers fall back to it), and entries of a scope and method are in
/// class order, stream first; per kept peer its
/// entries under its host prefix (/32, /128), the peers ordered by the
/// text of their address, then of their path; per egress interface the
/// aggregate of its fresh peer results (AggregatePeers, at `now_ns` and
/// `now_steady_ns`); then
/// the host default as ChooseHostDefault (host_default.h) decides, with
/// `nic` the NIC whose results it stands for and the aggregate of that
/// NIC's interface (or of host_default.interface) as its peers.
PublishedTable BuildEntries(const AgentState& state, const Config& config,
                            const HostDefaultNic& nic, std::uint64_t now_ns,
                            std::optional<std::int64_t> now_steady_ns = std::nullopt);

/// The entries of `table` the segment gets, in its order: all but those of
/// a peer that shares its address (its host prefix) with another kept
/// peer, where the one measured last (its newest result) stays, with all
/// of its classes, and the first of the table's order on a tie. A
/// transport connected to that address is told what its path measured.
std::vector<PublishedEntry> SegmentEntries(std::span<const PublishedEntry> table);

/// "threshold 16KiB", "always from 1KiB", "never (kernel_copied)",
/// "inconclusive (noisy)".
std::string DescribeResult(const calibrator::MethodResult& result);

}  // namespace zcal::agent
