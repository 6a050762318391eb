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

}  // namespace zcal::agent
