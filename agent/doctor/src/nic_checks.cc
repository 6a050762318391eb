// Each NIC (a device, not lo or a virtual interface): its IOMMU mode and
// the offloads zerocopy needs, from the probes' host facts.
#include "zcal/agent/doctor/doctor.h"
#include "zcal/common/text.h"

namespace zcal::agent::doctor {

namespace {

std::string CommandLine(const Observations& seen) {
  if (seen.host.iommu_cmdline.empty()) return "no iommu option on the kernel command line";
  return "kernel command line: " + common::Join(seen.host.iommu_cmdline, " ");
}

Finding Iommu(const probes::InterfaceFacts& nic, const Observations& seen) {
  const std::string check = "nic." + nic.name + ".iommu";
  const std::string where = nic.name + (nic.pci_device.empty() ? "" : " (" + nic.pci_device + ")");
  const std::string group = "IOMMU group " + nic.iommu_group;
  if (nic.iommu_type.empty()) {
    return {check, Status::kOk,
            where + ": no IOMMU domain type" +
                (nic.iommu_group.empty() ? std::string(" (no IOMMU group)") : " (" + group + ")") +
                ": DMA is not translated; " + CommandLine(seen),
            ""};
  }
  if (nic.iommu_type == "identity") {
    return {check, Status::kOk,
            where + ": " + group + " is identity (passthrough): no mapping per send; " +
                CommandLine(seen),
            ""};
  }
  if (nic.iommu_type == "DMA-FQ") {
    return {check, Status::kOk,
            where + ": " + group + " is DMA-FQ (translated, lazy flush): each zerocopy "
                "send maps its pages, so only peer results (never the discard path) give "
                "this NIC's threshold; " + CommandLine(seen),
            ""};
  }
  if (nic.iommu_type == "DMA") {
    return {check, Status::kWarn,
            where + ": " + group + " is DMA (translated, strict flush): every zerocopy "
                "send maps and unmaps its pages with a flush of the IOTLB, which made "
                "zerocopy lose at every size on some hosts; " + CommandLine(seen),
            "where the security policy allows: iommu.strict=0 (lazy, DMA-FQ) or "
            "iommu=pt / iommu.passthrough=1 (identity) on the kernel command line, then "
            "reboot"};
  }
  return {check, Status::kOk,
          where + ": " + group + " has domain type '" + nic.iommu_type + "'; " +
              CommandLine(seen),
          ""};
}

Finding Offloads(const probes::InterfaceFacts& nic) {
  const std::string check = "nic." + nic.name + ".offload";
  if (!nic.sg || !nic.tso) {
    return {check, Status::kWarn,
            nic.name + ": scatter-gather and TSO unknown (the ethtool ioctl was not asked "
                       "or refused)",
            "run zcal doctor on the host's root (--root /), or check `ethtool -k " +
                nic.name + "`"};
  }
  if (!*nic.sg) {
    return {check, Status::kFail,
            nic.name + ": scatter-gather is off, so the kernel copies every zerocopy send "
                       "that leaves through it",
            "ethtool -K " + nic.name + " sg on (and tso on)"};
  }
  if (!*nic.tso) {
    return {check, Status::kWarn,
            nic.name + ": TCP segmentation offload is off: each zerocopy TCP send is cut "
                       "into MTU-sized segments by the CPU, which lowers what zerocopy saves",
            "ethtool -K " + nic.name + " tso on"};
  }
  return {check, Status::kOk, nic.name + ": scatter-gather and TSO are on", ""};
}

}  // namespace

std::vector<Finding> CheckNics(const DoctorOptions&, const Observations& seen) {
  std::vector<Finding> out;
  for (const probes::InterfaceFacts& nic : seen.host.devices) {
    if (nic.name == "lo") continue;
    out.push_back(Iommu(nic, seen));
    out.push_back(Offloads(nic));
  }
  if (out.empty()) {
    out.push_back({"nic", Status::kOk,
                   "no network device besides lo: only loopback and the discard path apply "
                   "here",
                   ""});
  }
  return out;
}

}  // namespace zcal::agent::doctor
