// Where a calibration sends: a path, parsed once at the edge (command line,
// configuration) into a typed value and passed down as that value.
#pragma once

#include <cstddef>
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

/// What differs by kind, in one table, so that the code that differs asks
/// a property and a new kind is a row here, its PathRunner
/// (zcal/probes/calibration/path_runner.h) and the agent's scope of it.
struct TargetTraits {
  std::string_view name;  ///< TargetKindName: "loopback", "peer", "discard"
  /// The kernel copies every zerocopy send (it is delivered locally), so
  /// its answer is the same at every depth: calibrated at stream only.
  bool kernel_copies_every_send = false;
  /// Each send is one datagram of at most this many bytes; 0 for a stream.
  std::uint64_t max_message_bytes = 0;
  std::string_view max_message_why;  ///< the bound's reason, for people
  /// Its egress interface where that is fixed ("lo"); empty: the interface
  /// the kernel routes the peer's address through.
  std::string_view interface;
  /// What its host facts say it does not measure; empty for none.
  std::string_view facts_note;
  /// Its senders never wait for a receiver (nothing acknowledges them), so
  /// each is bound by its CPU at every depth: a numeric depth class is the
  /// stream class plus a cost per send (calibrator::ClassOffset), and one
  /// round of its coarse grid measures that.
  bool senders_never_wait = false;
};

/// One row per TargetKind, in the enum's order.
inline constexpr TargetTraits kTargetTraits[] = {
    {"loopback", true, 0, "", "lo", "", false},
    {"peer", false, 0, "", "", "", false},
    {"discard", false, 65507, "the largest UDP payload over IPv4", "lo",
     "discard: datagrams are dropped by a blackhole qdisc on lo in a private namespace; "
     "no NIC, IOMMU or receiver is measured",
     true},
};

constexpr const TargetTraits& TraitsOf(TargetKind kind) {
  return kTargetTraits[static_cast<std::size_t>(kind)];
}

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
