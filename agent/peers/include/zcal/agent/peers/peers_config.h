// The `peers:` section as the peers room takes it (config/config.h holds
// it in Config; docs/config.md and docs/peers.md document every key).
#pragma once

#include <chrono>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "zcal/common/address.h"
#include "zcal/common/result.h"

namespace zcal::agent {

/// "NAME:PORT" of `peers.dns`: a host name and a port 1-65535.
struct DnsPeerName {
  std::string name;
  std::uint16_t port = 0;
  bool operator==(const DnsPeerName&) const = default;
};

/// Parses "NAME:PORT" (NAME: letters, digits, '-', '.', '_', 1-253 bytes,
/// not a numeric address; PORT 1-65535). kInvalidArgument naming the text
/// and what is expected; the error's `field` is "peers.dns".
Result<DnsPeerName, FieldError> ParseDnsPeerName(std::string_view text);

/// The peers this agent probes (section `peers:`, docs/peers.md): found
/// from a static list and a DNS name, K of them per calibration round
/// chosen by rendezvous hashing (peer_selection.h), the last M results
/// kept. No static peer and no DNS name = no peer probes (the embedded
/// default).
struct PeersConfig {
  /// The keys presented to peers' sinks; "" = the sink's key_file; both
  /// empty = no key (only a sink with `auth: none` serves it).
  std::string key_file;
  std::vector<common::HostPort> static_peers;  ///< key `static`
  DnsPeerName dns;  ///< key `dns`, "NAME:PORT"; name "" = none
  /// How long a DNS answer is used before it is resolved again.
  std::chrono::milliseconds refresh = std::chrono::seconds(60);
  std::uint32_t per_calibration = 3;  ///< K, 1..64
  std::uint32_t keep = 8;             ///< M, per_calibration..256
  /// A peer result older than this is marked stale: still published under
  /// its own peer entry, no longer aggregated into its interface's entry
  /// or the host default.
  std::chrono::milliseconds stale_after = std::chrono::hours(24);

  bool enabled() const { return !static_peers.empty() || !dns.name.empty(); }
  bool operator==(const PeersConfig&) const = default;
};

}  // namespace zcal::agent
