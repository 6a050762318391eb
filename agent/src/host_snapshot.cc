#include "zcal/agent/host_snapshot.h"

#include "zcal/common/text.h"
#include "zcal/probes/host_facts.h"

namespace zcal::agent {
namespace {

template <typename T>
std::string OrEmpty(const std::optional<T>& value) {
  return value ? std::to_string(*value) : std::string();
}

}  // namespace

probes::Target ProbeTarget(const PathConfig& path) {
  switch (path.type) {
    case PathType::kLoopback:
      return probes::Target::Loopback();
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
    const probes::InterfaceFacts& i = facts.interface;
    InterfaceInfo info;
    info.path = path.name;
    info.interface = i.name;
    info.driver = i.driver;
    info.pci_device = i.pci_device;
    info.speed_bits_per_second =
        i.speed_mbps ? std::to_string(*i.speed_mbps * 1'000'000) : "";
    info.mtu_bytes = OrEmpty(i.mtu);
    info.iommu_group = i.iommu_group;
    info.iommu_type = i.iommu_type;
    snapshot.info.interfaces.push_back(std::move(info));
  }
  snapshot.info.fingerprint = snapshot.fingerprint;
  snapshot.facts = {{"fingerprint", common::Hex64(snapshot.fingerprint)},
                    {"paths", std::move(paths)}};
  return snapshot;
}

}  // namespace zcal::agent
