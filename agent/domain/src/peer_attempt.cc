#include "zcal/agent/domain/peer_attempt.h"

namespace zcal::agent {

std::string_view PeerOutcomeName(PeerOutcome outcome) {
  switch (outcome) {
    case PeerOutcome::kSuccess: return "success";
    case PeerOutcome::kBusy: return "busy";
    case PeerOutcome::kAuthFailed: return "auth_failed";
    case PeerOutcome::kOverLimit: return "over_limit";
    case PeerOutcome::kUnsupportedVersion: return "unsupported_version";
    case PeerOutcome::kProtocolError: return "protocol_error";
    case PeerOutcome::kUnreachable: return "unreachable";
    case PeerOutcome::kTimeout: return "timeout";
    case PeerOutcome::kVanished: return "vanished";
    case PeerOutcome::kFailed: return "failed";
  }
  return "failed";
}

std::optional<PeerOutcome> ParsePeerOutcome(std::string_view name) {
  for (const PeerOutcome outcome : kPeerOutcomes) {
    if (PeerOutcomeName(outcome) == name) return outcome;
  }
  return std::nullopt;
}

std::string_view DnsFailureName(DnsFailure failure) {
  switch (failure) {
    case DnsFailure::kNone:
      return "";
    case DnsFailure::kNxDomain:
      return "nxdomain";
    case DnsFailure::kNoAnswer:
      return "no_answer";
    case DnsFailure::kTemporary:
      return "temporary";
    case DnsFailure::kFailed:
      return "failed";
  }
  return "failed";
}

}  // namespace zcal::agent
