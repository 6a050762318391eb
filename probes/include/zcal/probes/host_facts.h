// Host facts: what the calibration result depends on besides the code (the
// kernel, the CPU, the egress NIC, its driver and its IOMMU mode), and a
// fingerprint that changes when any of them changes.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace zcal::probes {

struct HostFactsOptions {
  /// Root of the sysfs/procfs tree to read (tests point it at a fake tree).
  /// The ethtool ioctl (sg, tso) is asked only when this is "/".
  std::string root = "/";
  /// The interface to describe; "" = the egress interface of `path`.
  std::string interface;
  /// "loopback" (interface lo) or "ADDR:PORT" of a peer: the egress
  /// interface is then looked up in ROOT/proc/net/route (IPv4) or
  /// ROOT/proc/net/ipv6_route (IPv6), longest prefix first.
  std::string path = "loopback";
};

/// Facts of one network interface. Unknown values are empty or nullopt.
struct InterfaceFacts {
  std::string name;        ///< "eth0", "lo"
  std::string driver;      ///< "mlx5_core", "virtio_net"; "" if none
  std::string pci_device;  ///< "0000:3b:00.0"; a virtio NIC's PCI parent
  std::optional<std::int64_t> speed_mbps;  ///< link speed, Mbit/s
  std::optional<std::uint32_t> mtu;        ///< bytes
  std::optional<bool> sg;                  ///< scatter-gather enabled
  std::optional<bool> tso;                 ///< TCP segmentation offload
  std::string iommu_group;                 ///< "17"; "" when none
  /// "identity" (passthrough), "DMA" (strict), "DMA-FQ" (lazy), another
  /// kernel name as read, or "" when the device has no IOMMU group.
  std::string iommu_type;
};

struct HostFacts {
  std::string kernel_release;  ///< proc/sys/kernel/osrelease
  std::string cpu_model;       ///< first "model name" in proc/cpuinfo
  /// Kernel command line words whose key mentions iommu, in order
  /// ("intel_iommu=on", "iommu=pt", "iommu.strict=0").
  std::vector<std::string> iommu_cmdline;
  InterfaceFacts interface;
  /// What could not be read or resolved, one sentence each (for people;
  /// not part of the fingerprint).
  std::vector<std::string> notes;

  /// 64-bit FNV-1a of every fact above except the notes: changes when any
  /// fact changes.
  std::uint64_t Fingerprint() const;
};

/// Never fails: what cannot be read is left unknown and named in `notes`.
HostFacts CollectHostFacts(const HostFactsOptions& options);

/// {"kernel_release", "cpu_model", "iommu_cmdline": [..], "interface":
///  {"name", "driver", "pci_device", "speed_mbps", "mtu", "sg", "tso",
///   "iommu_group", "iommu_type"}, "fingerprint": "16 hex digits",
///  "notes": [..]}; unknown values are null.
nlohmann::json ToJson(const HostFacts& facts);

}  // namespace zcal::probes
