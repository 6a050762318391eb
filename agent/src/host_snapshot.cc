#include "zcal/agent/host_snapshot.h"

#include <algorithm>

#include "zcal/common/text.h"
#include "zcal/probes/host_facts.h"

namespace zcal::agent {
namespace {

template <typename T>
std::string OrEmpty(const std::optional<T>& value) {
  return value ? std::to_string(*value) : std::string();
}

InterfaceInfo Info(std::string path, const probes::InterfaceFacts& i) {
  InterfaceInfo info;
  info.path = std::move(path);
  info.interface = i.name;
  info.driver = i.driver;
  info.pci_device = i.pci_device;
  info.speed_bits_per_second = i.speed_mbps ? std::to_string(*i.speed_mbps * 1'000'000) : "";
  info.mtu_bytes = OrEmpty(i.mtu);
  info.iommu_group = i.iommu_group;
  info.iommu_type = i.iommu_type;
  return info;
}

HostDefaultNic FindHostDefaultNic(const Config& config) {
  HostDefaultNic nic;
  std::string name = config.host_default.interface;
  if (name.empty()) {
    std::string why;
    const std::optional<std::string> route =
        probes::DefaultRouteInterface(config.host_root, why);
    if (!route) {
      nic.why_unknown = why;
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

bool DescribePeerInterfaces(HostSnapshot& snapshot, const Config& config,
                            const std::set<std::string>& names) {
  std::vector<InterfaceInfo>& list = snapshot.info.interfaces;
  const auto peer_nic = [](const InterfaceInfo& i) {
    return i.path.starts_with(kPeerInterfacePathPrefix);
  };
  const std::size_t before = list.size();
  std::erase_if(list, [&](const InterfaceInfo& i) {
    return peer_nic(i) && !names.contains(i.interface);
  });
  bool changed = list.size() != before;
  for (const std::string& name : names) {
    if (name.empty() || std::any_of(list.begin(), list.end(), [&](const InterfaceInfo& i) {
          return peer_nic(i) && i.interface == name;
        })) {
      continue;
    }
    probes::HostFactsOptions options;
    options.root = config.host_root;
    options.interface = name;
    const probes::HostFacts facts = probes::CollectHostFacts(options);
    if (!facts.interface.mtu && facts.interface.driver.empty()) continue;  // gone
    list.push_back(Info(std::string(kPeerInterfacePathPrefix) + name, facts.interface));
    changed = true;
  }
  return changed;
}

probes::Target ProbeTarget(const PathConfig& path) {
  switch (path.type) {
    case PathType::kLoopback:
      return probes::Target::Loopback();
    case PathType::kDiscard:
      return probes::Target::Discard();
  }
  return probes::Target::Loopback();
}

HostSnapshot CollectHostSnapshot(const Config& config) {
  HostSnapshot snapshot;
  nlohmann::json paths = nlohmann::json::object();
  for (const PathConfig& path : config.paths) {
    probes::HostFactsOptions options;
    options.root = config.host_root;
    options.target = ProbeTarget(path);
    const probes::HostFacts facts = probes::CollectHostFacts(options);
    paths[path.name] = probes::ToJson(facts);
    if (snapshot.info.kernel_release.empty()) {
      // Host-wide facts (and the fingerprint) do not depend on the path.
      snapshot.fingerprint = facts.Fingerprint();
      snapshot.info.kernel_release = facts.kernel_release;
      snapshot.info.cpu_model = facts.cpu_model;
      snapshot.info.iommu_cmdline = common::Join(facts.iommu_cmdline, " ");
    }
    snapshot.info.interfaces.push_back(Info(path.name, facts.interface));
  }
  snapshot.info.fingerprint = snapshot.fingerprint;
  snapshot.host_default_nic = FindHostDefaultNic(config);
  // The NIC the host default and the peers through it stand for: the
  // fleet's hardware classes are joined on its facts (docs/metrics.md).
  if (snapshot.host_default_nic.facts) {
    snapshot.info.interfaces.push_back(
        Info(std::string(kHostDefaultInterfacePath), *snapshot.host_default_nic.facts));
  }
  snapshot.facts = {{"fingerprint", common::Hex64(snapshot.fingerprint)},
                    {"paths", std::move(paths)}};
  return snapshot;
}

}  // namespace zcal::agent
