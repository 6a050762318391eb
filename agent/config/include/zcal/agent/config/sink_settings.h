// The settings of a peer sink as an operator writes them: the options of
// `zcal sink` and the keys of the agent's `sink:` section have the same
// names and the same grammar (docs/units.md), and go through this one
// conversion into the probes' PeerSinkOptions, which the configuration keeps
// (SinkConfig, config/config.h).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "zcal/common/result.h"
#include "zcal/probes/peer/peer_sink.h"

namespace zcal::agent {

/// A peer sink's settings as the operator wrote them: the options of `zcal
/// sink`, or the keys of the `sink:` section, with the defaults of both.
struct SinkSettings {
  std::string listen;               ///< ADDR:PORT; "" = no sink
  std::vector<std::string> allow;   ///< CIDR prefixes; empty = any source
  std::string key_file;             ///< "" = none
  std::string auth = "key";         ///< "key" or "none"
  std::uint64_t max_sessions = 1;
  std::uint64_t max_connections = 64;
  std::uint64_t max_connections_per_source = 8;
  std::string max_session_seconds = "60s";   ///< a duration
  std::string max_bytes_per_second = "0";    ///< a rate; 0 = no cap
  std::string idle_timeout = "10s";          ///< a duration
  std::string handshake_deadline = "2s";     ///< a duration

  bool operator==(const SinkSettings&) const = default;
};

/// How an error names a setting: "--max-sessions" or "sink.max_sessions".
enum class SettingSpelling : std::uint8_t { kCommandLine, kConfig };

/// Parses and checks every setting and loads the key file. Errors are
/// kInvalidArgument (or the key file's kParse/kIo/kNotFound), naming the
/// setting as the user spelled it; the error's `field` is the setting's key
/// ("max_sessions"), `index` the element of `allow` at fault, `detail` the
/// sentence after the name. Warnings for the log (a key file others may
/// read, `auth: none` off loopback) are appended to `warnings`.
Result<probes::PeerSinkOptions, FieldError> ToPeerSinkOptions(const SinkSettings& settings,
                                                              SettingSpelling spelling,
                                                              std::vector<std::string>& warnings);

}  // namespace zcal::agent
