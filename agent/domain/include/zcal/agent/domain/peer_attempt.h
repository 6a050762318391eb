// One peer asked in a calibration round, as the peers room reports it and
// the publish room records it, how its calibration ended, and why a DNS
// lookup of peers gave none.
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "zcal/agent/domain/path_id.h"
#include "zcal/common/address.h"

namespace zcal::agent {

/// How a peer calibration ended: zcal_peer_probes_total's `outcome` label
/// and a peer record's last outcome (docs/peers.md lists what each means).
enum class PeerOutcome : std::uint8_t {
  kSuccess,
  kBusy,                ///< the sink serves another session, or its host probes
  kAuthFailed,          ///< the sink refused our key
  kOverLimit,           ///< the sink refused for one of its limits
  kUnsupportedVersion,  ///< no protocol version in common
  kProtocolError,       ///< a malformed or unexpected answer
  kUnreachable,         ///< no connection
  kTimeout,             ///< no answer in time
  kVanished,            ///< the session was lost mid-probe
  kFailed,              ///< anything else
};

/// Every outcome, in the order the metrics render them.
inline constexpr std::array<PeerOutcome, 10> kPeerOutcomes = {
    PeerOutcome::kSuccess,       PeerOutcome::kBusy,
    PeerOutcome::kAuthFailed,    PeerOutcome::kOverLimit,
    PeerOutcome::kUnsupportedVersion, PeerOutcome::kProtocolError,
    PeerOutcome::kUnreachable,   PeerOutcome::kTimeout,
    PeerOutcome::kVanished,      PeerOutcome::kFailed};

/// "success", "busy", "auth_failed", "over_limit", "unsupported_version",
/// "protocol_error", "unreachable", "timeout", "vanished", "failed".
std::string_view PeerOutcomeName(PeerOutcome outcome);
/// The inverse of PeerOutcomeName; nullopt for another text.
std::optional<PeerOutcome> ParsePeerOutcome(std::string_view name);

/// Why a DNS lookup gave no peers.
enum class DnsFailure : std::uint8_t {
  kNone,        ///< resolved to at least one address
  kNxDomain,    ///< the name does not exist (EAI_NONAME)
  kNoAnswer,    ///< the name exists without A/AAAA records (EAI_NODATA,
                ///< or an answer with no usable address)
  kTemporary,   ///< the resolver failed for now (EAI_AGAIN, timeout)
  kFailed,      ///< anything else (EAI_FAIL, EAI_SYSTEM, ...)
};
/// "", "nxdomain", "no_answer", "temporary", "failed": metric label values.
std::string_view DnsFailureName(DnsFailure failure);

/// The failures zcal_peer_discovery_failures_total counts, in order.
inline constexpr std::array<DnsFailure, 4> kDnsFailures = {
    DnsFailure::kNxDomain, DnsFailure::kNoAnswer, DnsFailure::kTemporary, DnsFailure::kFailed};

struct PeerAttempt {
  common::HostPort endpoint;  ///< the peer's sink
  PeerOutcome outcome = PeerOutcome::kFailed;
  std::string detail;     ///< the error's sentence, "" on success
  std::string interface;  ///< egress interface, "" when not known

  /// The peer's path: its results and record are kept under it.
  PathId path() const { return PathId::Peer(endpoint); }
};

}  // namespace zcal::agent
