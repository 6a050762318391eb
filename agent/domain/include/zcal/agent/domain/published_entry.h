// One entry of the published table as the agent decides it, and where the
// host default comes from (the ZCAL_SCOPE_* and ZCAL_HOST_DEFAULT_* values
// of the ABI, client/include/zcal/zcal.h). The one table (publish/results.h,
// BuildEntries) feeds both the segment, whose writer (publish/shm_writer.h)
// turns its entries into the fixed-width layout, and the metrics, which
// take their per-path families from the entries of a path.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "zcal/agent/domain/agent_state.h"
#include "zcal/agent/domain/depth_class.h"
#include "zcal/agent/domain/path_id.h"
#include "zcal/calibrator/decision.h"
#include "zcal/calibrator/method.h"
#include "zcal/probes/host/cpu_accounting.h"

namespace zcal::agent {

/// Which traffic an entry applies to (ZCAL_SCOPE_* in the ABI).
enum class ScopeKind : std::uint8_t {
  kHostDefault,
  kLoopback,
  kPeer,
  kInterface,
  kDiscard,  ///< ABI minor 1: the discard path's own result
};

/// Where the host-default entries come from, or why there are none
/// (ZCAL_HOST_DEFAULT_* in the ABI).
enum class HostDefaultSource : std::uint8_t {
  kUnknown = 0,
  kPeers = 1,
  kEstimated = 2,
  kNoPath = 3,
  kIommuTranslates = 4,
  kIommuUnknown = 5,
  kDisabled = 6,
};

/// "peers", "estimated", "unknown" or "none": how the state JSON, the
/// metrics and `zcal show` name the source.
std::string_view HostDefaultSourceName(HostDefaultSource source);
/// Why there is no host default: "no_path", "iommu_translates",
/// "iommu_unknown", "disabled"; "" when there is one (or it is unknown).
std::string_view HostDefaultAbsenceReason(HostDefaultSource source);

/// One decision to publish.
struct PublishedEntry {
  /// The path whose own result this is, for the entries under a path's own
  /// scope (kLoopback, kDiscard, kPeer); nullopt for the aggregates
  /// (kInterface) and the host default, which are no one path's result.
  std::optional<PathId> path;
  ScopeKind scope = ScopeKind::kHostDefault;
  std::string address;          ///< kPeer: numeric IPv4 or IPv6 text
  std::uint8_t prefix_len = 0;  ///< kPeer: <= 32 (IPv4) or 128 (IPv6)
  std::string interface;        ///< kInterface: 1 to 15 bytes
  calibrator::Method method = calibrator::Method::kMsgZerocopy;
  /// The depth the result was measured at. Every scope and method that has
  /// an entry of another class has a stream entry too (the writer checks).
  DepthClass depth = DepthClass::kStream;
  calibrator::Verdict verdict = calibrator::Verdict::kNever;
  std::optional<std::uint64_t> threshold_bytes;  ///< required with kThreshold
  std::optional<double> confidence;              ///< [0,1]; nullopt = unknown
  calibrator::Reason reason = calibrator::Reason::kNone;
  std::uint64_t measured_at_ns = 0;  ///< CLOCK_REALTIME
  std::uint64_t fingerprint = 0;     ///< host-fact fingerprint
  /// An estimate, not a measurement of this scope (ZCAL_ENTRY_ESTIMATED).
  bool estimated = false;
  /// The applications' reports contradict it (ZCAL_ENTRY_CONTRADICTED): they
  /// see copied completions where it says zerocopy pays. Set on the table
  /// by the field-contradiction rule (publish/contradiction.h), never from
  /// the state.
  bool contradicted = false;
  /// The host's load over the probes of the calibration behind the result
  /// (MethodState::load); not in the segment.
  std::optional<probes::HostLoad> load;
  /// A differing result waiting for a second calibration to agree
  /// (MethodState::pending); not in the segment.
  std::optional<calibrator::MethodResult> pending;
};

/// The entry of one method's state (`key`, `state`) at `where`: a copy of
/// `where` (its path, scope, address or interface, and the flags that hold
/// for a whole scope) with the method, depth, published decision, time,
/// load and pending result of the state. The one place a state becomes an
/// entry, for the publisher's table and for tests that build one.
PublishedEntry EntryOf(const MethodKey& key, const MethodState& state, PublishedEntry where = {});

}  // namespace zcal::agent
