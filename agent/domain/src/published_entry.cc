#include "zcal/agent/domain/published_entry.h"

namespace zcal::agent {

std::string_view HostDefaultSourceName(HostDefaultSource source) {
  switch (source) {
    case HostDefaultSource::kPeers: return "peers";
    case HostDefaultSource::kEstimated: return "estimated";
    case HostDefaultSource::kUnknown: return "unknown";
    default: return "none";
  }
}

std::string_view HostDefaultAbsenceReason(HostDefaultSource source) {
  switch (source) {
    case HostDefaultSource::kNoPath: return "no_path";
    case HostDefaultSource::kIommuTranslates: return "iommu_translates";
    case HostDefaultSource::kIommuUnknown: return "iommu_unknown";
    case HostDefaultSource::kDisabled: return "disabled";
    default: return "";
  }
}

PublishedEntry EntryOf(const MethodKey& key, const MethodState& state, PublishedEntry where) {
  where.method = key.method;
  where.depth = key.depth;
  where.verdict = state.published.verdict;
  where.threshold_bytes = state.published.threshold_bytes;
  where.confidence = state.published.confidence;
  where.reason = state.published.reason;
  where.measured_at_ns = state.measured_at_ns;
  where.load = state.load;
  where.pending = state.pending;
  return where;
}

}  // namespace zcal::agent
