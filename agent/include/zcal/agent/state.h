// The agent's persisted state: the last good calibration, republished
// (marked stale) when the agent starts, and the hysteresis candidates.
//
// The file is JSON, versioned ("format": "zcal-state", "version": 1), and
// written atomically: a temporary file in the same directory, fsync,
// rename over the old file, fsync of the directory. A reader of version 1
// ignores keys it does not know; a file of a later version is refused.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

#include "zcal/calibrator/decision.h"
#include "zcal/calibrator/method.h"
#include "zcal/common/result.h"

namespace zcal::agent {

inline constexpr int kStateVersion = 1;

/// What is known about one (path, method).
struct MethodState {
  calibrator::MethodResult published;  ///< what readers are told
  /// CLOCK_REALTIME ns of the calibration that produced `published`, or the
  /// latest one that agreed with it.
  std::uint64_t measured_at_ns = 0;
  /// A differing result waiting for a second calibration to agree.
  std::optional<calibrator::MethodResult> pending;
};

/// The path name of a peer's results: "peer/ADDR:PORT" (metric label,
/// state key, log).
inline constexpr std::string_view kPeerPathPrefix = "peer/";

/// What is known about one peer besides its results (AgentState::paths
/// under the peer's path name).
struct PeerRecord {
  std::string endpoint;   ///< "ADDR:PORT" or "[V6]:PORT"
  /// The interface a connection to it left through at the last success
  /// (peer_discovery.h, EgressInterface); "" when not known.
  std::string interface;
  std::uint64_t last_attempt_ns = 0;  ///< CLOCK_REALTIME
  std::uint64_t last_success_ns = 0;  ///< 0 = never; results are from then
  std::string last_outcome;  ///< zcal_peer_probes_total's outcome label
};

struct AgentState {
  std::uint64_t saved_at_ns = 0;         ///< CLOCK_REALTIME when written
  std::uint64_t fingerprint = 0;         ///< host facts of the calibration
  std::uint64_t last_success_ns = 0;     ///< end of the last calibration
  nlohmann::json host = nlohmann::json::object();  ///< facts, for people
  /// path name -> method -> state. Zerocopy methods only.
  std::map<std::string, std::map<calibrator::Method, MethodState>> paths;
  /// Peer path name -> what is known of it: the peers whose results are
  /// kept (at most peers.keep with results) and those tried without one.
  std::map<std::string, PeerRecord> peers;
  /// Calibration rounds that probed peers; the round of the rendezvous
  /// choice (peer_selection.h), kept across restarts so that a restarting
  /// agent moves on to the next peers instead of asking the same again.
  std::uint64_t peer_round = 0;

  bool empty() const { return paths.empty(); }
};

/// The document written to the state file.
std::string SerializeState(const AgentState& state);

/// Parses a state document. kParse with "SOURCE: what was wrong" when it is
/// not JSON, not a zcal state, of an unknown version or missing a field.
Result<AgentState> ParseState(std::string_view text, std::string_view source);

/// Reads the file: kNotFound when it does not exist (the first start),
/// kIo when it cannot be read, kParse as ParseState.
Result<AgentState> LoadState(const std::string& path);

/// Writes the file atomically (see above), creating its directory (0755)
/// when missing. The file gets mode 0644. kIo with the path and errno text.
Result<void> SaveState(const AgentState& state, const std::string& path);

/// MethodResult as in `zcal analyze --json`, and back. FromJson fails with
/// a sentence naming the bad field.
nlohmann::json MethodResultToJson(const calibrator::MethodResult& result);
Result<calibrator::MethodResult> MethodResultFromJson(
    const nlohmann::json& json, calibrator::Method method);

}  // namespace zcal::agent
