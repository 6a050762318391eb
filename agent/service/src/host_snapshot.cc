#include "zcal/agent/service/host_snapshot.h"

#include <algorithm>

#include "zcal/probes/host/host_facts.h"

namespace zcal::agent {
namespace {

// The facts of interface `name` when it exists (its MTU or driver could be
// read); what could not be read is appended to `notes` either way.
std::optional<probes::InterfaceFacts> FindInterface(const Config& config,
                                                    const std::string& name,
                                                    std::vector<std::string>& notes) {
  probes::HostFactsOptions options;
  options.root = config.host_root;
  options.interface = name;
  probes::InterfaceFacts facts = probes::CollectInterfaceFacts(options, notes);
  if (!facts.mtu && facts.driver.empty()) return std::nullopt;
  return facts;
}

// A NIC that is not found is explained with everything that could not be
// read, of the host (`host_notes`) and of the NIC.
HostDefaultNic FindHostDefaultNic(const Config& config,
                                  const std::vector<std::string>& host_notes) {
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
  std::vector<std::string> notes = host_notes;
  nic.facts = FindInterface(config, name, notes);
  if (!nic.facts) {
    nic.why_unknown = "interface " + name + " not found";
    for (const std::string& note : notes) nic.why_unknown += "; " + note;
  }
  return nic;
}

}  // namespace

bool DescribePeerInterfaces(HostInfo& snapshot, const Config& config,
                            const std::set<std::string>& names) {
  std::vector<PathInterface>& list = snapshot.interfaces;
  const auto peer_nic = [](const PathInterface& i) { return i.role == InterfaceRole::kPeers; };
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
    std::vector<std::string> ignored;  // a peer's NIC is not the paths' concern
    std::optional<probes::InterfaceFacts> facts = FindInterface(config, name, ignored);
    if (!facts) continue;  // gone
    list.push_back(PeersInterface(std::move(*facts)));
    changed = true;
  }
  return changed;
}

probes::Target ProbeTarget(const PathConfig& path) {
  return probes::Target{path.type, {}};
}

HostInfo CollectHostSnapshot(const Config& config) {
  const probes::HostFacts host = probes::CollectHostFacts(config.host_root);
  HostInfo snapshot;
  // Kept whatever is configured: a peers-only agent's thresholds depend on
  // the kernel, the CPU and the IOMMU as much as a path's do, and without
  // a fingerprint a change of them would never bring its calibration
  // forward.
  snapshot.facts = host;
  for (const PathConfig& path : config.paths) {
    probes::HostFactsOptions options;
    options.root = config.host_root;
    options.target = ProbeTarget(path);
    std::vector<std::string> notes;
    probes::InterfaceFacts interface = probes::CollectInterfaceFacts(options, notes);
    AddInterface(snapshot, PathEgress(path.name, std::move(interface)), notes);
  }
  snapshot.host_default_nic = FindHostDefaultNic(config, host.notes);
  // The NIC the host default and the peers through it stand for: the
  // fleet's hardware classes are joined on its facts (docs/metrics.md).
  if (snapshot.host_default_nic.facts) {
    snapshot.interfaces.push_back(HostDefaultInterface(*snapshot.host_default_nic.facts));
  }
  return snapshot;
}

}  // namespace zcal::agent
