// Which path a result is of: the key of the agent's state (AgentState's
// maps), of the published table's entries (PublishedEntry::path) and of
// every decision that depends on whether a path is a peer. A path is
// spelled as text only where it is printed (metric labels, log lines, the
// report, `zcal show`) or read back (the state file): ToString and
// ParsePathId, the one printer and parser of that text.
#pragma once

#include <compare>
#include <string>
#include <string_view>

#include "zcal/common/address.h"
#include "zcal/common/result.h"

namespace zcal::agent {

/// A configured path, by its name in the configuration (`paths[].name`,
/// unique there), or a peer, by its sink's endpoint. A configured path's
/// kind (loopback or discard) is the configuration's, looked up by name:
/// the state file keeps names only, and its format is fixed.
///
/// Totally ordered: configured paths by name, then peers by address family,
/// address bytes and port. Value type; thread safety as for std::string.
class PathId {
 public:
  /// The configured path with the empty name, so that structs holding a
  /// PathId (PathJob, PeerReport) can be built before they are filled in;
  /// no configuration produces it (names are 1 to 32 characters).
  PathId() = default;

  static PathId Configured(std::string name);
  static PathId Peer(const common::HostPort& endpoint);

  bool IsPeer() const { return peer_; }
  /// The configured path's name; "" for a peer.
  const std::string& name() const { return name_; }
  /// The peer's sink; a default HostPort for a configured path.
  const common::HostPort& endpoint() const { return endpoint_; }

  friend bool operator==(const PathId&, const PathId&) = default;
  friend std::strong_ordering operator<=>(const PathId& a, const PathId& b);

 private:
  bool peer_ = false;
  std::string name_;
  common::HostPort endpoint_;
};

/// The path's text: a configured path's name ("loopback", "discard"), a
/// peer's "peer/ADDR:PORT" ("peer/10.0.0.2:7070", "peer/[::1]:7070").
/// ParsePathId reads it back.
std::string ToString(const PathId& path);

/// The inverse of ToString: "peer/" and an endpoint common::ParseHostPort
/// reads is a peer, any other text a configured path's name (the state
/// file's keys are taken as written). Errc::kInvalidArgument, naming the
/// text, for a "peer/" whose endpoint does not parse.
Result<PathId> ParsePathId(std::string_view text);

}  // namespace zcal::agent
