// The settings of a peer sink as an operator writes them: the options of
// `zcal sink` and the keys of the agent's `sink:` section have the same
// names and the same grammar (docs/units.md), and go through this one
// conversion into the probes' PeerSinkOptions. SinkSettings itself is part
// of the configuration (zcal/agent/config.h).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "zcal/agent/config/config.h"
#include "zcal/common/result.h"
#include "zcal/probes/peer_sink.h"

namespace zcal::agent {

/// How an error names a setting: "--max-sessions" or "sink.max_sessions".
enum class SettingSpelling : std::uint8_t { kCommandLine, kConfig };

/// Parses and checks every setting and loads the key file. Errors are
/// kInvalidArgument (or the key file's kParse/kIo/kNotFound), naming the
/// setting as the user spelled it. Warnings for
/// the log (a key file others may read, `auth: none` off loopback) are
/// appended to `warnings`.
Result<probes::PeerSinkOptions> ToPeerSinkOptions(const SinkSettings& settings,
                                                   SettingSpelling spelling,
                                                   std::vector<std::string>& warnings);

}  // namespace zcal::agent
