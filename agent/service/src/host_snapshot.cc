#include "zcal/agent/service/host_snapshot.h"

#include <algorithm>

#include "zcal/probes/host/host_facts.h"

namespace zcal::agent {
namespace {

HostDefaultNic FindHostDefaultNic(const Config& config) {
  HostDefaultNic nic;
  std::string name = config.host_default.interface;
  if (name.empty()) {
    const Result<std::string> route = probes::DefaultRouteInterface();
    if (!route) {
      nic.why_unknown = route.error().message;
      return nic;
    }
    name = *route;
  }
  probes::HostFactsOptions options;
  options.root = config.host_root;
  options.interface = name;
  const probes::HostFacts facts = probes::CollectHostFacts(options);
  if (facts.interface.mtu || !facts.interface.driver.empty()) {
    nic.facts = facts.interface;
  } else {
    nic.why_unknown = "interface " + name + " not found";
    for (const std::string& note : facts.notes) nic.why_unknown += "; " + note;
  }
  return nic;
}

}  // namespace

bool DescribePeerInterfaces(HostInfo& snapshot, const Config& config,
                            const std::set<std::string>& names) {
  std::vector<PathInterface>& list = snapshot.interfaces;
  const auto peer_nic = [](const PathInterface& i) {
    return i.path.starts_with(kPeerInterfacePathPrefix);
  };
  const std::size_t before = list.size();
  std::erase_if(list, [&](const PathInterface& i) {
    return peer_nic(i) && !names.contains(i.facts.name);
  });
  bool changed = list.size() != before;
  for (const std::string& name : names) {
    if (name.empty() || std::any_of(list.begin(), list.end(), [&](const PathInterface& i) {
          return peer_nic(i) && i.facts.name == name;
        })) {
      continue;
    }
    probes::HostFactsOptions options;
    options.root = config.host_root;
    options.interface = name;
    const probes::HostFacts facts = probes::CollectHostFacts(options);
    if (!facts.interface.mtu && facts.interface.driver.empty()) continue;  // gone
    list.push_back(PathInterface{std::string(kPeerInterfacePathPrefix) + name, facts.interface});
    changed = true;
  }
  return changed;
}

probes::Target ProbeTarget(const PathConfig& path) {
  return probes::Target{path.type, {}};
}

HostInfo CollectHostSnapshot(const Config& config) {
  HostInfo snapshot;
  for (const PathConfig& path : config.paths) {
    probes::HostFactsOptions options;
    options.root = config.host_root;
    options.target = ProbeTarget(path);
    const probes::HostFacts facts = probes::CollectHostFacts(options);
    // Host-wide facts (and the fingerprint) do not depend on the path.
    if (snapshot.interfaces.empty()) {
      snapshot = HostInfoOf(facts, path.name);
    } else {
      AddPath(snapshot, facts, path.name);
    }
  }
  snapshot.host_default_nic = FindHostDefaultNic(config);
  // The NIC the host default and the peers through it stand for: the
  // fleet's hardware classes are joined on its facts (docs/metrics.md).
  if (snapshot.host_default_nic.facts) {
    snapshot.interfaces.push_back(PathInterface{
        std::string(kHostDefaultInterfacePath), *snapshot.host_default_nic.facts});
  }
  return snapshot;
}

}  // namespace zcal::agent
