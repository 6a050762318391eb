#include "zcal/agent/domain/host_info.h"

#include <algorithm>
#include <utility>

namespace zcal::agent {

void AddPath(HostInfo& host, std::string path, probes::InterfaceFacts interface,
             std::span<const std::string> notes) {
  host.interfaces.push_back(PathInterface{std::move(path), std::move(interface)});
  std::vector<std::string>& kept = host.facts.notes;
  for (const std::string& note : notes) {
    if (std::find(kept.begin(), kept.end(), note) == kept.end()) kept.push_back(note);
  }
}

HostInfo HostInfoOf(probes::PathFacts facts, std::string path) {
  HostInfo host;
  host.facts = std::move(facts.host);
  host.interfaces.push_back(PathInterface{std::move(path), std::move(facts.interface)});
  return host;
}

}  // namespace zcal::agent
