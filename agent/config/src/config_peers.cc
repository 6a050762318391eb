// The `peers:` section (docs/config.md, docs/peers.md): where the peers
// are found, how many are probed per round and how many results are kept.
#include <algorithm>
#include <array>
#include <map>
#include <string>

#include "config_sections.h"
#include "zcal/common/address.h"
#include "zcal/probes/peer/peer_keys.h"

namespace zcal::agent {
namespace {

constexpr std::uint32_t kMaxPerCalibration = 64;
constexpr std::uint32_t kMaxKeep = 256;

void ReadStatic(ConfigReader& reader, const YAML::Node& node, PeersConfig& peers) {
  if (node.IsNull()) {
    peers.static_peers.clear();
    return;
  }
  if (!reader.ExpectSequence(node, "peers.static")) return;
  std::vector<common::HostPort> out;
  for (std::size_t i = 0; i < node.size(); ++i) {
    const std::string key = "peers.static[" + std::to_string(i) + "]";
    std::string text;
    if (!reader.String(node[i], key, text)) continue;
    Result<common::HostPort> endpoint = common::ParseHostPort(text);
    if (!endpoint) {
      reader.Error(node[i], key, endpoint.error().message +
                                     " (a name belongs in peers.dns)");
      continue;
    }
    if (std::find(out.begin(), out.end(), *endpoint) != out.end()) {
      reader.Error(node[i], key, "'" + text + "' is listed twice");
      continue;
    }
    out.push_back(*endpoint);
  }
  peers.static_peers = std::move(out);
}

bool Count(ConfigReader& reader, const YAML::Node& node, std::string_view key,
           std::uint32_t min, std::uint32_t max, std::uint32_t& out) {
  double value = 0;
  if (!reader.Number(node, key, min, max, value)) return false;
  if (value != static_cast<double>(static_cast<std::uint32_t>(value))) {
    reader.Error(node, key, "expected a whole number, got " + Describe(node));
    return false;
  }
  out = static_cast<std::uint32_t>(value);
  return true;
}

void ReadKeyFile(ConfigReader& reader, const YAML::Node& value, PeersConfig& p) {
  if (!reader.String(value, "peers.key_file", p.key_file) || p.key_file.empty()) return;
  if (p.key_file.front() != '/') {
    reader.Error(value, "peers.key_file",
                 "'" + p.key_file +
                     "' is not an absolute file path; write one such as "
                     "/etc/zcal/peer.keys");
  } else if (Result<probes::peer::KeyRing> ring = probes::peer::LoadKeyFile(p.key_file);
             !ring) {
    // Read as the sink's key file is: a file that cannot be used shows
    // at start or reload, not as a failed peer round hours later. Each
    // round reads it again, so a rotated file is taken without a reload.
    reader.Error(value, "peers.key_file", ring.error().message);
  }
}

void ReadDns(ConfigReader& reader, const YAML::Node& value, PeersConfig& p) {
  std::string text;
  if (!reader.String(value, "peers.dns", text)) return;
  if (text.empty()) {
    p.dns = {};
  } else if (auto name = ParseDnsPeerName(text)) {
    p.dns = *name;
  } else {
    reader.Error(value, "peers.dns", name.error().detail);
  }
}

void ReadTimes(ConfigReader& reader, const Fields& fields, PeersConfig& p) {
  using std::chrono::hours;
  using std::chrono::seconds;
  if (const YAML::Node* value = FieldOf(fields, "refresh")) {
    reader.Duration(*value, "peers.refresh", seconds(1), hours(24), false, p.refresh);
  }
  if (const YAML::Node* value = FieldOf(fields, "stale_after")) {
    reader.Duration(*value, "peers.stale_after", std::chrono::minutes(1), hours(24 * 30), false,
                    p.stale_after);
  }
}

void ReadCounts(ConfigReader& reader, const Fields& fields, PeersConfig& p) {
  if (const YAML::Node* value = FieldOf(fields, "per_calibration")) {
    Count(reader, *value, "peers.per_calibration", 1, kMaxPerCalibration, p.per_calibration);
  }
  if (const YAML::Node* value = FieldOf(fields, "keep")) {
    if (Count(reader, *value, "peers.keep", 1, kMaxKeep, p.keep) &&
        p.keep < p.per_calibration) {
      // Fewer kept than probed would throw away results just measured.
      reader.Error(*value, "peers.keep",
                   std::to_string(p.keep) + " is below peers.per_calibration (" +
                       std::to_string(p.per_calibration) +
                       "); keep at least as many results as a round probes");
    }
  } else if (p.keep < p.per_calibration) {
    p.keep = p.per_calibration;
  }
}

}  // namespace

void ReadPeers(ConfigReader& reader, const YAML::Node& node, Config& config) {
  static constexpr std::array<std::string_view, 7> kKeys = {
      "key_file", "static", "dns", "refresh", "per_calibration", "keep",
      "stale_after"};
  if (node.IsNull()) return;  // `peers:` alone: no peers
  const auto fields = reader.Map(node, "peers", kKeys);
  if (!fields) return;
  PeersConfig& p = config.peers;
  if (const YAML::Node* value = FieldOf(*fields, "key_file")) ReadKeyFile(reader, *value, p);
  if (const YAML::Node* value = FieldOf(*fields, "static")) ReadStatic(reader, *value, p);
  if (const YAML::Node* value = FieldOf(*fields, "dns")) ReadDns(reader, *value, p);
  ReadTimes(reader, *fields, p);
  ReadCounts(reader, *fields, p);
}

}  // namespace zcal::agent
