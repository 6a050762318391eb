#include "zcal/agent/host_snapshot.h"

#include <algorithm>
#include <filesystem>
#include <vector>

#include "zcal/probes/host_facts.h"

namespace zcal::agent {
namespace {

std::uint64_t Fnv1a(std::string_view text, std::uint64_t hash) {
  for (const char c : text) {
    hash ^= static_cast<unsigned char>(c);
    hash *= 0x100000001b3ULL;
  }
  return hash;
}

std::vector<std::string> InterfaceNames(const std::string& root) {
  std::vector<std::string> names;
  std::error_code ec;
  const std::filesystem::path dir =
      std::filesystem::path(root) / "sys" / "class" / "net";
  for (auto it = std::filesystem::directory_iterator(dir, ec);
       !ec && it != std::filesystem::directory_iterator(); it.increment(ec)) {
    names.push_back(it->path().filename().string());
  }
  std::sort(names.begin(), names.end());
  return names;
}

template <typename T>
std::string OrEmpty(const std::optional<T>& value) {
  return value ? std::to_string(*value) : std::string();
}

}  // namespace

std::string ProbePath(const PathConfig& path) {
  switch (path.type) {
    case PathType::kLoopback:
      return "loopback";
  }
  return "loopback";
}

HostSnapshot CollectHostSnapshot(const Config& config) {
  HostSnapshot snapshot;
  std::uint64_t hash = 0xcbf29ce484222325ULL;
  nlohmann::json paths = nlohmann::json::object();
  for (const PathConfig& path : config.paths) {
    probes::HostFactsOptions options;
    options.root = config.host_root;
    options.path = ProbePath(path);
    const probes::HostFacts facts = probes::CollectHostFacts(options);
    const std::uint64_t fingerprint = facts.Fingerprint();
    hash = Fnv1a(path.name + "=" + std::to_string(fingerprint) + ";", hash);
    paths[path.name] = probes::ToJson(facts);
    if (snapshot.info.kernel_release.empty()) {
      snapshot.info.kernel_release = facts.kernel_release;
      snapshot.info.cpu_model = facts.cpu_model;
      for (const std::string& word : facts.iommu_cmdline) {
        if (!snapshot.info.iommu_cmdline.empty()) {
          snapshot.info.iommu_cmdline += ' ';
        }
        snapshot.info.iommu_cmdline += word;
      }
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
  const std::vector<std::string> interfaces = InterfaceNames(config.host_root);
  for (const std::string& name : interfaces) hash = Fnv1a(name + ",", hash);
  snapshot.fingerprint = hash;
  snapshot.info.fingerprint = hash;
  snapshot.facts = {{"paths", std::move(paths)}, {"interfaces", interfaces}};
  return snapshot;
}

}  // namespace zcal::agent
