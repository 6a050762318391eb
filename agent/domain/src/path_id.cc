#include "zcal/agent/domain/path_id.h"

#include <algorithm>
#include <utility>

namespace zcal::agent {
namespace {

constexpr std::string_view kPeerPrefix = "peer/";

std::strong_ordering CompareEndpoints(const common::HostPort& a, const common::HostPort& b) {
  if (a.address.family != b.address.family) return a.address.family <=> b.address.family;
  const auto bytes = std::lexicographical_compare_three_way(
      a.address.bytes.begin(), a.address.bytes.end(), b.address.bytes.begin(),
      b.address.bytes.end());
  if (bytes != 0) return bytes;
  return a.port <=> b.port;
}

}  // namespace

PathId PathId::Configured(std::string name) {
  PathId id;
  id.name_ = std::move(name);
  return id;
}

PathId PathId::Peer(const common::HostPort& endpoint) {
  PathId id;
  id.peer_ = true;
  id.endpoint_ = endpoint;
  return id;
}

std::strong_ordering operator<=>(const PathId& a, const PathId& b) {
  if (a.peer_ != b.peer_) return a.peer_ <=> b.peer_;
  if (a.peer_) return CompareEndpoints(a.endpoint_, b.endpoint_);
  return a.name_ <=> b.name_;
}

std::string ToString(const PathId& path) {
  if (!path.IsPeer()) return path.name();
  return std::string(kPeerPrefix) + common::ToString(path.endpoint());
}

Result<PathId> ParsePathId(std::string_view text) {
  if (!text.starts_with(kPeerPrefix)) return PathId::Configured(std::string(text));
  Result<common::HostPort> endpoint = common::ParseHostPort(text.substr(kPeerPrefix.size()));
  if (!endpoint) {
    return Fail(Errc::kInvalidArgument,
                "path '" + std::string(text) + "': " + endpoint.error().message);
  }
  return PathId::Peer(*endpoint);
}

}  // namespace zcal::agent
