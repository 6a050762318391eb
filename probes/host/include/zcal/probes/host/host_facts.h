// Host facts: what the calibration result depends on besides the code (the
// kernel, the CPU, the egress NIC, its driver and its IOMMU mode), and a
// fingerprint that changes when any of them changes. The host's facts are
// one type (HostFacts); a path adds its egress interface (PathFacts).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "zcal/common/address.h"
#include "zcal/common/result.h"
#include "zcal/probes/types/target.h"

namespace zcal::probes {

/// What to read for one path (CollectPathFacts, CollectInterfaceFacts).
struct HostFactsOptions {
  /// Root of the sysfs/procfs tree to read (tests point it at a fake tree).
  /// The ethtool ioctl (sg, tso) is asked only when this is "/".
  std::string root = "/";
  /// The interface to describe; "" = the egress interface of `target`.
  std::string interface;
  /// Loopback (interface lo), the discard path (lo of its namespace) or a
  /// peer, whose egress interface the kernel is asked for
  /// (EgressInterface, whatever the root).
  Target target;
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

/// The facts of the host, which no path changes: one type for `zcal
/// calibrate`, `zcal doctor` and the agent, which adds the egress
/// interface of each of its paths.
struct HostFacts {
  std::string kernel_release;  ///< proc/sys/kernel/osrelease
  std::string cpu_model;       ///< first "model name" in proc/cpuinfo
  /// Kernel command line words whose key mentions iommu, in order
  /// ("intel_iommu=on", "iommu=pt", "iommu.strict=0").
  std::vector<std::string> iommu_cmdline;
  /// lo and every interface in ROOT/sys/class/net backed by a device (NICs,
  /// virtio; not veth, bridges or tunnels, which containers create and
  /// remove), by name.
  std::vector<InterfaceFacts> devices;
  /// The host fingerprint: 64-bit FNV-1a of the kernel release, the CPU
  /// model, the IOMMU command line and the facts of `devices`, as
  /// CollectHostFacts computed it or as a file recorded it; 0 = unknown.
  /// It does not depend on a path, so that `zcal calibrate --json`, the
  /// agent's state, segment and metrics carry the same value on one host.
  std::uint64_t fingerprint = 0;
  /// What could not be read or resolved, of the host and of the interfaces
  /// read with it (a path's egress interface), one sentence each, without
  /// duplicates (for people; not part of the fingerprint).
  std::vector<std::string> notes;
};

/// One path's reading: the host, and the interface the path's traffic
/// leaves through (may be virtual, e.g. lo). What could not be read of
/// that interface is among host.notes.
struct PathFacts {
  HostFacts host;
  InterfaceFacts interface;
};

/// The interface traffic to `destination` leaves through, as the kernel
/// routes it: an RTM_GETROUTE in the calling thread's network namespace, so
/// that policy rules (`ip rule`) and every table they select are honoured,
/// as `ip route get ADDR` shows. IPv4-mapped IPv6 addresses are asked as
/// IPv4; IPv6 link-local addresses, which need a scope, are not supported.
/// A local address leaves through lo. Errc::kNotFound when no route leads
/// there (no route, an unreachable, prohibit or blackhole route, no IPv6 on
/// this host), Errc::kIo otherwise; each naming the address and `ip route
/// get`. Thread-safe; blocks for one netlink round trip.
Result<std::string> EgressInterface(const common::IpAddress& destination);

/// Where traffic to other hosts leaves: the EgressInterface of an address
/// reserved for documentation, which no real network routes specifically
/// (203.0.113.1, RFC 5737; else 2001:db8::1, RFC 3849), i.e. the default
/// route's interface or wherever policy rules send such traffic.
/// Errc::kNotFound naming both families' reasons when neither has a route.
Result<std::string> DefaultRouteInterface();

/// The facts of the host below `root` (as HostFactsOptions::root), with
/// their fingerprint. Never fails: what cannot be read is left unknown and
/// named in `notes`.
HostFacts CollectHostFacts(const std::string& root = "/");

/// The facts of options.interface, or of options.target's egress interface
/// (its name stays empty when no route leads there). Never fails: what
/// cannot be read or resolved is left unknown and appended to `notes`.
InterfaceFacts CollectInterfaceFacts(const HostFactsOptions& options,
                                     std::vector<std::string>& notes);

/// CollectHostFacts and CollectInterfaceFacts of one path, in one reading.
PathFacts CollectPathFacts(const HostFactsOptions& options);

}  // namespace zcal::probes
