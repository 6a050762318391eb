// Where a calibration sends: a path, parsed once at the edge (command line,
// configuration) into a typed value and passed down as that value.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "zcal/common/address.h"
#include "zcal/common/result.h"

namespace zcal::probes {

/// The kinds of path a calibration can measure.
enum class TargetKind : std::uint8_t {
  kLoopback = 0,  ///< TCP to an in-process sink on 127.0.0.1
  kPeer = 1,      ///< TCP to the sink of another host (`zcal sink`)
  /// UDP to 127.0.0.2 in a private network namespace whose lo drops every
  /// datagram in a blackhole qdisc (zcal/probes/discard.h).
  kDiscard = 2,
};

struct Target {
  TargetKind kind = TargetKind::kLoopback;
  common::HostPort peer;  ///< kPeer: the sink's address

  bool operator==(const Target&) const = default;

  static Target Loopback() { return Target{}; }
  static Target Peer(const common::HostPort& sink) {
    return Target{TargetKind::kPeer, sink};
  }
  static Target Discard() { return Target{TargetKind::kDiscard, {}}; }
};

/// Parses "loopback", "discard" or "ADDR:PORT" / "[V6ADDR]:PORT" of a peer's sink
/// (numeric, port 1-65535). Errc::kInvalidArgument naming the text and the
/// forms allowed.
Result<Target> ParseTarget(std::string_view text);

/// "loopback", "peer", "discard": the one spelling of a kind, in the
/// configuration, the metrics' labels and every printed form.
std::string_view TargetKindName(TargetKind kind);

/// The kind TargetKindName spells; nullopt for any other text.
std::optional<TargetKind> ParseTargetKind(std::string_view name);

/// "loopback", "discard", "10.0.0.2:7070", "[::1]:7070"; ParseTarget reads
/// it back.
std::string ToString(const Target& target);

}  // namespace zcal::probes
