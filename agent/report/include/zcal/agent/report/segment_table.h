// The table an agent publishes, as its readers see it: read from the
// shared-memory segment with the client library, and described as `zcal show`
// prints it and the agent's /api/v1/thresholds serves it (one JSON builder
// for both).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "zcal/agent/domain/published_entry.h"
#include "zcal/zcal.h"

namespace zcal::agent {

/// One read of a segment. Without `info`, `error` (-errno of the client
/// library: -ENOENT no segment, -EPROTO incompatible or corrupt, -EACCES,
/// -EINVAL a bad name, ...) and `detail` say why.
struct SegmentTable {
  std::string name;
  std::optional<zcal_info> info;
  std::vector<zcal_shm_entry> entries;
  int error = 0;
  std::string detail;
};

/// Opens segment `name` ("/zcal"), reads its header and entries, and closes
/// it. Thread-safe; no syscall blocks (a read retries a bounded number of
/// times).
SegmentTable ReadSegmentTable(const std::string& name);

/// The document of `zcal show --json` for a table that has `info`:
/// {"segment", "abi", "segment_bytes", "capacity", "count", "generation",
///  "agent_pid", "created_ns", "publish_time_ns", "publish_age_seconds",
///  "heartbeat_ns", "heartbeat_age_seconds", "stale", "retired",
///  "host_default": {"source", "reason", "text"}, "entries": [{"scope",
///  "address", "prefix_len", "interface", "method", "depth", "verdict",
///  "threshold_bytes", "confidence", "reason", "measured_at_ns",
///  "age_seconds", "fingerprint", "estimated", "contradicted"}]}; ages
/// against `now_ns`
/// (CLOCK_REALTIME).
nlohmann::json ThresholdsJson(const SegmentTable& table, std::uint64_t now_ns);

/// Pieces of the description, for `zcal show`'s table.
std::optional<double> AgeSeconds(std::uint64_t now_ns, std::uint64_t then_ns);
std::string ScopeText(const zcal_shm_entry& e);  ///< "peer 10.0.0.0/8", ...
/// The depth class (ABI minor 2): "stream", "1", "4", "16"; "unknown N"
/// for a code that readers skip.
std::string DepthText(const zcal_shm_entry& e);
bool Estimated(const zcal_shm_entry& e);
/// ZCAL_ENTRY_CONTRADICTED (ABI minor 3): the applications' reports
/// contradict the entry.
bool Contradicted(const zcal_shm_entry& e);
std::optional<double> Confidence(const zcal_shm_entry& e);  ///< nullopt unknown

/// Where the host default comes from, or why there is none: the header's
/// host_default_source (ABI minor 1) decoded; kUnknown for a minor-0
/// writer's 0 and for a code this reader does not know. Named by
/// HostDefaultSourceName and HostDefaultAbsenceReason.
HostDefaultSource HostDefaultSourceOf(std::uint32_t code);
/// The sentence `zcal show` and `zcal doctor` print for `source`, e.g.
/// "estimated from the discard path (...)", "none: turned off in the
/// configuration".
std::string_view HostDefaultSentence(HostDefaultSource source);

}  // namespace zcal::agent
