#include "zcal/agent/domain/host_info.h"

#include <algorithm>
#include <utility>

namespace zcal::agent {
namespace {

// The label text of the roles but a path's (docs/metrics.md,
// zcal_interface_info).
constexpr std::string_view kHostDefaultLabel = "host_default";
constexpr std::string_view kPeersLabelPrefix = "interface/";

}  // namespace

PathInterface PathEgress(std::string path, probes::InterfaceFacts facts) {
  return PathInterface{InterfaceRole::kPath, std::move(path), std::move(facts)};
}

PathInterface HostDefaultInterface(probes::InterfaceFacts facts) {
  return PathInterface{InterfaceRole::kHostDefault, std::string(kHostDefaultLabel),
                       std::move(facts)};
}

PathInterface PeersInterface(probes::InterfaceFacts facts) {
  std::string label = std::string(kPeersLabelPrefix) + facts.name;
  return PathInterface{InterfaceRole::kPeers, std::move(label), std::move(facts)};
}

PathInterface InterfaceOfLabel(std::string label, probes::InterfaceFacts facts) {
  if (label == kHostDefaultLabel) return HostDefaultInterface(std::move(facts));
  if (label.starts_with(kPeersLabelPrefix)) {
    // The label names the interface; what was read of it may not.
    if (facts.name.empty()) facts.name = label.substr(kPeersLabelPrefix.size());
    return PathInterface{InterfaceRole::kPeers, std::move(label), std::move(facts)};
  }
  return PathEgress(std::move(label), std::move(facts));
}

void AddInterface(HostInfo& host, PathInterface interface, std::span<const std::string> notes) {
  host.interfaces.push_back(std::move(interface));
  std::vector<std::string>& kept = host.facts.notes;
  for (const std::string& note : notes) {
    if (std::find(kept.begin(), kept.end(), note) == kept.end()) kept.push_back(note);
  }
}

HostInfo HostInfoOf(probes::PathFacts facts, std::string path) {
  HostInfo host;
  host.facts = std::move(facts.host);
  host.interfaces.push_back(PathEgress(std::move(path), std::move(facts.interface)));
  return host;
}

}  // namespace zcal::agent
