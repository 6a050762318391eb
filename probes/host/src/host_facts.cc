#include "zcal/probes/host/host_facts.h"
#include "zcal/probes/host/host_facts_json.h"

#include <algorithm>
#include <array>
#include <charconv>
#include <cstdio>
#include <cstring>
#include <sstream>
#include <system_error>

#include "ethtool.h"
#include "zcal/common/text.h"
#include "zcal/probes/host/sysfs.h"

namespace zcal::probes {

namespace fs = std::filesystem;

namespace {

template <typename T>
std::optional<T> ParseInteger(std::string_view text) {
  T value{};
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (ec != std::errc() || end != text.data() + text.size()) return std::nullopt;
  return value;
}

std::string ReadCpuModel(const std::string& root, std::vector<std::string>& notes) {
  const auto text = ReadSmallFile(UnderRoot(root, "proc/cpuinfo"));
  if (!text) {
    notes.push_back("cpu model unknown: " + text.error().message);
    return {};
  }
  std::istringstream lines(*text);
  std::string line;
  while (std::getline(lines, line)) {
    const auto colon = line.find(':');
    if (colon == std::string::npos) continue;
    if (common::Trim(std::string_view(line).substr(0, colon)) == "model name") {
      return std::string(common::Trim(std::string_view(line).substr(colon + 1)));
    }
  }
  notes.push_back("cpu model unknown: no \"model name\" line in " +
                  UnderRoot(root, "proc/cpuinfo").string());
  return {};
}

std::vector<std::string> ReadIommuCmdline(const std::string& root,
                                          std::vector<std::string>& notes) {
  std::vector<std::string> flags;
  const auto text = ReadFirstLine(UnderRoot(root, "proc/cmdline"));
  if (!text) {
    notes.push_back("kernel command line unknown: " + text.error().message);
    return flags;
  }
  std::istringstream words(*text);
  std::string word;
  while (words >> word) {
    if (word.substr(0, word.find('=')).find("iommu") != std::string::npos) {
      flags.push_back(word);
    }
  }
  return flags;
}

std::optional<std::string> PathInterface(const HostFactsOptions& options,
                                           std::vector<std::string>& notes) {
  const TargetTraits& path = TraitsOf(options.target.kind);
  if (!path.facts_note.empty()) notes.emplace_back(path.facts_note);
  if (!path.interface.empty()) return std::string(path.interface);
  Result<std::string> name = EgressInterface(options.target.peer.address);
  if (!name) {
    notes.push_back("egress interface of " + ToString(options.target) +
                    " unknown: " + name.error().message);
    return std::nullopt;
  }
  return *name;
}

// The basename of a symlink's target ("../../bus/pci" -> "pci"), or "".
std::string LinkName(const fs::path& link) {
  std::error_code ec;
  const fs::path target = fs::read_symlink(link, ec);
  return ec ? std::string() : target.filename().string();
}

void DescribeDevice(const std::string& root, const fs::path& interface_dir,
                    InterfaceFacts& facts, std::vector<std::string>& notes) {
  std::error_code ec;
  const fs::path device = fs::canonical(interface_dir / "device", ec);
  if (ec) return;  // virtual interface (lo, veth, bridge): no device
  facts.driver = LinkName(device / "driver");
  // Walk up to the PCI device: a virtio NIC's device is virtioN, whose
  // parent is the PCI function that carries the IOMMU group.
  const fs::path devices = fs::weakly_canonical(UnderRoot(root, "sys/devices"), ec);
  fs::path pci;
  for (fs::path p = device; !p.empty() && p != devices && p != p.parent_path();
       p = p.parent_path()) {
    if (LinkName(p / "subsystem") == "pci") {
      pci = p;
      break;
    }
  }
  if (pci.empty()) {
    notes.push_back("no PCI device above " + device.string());
    pci = device;
  } else {
    facts.pci_device = pci.filename().string();
  }
  facts.iommu_group = LinkName(pci / "iommu_group");
  if (facts.iommu_group.empty()) return;  // no IOMMU translates this device
  const auto type = ReadFirstLine(
      UnderRoot(root, "sys/kernel/iommu_groups/" + facts.iommu_group + "/type"));
  if (type) {
    facts.iommu_type = *type;
  } else {
    notes.push_back("IOMMU type of group " + facts.iommu_group +
                    " unknown: " + type.error().message);
  }
}

void DescribeInterface(const std::string& root, const std::string& name,
                       InterfaceFacts& facts, std::vector<std::string>& notes) {
  facts.name = name;
  const fs::path dir = UnderRoot(root, "sys/class/net/" + name);
  std::error_code ec;
  if (name.find('/') != std::string::npos || !fs::exists(dir, ec)) {
    notes.push_back("interface " + name + " not found: no " + dir.string());
    return;
  }
  if (const auto mtu = ReadFirstLine(dir / "mtu"); mtu) {
    facts.mtu = ParseInteger<std::uint32_t>(*mtu);
    if (!facts.mtu) notes.push_back(dir.string() + "/mtu: not a number: \"" + *mtu + "\"");
  } else {
    notes.push_back("mtu unknown: " + mtu.error().message);
  }
  DescribeDevice(root, dir, facts, notes);
  if (!facts.driver.empty() || fs::exists(dir / "speed", ec)) {
    // Virtual interfaces have no speed (reading it fails with EINVAL);
    // only a device's missing speed is worth a note.
    const auto speed = ReadFirstLine(dir / "speed");
    if (speed) {
      const auto value = ParseInteger<std::int64_t>(*speed);
      if (value && *value > 0) facts.speed_mbps = value;
    } else if (!facts.driver.empty()) {
      notes.push_back("link speed unknown: " + speed.error().message);
    }
  }
  if (root == "/") {
    const OffloadFeatures features = QueryOffloads(name);
    facts.sg = features.sg;
    facts.tso = features.tso;
    if (!features.error.empty()) notes.push_back(features.error);
  }
}

template <typename T>
nlohmann::json JsonOrNull(const std::optional<T>& value) {
  return value ? nlohmann::json(*value) : nlohmann::json(nullptr);
}

nlohmann::json JsonOrNull(const std::string& value) {
  return value.empty() ? nlohmann::json(nullptr) : nlohmann::json(value);
}

// What the fingerprint covers: the host, not the path (see host_facts.h).
nlohmann::json FingerprintJson(const HostFacts& facts) {
  nlohmann::json devices = nlohmann::json::array();
  for (const InterfaceFacts& d : facts.devices) devices.push_back(InterfaceFactsToJson(d));
  return {{"kernel_release", JsonOrNull(facts.kernel_release)},
          {"cpu_model", JsonOrNull(facts.cpu_model)},
          {"iommu_cmdline", facts.iommu_cmdline},
          {"devices", std::move(devices)}};
}

// lo and every interface backed by a device, by name. Other virtual
// interfaces (veth, bridges, tunnels) come and go with containers and are
// left out, so that a pod starting on the node does not look like new
// hardware.
std::vector<InterfaceFacts> DescribeDevices(const std::string& root,
                                            std::vector<std::string>& notes) {
  std::vector<std::string> names;
  std::error_code ec;
  const fs::path dir = UnderRoot(root, "sys/class/net");
  for (auto it = fs::directory_iterator(dir, ec);
       !ec && it != fs::directory_iterator(); it.increment(ec)) {
    std::error_code exists;
    if (it->path().filename() == "lo" || fs::exists(it->path() / "device", exists)) {
      names.push_back(it->path().filename().string());
    }
  }
  if (ec) notes.push_back("network devices unknown: " + dir.string() + ": " + ec.message());
  std::sort(names.begin(), names.end());
  std::vector<InterfaceFacts> devices;
  // What cannot be read of a device other than the path's egress interface
  // is not worth a note (the notes describe the path).
  std::vector<std::string> ignored;
  for (const std::string& name : names) {
    InterfaceFacts facts;
    DescribeInterface(root, name, facts, ignored);
    devices.push_back(std::move(facts));
  }
  return devices;
}

}  // namespace

HostFacts CollectHostFacts(const std::string& root) {
  HostFacts facts;
  if (auto release = ReadFirstLine(UnderRoot(root, "proc/sys/kernel/osrelease"))) {
    facts.kernel_release = *release;
  } else {
    facts.notes.push_back("kernel release unknown: " + release.error().message);
  }
  facts.cpu_model = ReadCpuModel(root, facts.notes);
  facts.iommu_cmdline = ReadIommuCmdline(root, facts.notes);
  facts.devices = DescribeDevices(root, facts.notes);
  facts.fingerprint = common::Fnv1a(FingerprintJson(facts).dump());
  return facts;
}

InterfaceFacts CollectInterfaceFacts(const HostFactsOptions& options,
                                     std::vector<std::string>& notes) {
  InterfaceFacts facts;
  std::optional<std::string> name =
      options.interface.empty() ? PathInterface(options, notes) : options.interface;
  if (name) DescribeInterface(options.root, *name, facts, notes);
  return facts;
}

PathFacts CollectPathFacts(const HostFactsOptions& options) {
  PathFacts facts;
  facts.host = CollectHostFacts(options.root);
  facts.interface = CollectInterfaceFacts(options, facts.host.notes);
  return facts;
}

nlohmann::json ToJson(const PathFacts& facts) {
  nlohmann::json json = FingerprintJson(facts.host);
  json["interface"] = InterfaceFactsToJson(facts.interface);
  json["fingerprint"] = common::Hex64(facts.host.fingerprint);
  json["notes"] = facts.host.notes;
  return json;
}

}  // namespace zcal::probes
