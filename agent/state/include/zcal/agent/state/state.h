// The agent's persisted state: the last good calibration, republished
// (marked stale) when the agent starts, and the hysteresis candidates.
//
// The file is JSON, versioned ("format": "zcal-state", "version": 1), and
// written atomically: a temporary file in the same directory, fsync,
// rename over the old file, fsync of the directory. A reader of version 1
// ignores keys it does not know; a file of a later version is refused.
//
// paths.PATH.METHOD is the method's stream-class result ({published,
// measured_at_ns, load, pending}); its other depth classes sit inside it
// under "classes" ({"1": {...}, "4": {...}}), so that a reader that knows
// no classes reads the stream results alone, and a file written before
// classes loads as stream results.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

#include "zcal/agent/domain/agent_state.h"
#include "zcal/calibrator/decision.h"
#include "zcal/calibrator/method.h"
#include "zcal/common/result.h"

namespace zcal::agent {

inline constexpr int kStateVersion = 1;


/// The document written to the state file.
std::string SerializeState(const AgentState& state);

/// Parses a state document. kParse with "SOURCE: what was wrong" when it is
/// not JSON, not a zcal state, of an unknown version or missing a field.
Result<AgentState> ParseState(std::string_view text, std::string_view source);

/// ParseState of a document that has no source to name: the message is
/// "what was wrong" alone ("paths.loopback.copy: not a zerocopy method").
Result<AgentState> ParseState(std::string_view text);

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
