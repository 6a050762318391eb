// The host default: which results a transport falls back to for a
// destination without an entry of its own. One rule, here:
//
//  1. Only paths that cross a NIC may be its source: peers, aggregated per
//     egress interface (the interface of the default route, or the one the
//     configuration names). Loopback is never a source: the kernel copies
//     every zerocopy send it delivers locally. A result the kernel reported
//     as copied, unsupported, failed or inconclusive is never a source
//     either.
//  2. Without a peer result, an estimate from the discard path, but only
//     where that NIC's IOMMU does not translate (no IOMMU group, or an
//     identity/passthrough domain): the discard path sees the sender's own
//     costs and no IOMMU, and a translating IOMMU made zerocopy lose at
//     every size on hosts where the sender's costs alone favoured it.
//     Such entries carry the estimated flag and half the confidence.
//  3. Otherwise there is no host default, and the source says why.
#pragma once

#include <map>
#include <string>

#include "zcal/agent/config/config.h"
#include "zcal/agent/domain/agent_state.h"
#include "zcal/agent/domain/host_default_choice.h"
#include "zcal/agent/domain/host_info.h"
#include "zcal/agent/domain/published_entry.h"
#include "zcal/calibrator/method.h"

namespace zcal::agent {

/// Whether the IOMMU translates the DMA of a NIC.
enum class IommuTranslation : std::uint8_t { kNone, kTranslates, kUnknown };

/// What the IOMMU does to a NIC's DMA, and the sentence that says why.
struct IommuClass {
  IommuTranslation translation = IommuTranslation::kUnknown;
  std::string why;  ///< for people: the NIC, its group and domain type
};

/// kNone for a device without IOMMU group or with an identity domain,
/// kTranslates for DMA/DMA-FQ (and any other domain type), kUnknown for a
/// virtual interface (bond, VLAN, bridge: its NICs are not known), a group
/// whose type cannot be read, or an unknown NIC.
IommuClass ClassifyIommu(const HostDefaultNic& nic);

/// A result that may stand for traffic through a NIC: a threshold, always,
/// or never because zerocopy measured slower.
bool UsableForHostDefault(const calibrator::MethodResult& result);

/// Applies the rule to the published state, to each depth class alike.
/// `peers`: the aggregate of peer results through the host-default NIC,
/// per method and class (empty without peers). The choice's interface is
/// `nic`'s name.
HostDefaultChoice ChooseHostDefault(const AgentState& state, const Config& config,
                                    const HostDefaultNic& nic, const MethodStates& peers = {});

}  // namespace zcal::agent
