#include "zcal/probes/types/target.h"

namespace zcal::probes {

Result<Target> ParseTarget(std::string_view text) {
  if (text == "loopback") return Target::Loopback();
  if (text == "discard") return Target::Discard();
  Result<common::HostPort> sink = common::ParseHostPort(text);
  if (!sink) {
    return Fail(Errc::kInvalidArgument,
                "path: expected \"loopback\", \"discard\" or ADDRESS:PORT of a peer's "
                "sink; " +
                    sink.error().message);
  }
  return Target::Peer(*sink);
}

static_assert(TraitsOf(TargetKind::kLoopback).name == "loopback" &&
                  TraitsOf(TargetKind::kPeer).name == "peer" &&
                  TraitsOf(TargetKind::kDiscard).name == "discard",
              "kTargetTraits is in TargetKind's order");

std::string_view TargetKindName(TargetKind kind) { return TraitsOf(kind).name; }

std::optional<TargetKind> ParseTargetKind(std::string_view name) {
  for (TargetKind kind : {TargetKind::kLoopback, TargetKind::kPeer, TargetKind::kDiscard}) {
    if (name == TargetKindName(kind)) return kind;
  }
  return std::nullopt;
}

std::string ToString(const Target& target) {
  switch (target.kind) {
    case TargetKind::kPeer:
      return common::ToString(target.peer);
    case TargetKind::kLoopback:
    case TargetKind::kDiscard:
      break;
  }
  return std::string(TargetKindName(target.kind));
}

}  // namespace zcal::probes
