#include "zcal/agent/report/segment_table.h"

#include <arpa/inet.h>
#include <sys/socket.h>

#include <cstring>

#include "zcal/common/text.h"
#include "zcal/zcal.hpp"

namespace zcal::agent {
namespace {

std::string AddressText(const zcal_shm_entry& e) {
  char text[INET6_ADDRSTRLEN] = "?";
  inet_ntop(e.family == ZCAL_FAMILY_IPV4 ? AF_INET : AF_INET6, e.address, text,
            sizeof text);
  return text;
}

std::string InterfaceText(const zcal_shm_entry& e) {
  return std::string(e.interface, strnlen(e.interface, sizeof e.interface));
}

}  // namespace

SegmentTable ReadSegmentTable(const std::string& name) {
  SegmentTable table;
  table.name = name;
  auto segment = client::Segment::Open(name.c_str());
  table.error = segment.error();
  table.detail = segment.detail();
  if (!segment) return table;
  auto read = segment->Info();
  if (read) table.info = *read;
  table.error = read.error();
  table.detail = read.detail();
  if (!table.info) return table;
  for (std::uint32_t i = 0; i < table.info->count; ++i) {
    if (auto entry = segment->Entry(i)) table.entries.push_back(*entry);
  }
  return table;
}

std::optional<double> AgeSeconds(std::uint64_t now_ns, std::uint64_t then_ns) {
  if (then_ns == 0) return std::nullopt;
  if (then_ns >= now_ns) return 0.0;
  return static_cast<double>(now_ns - then_ns) / 1e9;
}

std::string ScopeText(const zcal_shm_entry& e) {
  switch (e.scope) {
    case ZCAL_SCOPE_PEER:
      return "peer " + AddressText(e) + "/" + std::to_string(e.prefix_len);
    case ZCAL_SCOPE_INTERFACE:
      return "interface " + InterfaceText(e);
    default:
      return zcal_scope_name(e.scope);
  }
}

std::string DepthText(const zcal_shm_entry& e) {
  const std::string name = zcal_depth_name(e.depth_class);
  return name == "unknown" ? name + " " + std::to_string(e.depth_class) : name;
}

bool Estimated(const zcal_shm_entry& e) {
  return (e.entry_flags & ZCAL_ENTRY_ESTIMATED) != 0;
}

bool Contradicted(const zcal_shm_entry& e) {
  return (e.entry_flags & ZCAL_ENTRY_CONTRADICTED) != 0;
}

HostDefaultSource HostDefaultSourceOf(std::uint32_t code) {
  switch (code) {
    case ZCAL_HOST_DEFAULT_PEERS: return HostDefaultSource::kPeers;
    case ZCAL_HOST_DEFAULT_ESTIMATED: return HostDefaultSource::kEstimated;
    case ZCAL_HOST_DEFAULT_NONE_NO_PATH: return HostDefaultSource::kNoPath;
    case ZCAL_HOST_DEFAULT_NONE_IOMMU: return HostDefaultSource::kIommuTranslates;
    case ZCAL_HOST_DEFAULT_NONE_IOMMU_UNKNOWN: return HostDefaultSource::kIommuUnknown;
    case ZCAL_HOST_DEFAULT_NONE_DISABLED: return HostDefaultSource::kDisabled;
    default: return HostDefaultSource::kUnknown;
  }
}

std::string_view HostDefaultSentence(HostDefaultSource source) {
  switch (source) {
    case HostDefaultSource::kPeers:
      return "from peers reached through the NIC";
    case HostDefaultSource::kEstimated:
      return "estimated from the discard path (the NIC's IOMMU does not "
             "translate; no NIC, IOMMU or receiver cost is in it)";
    case HostDefaultSource::kNoPath:
      return "none: no usable peer or discard-path result (loopback and "
             "kernel-copied paths never are); transports use their own default";
    case HostDefaultSource::kIommuTranslates:
      return "none: the NIC's IOMMU translates, which the discard path cannot "
             "see; measure a peer; transports use their own default";
    case HostDefaultSource::kIommuUnknown:
      return "none: the NIC's IOMMU mode is unknown; measure a peer or name "
             "the NIC (host_default.interface); transports use their own default";
    case HostDefaultSource::kDisabled:
      return "none: turned off in the configuration";
    case HostDefaultSource::kUnknown:
      break;
  }
  return "not said by this agent (ABI minor 0)";
}

std::optional<double> Confidence(const zcal_shm_entry& e) {
  if (e.confidence_ppm == ZCAL_CONFIDENCE_UNKNOWN) return std::nullopt;
  return e.confidence_ppm / 1e6;
}

nlohmann::json ThresholdsJson(const SegmentTable& table, std::uint64_t now_ns) {
  auto optional = [](std::optional<double> v) {
    return v ? nlohmann::json(*v) : nlohmann::json(nullptr);
  };
  const zcal_info& info = *table.info;
  nlohmann::json doc;
  doc["segment"] = table.name;
  doc["abi"] = {{"major", info.abi_major}, {"minor", info.abi_minor}};
  doc["segment_bytes"] = info.segment_bytes;
  doc["capacity"] = info.capacity;
  doc["count"] = info.count;
  doc["generation"] = info.generation;
  doc["agent_pid"] = info.agent_pid;
  doc["created_ns"] = info.created_ns;
  doc["publish_time_ns"] = info.publish_time_ns;
  doc["publish_age_seconds"] = optional(AgeSeconds(now_ns, info.publish_time_ns));
  doc["heartbeat_ns"] = info.heartbeat_ns;
  doc["heartbeat_age_seconds"] = optional(AgeSeconds(now_ns, info.heartbeat_ns));
  doc["stale"] = (info.flags & ZCAL_FLAG_STALE) != 0;
  doc["retired"] = (info.flags & ZCAL_FLAG_RETIRED) != 0;
  const HostDefaultSource host_default = HostDefaultSourceOf(info.host_default_source);
  const std::string_view reason = HostDefaultAbsenceReason(host_default);
  doc["host_default"] = {
      {"source", HostDefaultSourceName(host_default)},
      {"reason", reason.empty() ? nlohmann::json(nullptr) : nlohmann::json(reason)},
      {"text", HostDefaultSentence(host_default)}};
  doc["entries"] = nlohmann::json::array();
  for (const zcal_shm_entry& e : table.entries) {
    nlohmann::json j;
    j["scope"] = zcal_scope_name(e.scope);
    j["address"] = e.scope == ZCAL_SCOPE_PEER ? nlohmann::json(AddressText(e))
                                              : nlohmann::json(nullptr);
    j["prefix_len"] = e.scope == ZCAL_SCOPE_PEER ? nlohmann::json(e.prefix_len)
                                                 : nlohmann::json(nullptr);
    j["interface"] = e.scope == ZCAL_SCOPE_INTERFACE
                         ? nlohmann::json(InterfaceText(e))
                         : nlohmann::json(nullptr);
    j["method"] = zcal_method_name(e.method);
    j["depth"] = DepthText(e);
    j["verdict"] = zcal_verdict_name(e.verdict);
    j["threshold_bytes"] = (e.entry_flags & ZCAL_ENTRY_HAS_THRESHOLD)
                               ? nlohmann::json(e.threshold_bytes)
                               : nlohmann::json(nullptr);
    j["confidence"] = optional(Confidence(e));
    j["reason"] = e.reason == ZCAL_REASON_NONE ? nlohmann::json(nullptr)
                                               : nlohmann::json(zcal_reason_name(e.reason));
    j["measured_at_ns"] = e.measured_at_ns;
    j["age_seconds"] = optional(AgeSeconds(now_ns, e.measured_at_ns));
    j["fingerprint"] = common::Hex64(e.fingerprint);
    j["estimated"] = Estimated(e);
    j["contradicted"] = Contradicted(e);
    doc["entries"].push_back(std::move(j));
  }
  return doc;
}

}  // namespace zcal::agent
