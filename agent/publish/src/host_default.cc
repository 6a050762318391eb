#include "zcal/agent/publish/host_default.h"

#include <algorithm>
#include <optional>
#include <string>
#include <utility>

namespace zcal::agent {

using calibrator::MethodResult;
using calibrator::Reason;
using calibrator::Verdict;

IommuClass ClassifyIommu(const HostDefaultNic& nic) {
  if (!nic.facts) {
    return {IommuTranslation::kUnknown,
            "the host-default NIC is unknown (" + nic.why_unknown + ")"};
  }
  const probes::InterfaceFacts& f = *nic.facts;
  if (f.driver.empty() && f.pci_device.empty()) {
    return {IommuTranslation::kUnknown,
            f.name +
                " is a virtual interface (bond, VLAN, bridge...): the IOMMU "
                "mode of the NICs behind it is not known; name one with "
                "host_default.interface"};
  }
  if (f.iommu_group.empty()) {
    return {IommuTranslation::kNone,
            f.name + " (" + f.driver + ") is in no IOMMU group: no IOMMU translates its DMA"};
  }
  if (f.iommu_type.empty()) {
    return {IommuTranslation::kUnknown,
            f.name + " is in IOMMU group " + f.iommu_group + " whose type cannot be read"};
  }
  if (f.iommu_type == "identity") {
    return {IommuTranslation::kNone,
            f.name + " is in IOMMU group " + f.iommu_group +
                " with an identity (passthrough) domain: its DMA is not translated"};
  }
  return {IommuTranslation::kTranslates,
          f.name + " is in IOMMU group " + f.iommu_group + " of type " + f.iommu_type +
              ": the IOMMU translates every mapping, which the discard path cannot see"};
}

bool UsableForHostDefault(const MethodResult& result) {
  switch (result.verdict) {
    case Verdict::kThreshold:
    case Verdict::kAlways:
      return true;
    case Verdict::kNever:
      return result.reason == Reason::kSlower;
    case Verdict::kInconclusive:
      return false;
  }
  return false;
}

namespace {

// A class goes with its method's stream result: readers fall back to it.
MethodStates Usable(const MethodStates& methods) {
  MethodStates out;
  for (const auto& [key, s] : methods) {
    if (UsableForHostDefault(s.published)) out.emplace(key, s);
  }
  std::erase_if(out, [&](const auto& item) {
    return item.first.depth != DepthClass::kStream && !out.contains({item.first.method});
  });
  return out;
}

const MethodStates* PathOfType(const AgentState& state,
                                               const Config& config, probes::TargetKind type) {
  for (const PathConfig& path : config.paths) {
    if (path.type != type) continue;
    const auto it = state.paths.find(PathId::Configured(path.name));
    if (it != state.paths.end()) return &it->second;
  }
  return nullptr;
}

}  // namespace

namespace {

// Where the NIC's IOMMU translates (or may), no discard result could stand
// for it, whatever it measured: the choice that says so, or nullopt with
// `why` (the IOMMU's state, for the estimate's explanation).
std::optional<HostDefaultChoice> RefusedByIommu(const HostDefaultNic& nic, std::string& why) {
  const IommuClass iommu = ClassifyIommu(nic);
  why = iommu.why;
  HostDefaultChoice choice;
  switch (iommu.translation) {
    case IommuTranslation::kNone:
      return std::nullopt;
    case IommuTranslation::kTranslates:
      choice.source = HostDefaultSource::kIommuTranslates;
      break;
    case IommuTranslation::kUnknown:
      choice.source = HostDefaultSource::kIommuUnknown;
      break;
  }
  choice.explanation = "no host default: " + iommu.why + "; measure a peer (peers:)";
  return choice;
}

// Neither a peer nor the discard path has a usable result: why, in words.
HostDefaultChoice NoSource(const Config& config, bool discard_configured,
                           const std::string& nic_name) {
  HostDefaultChoice choice;
  choice.source = HostDefaultSource::kNoPath;
  choice.explanation =
      std::string("no host default: no usable peer result through ") + nic_name +
      " (kernel-copied, failed and inconclusive ones never are)" +
      (!config.host_default.estimate ? " (estimates from the discard path are off)"
       : discard_configured
           ? " and no usable discard-path result yet (loopback is never a source: "
             "the kernel copies local zerocopy sends)"
           : " and no discard path configured (loopback is never a source: the "
             "kernel copies local zerocopy sends)");
  return choice;
}

// The discard path's results as an estimate: half their confidence, and no
// pending result of their own.
HostDefaultChoice Estimated(MethodStates estimate, const std::string& why) {
  for (auto& [key, s] : estimate) {
    if (s.published.confidence) *s.published.confidence *= 0.5;
    s.pending.reset();
  }
  HostDefaultChoice choice;
  choice.source = HostDefaultSource::kEstimated;
  choice.methods = std::move(estimate);
  choice.estimated = true;
  choice.explanation = "host default estimated from the discard path: " + why;
  return choice;
}

// The rule itself (header), without the NIC's name.
HostDefaultChoice ChooseSource(const AgentState& state, const Config& config,
                               const HostDefaultNic& nic, const MethodStates& peers) {
  if (!config.host_default.enabled) {
    HostDefaultChoice choice;
    choice.source = HostDefaultSource::kDisabled;
    choice.explanation = "no host default: host_default is off in the configuration";
    return choice;
  }
  const std::string nic_name = nic.facts ? nic.facts->name : std::string("the NIC");
  if (auto usable = Usable(peers); !usable.empty()) {
    HostDefaultChoice choice;
    choice.source = HostDefaultSource::kPeers;
    choice.methods = std::move(usable);
    choice.explanation = "host default from the peers reached through " + nic_name;
    return choice;
  }
  const MethodStates* discard = config.host_default.estimate
                                    ? PathOfType(state, config, probes::TargetKind::kDiscard)
                                    : nullptr;
  const bool discard_configured =
      config.host_default.estimate &&
      std::any_of(config.paths.begin(), config.paths.end(),
                  [](const PathConfig& p) { return p.type == probes::TargetKind::kDiscard; });
  std::string why;
  if (discard_configured) {
    if (auto refused = RefusedByIommu(nic, why)) return std::move(*refused);
  }
  MethodStates estimate = discard ? Usable(*discard) : MethodStates{};
  if (estimate.empty()) return NoSource(config, discard_configured, nic_name);
  return Estimated(std::move(estimate), why);
}

}  // namespace

HostDefaultChoice ChooseHostDefault(const AgentState& state, const Config& config,
                                    const HostDefaultNic& nic,
                                    const MethodStates& peers) {
  HostDefaultChoice choice = ChooseSource(state, config, nic, peers);
  if (nic.facts) choice.interface = nic.facts->name;
  return choice;
}

}  // namespace zcal::agent
