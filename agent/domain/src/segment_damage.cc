#include "zcal/agent/domain/segment_damage.h"

namespace zcal::agent {

std::string_view SegmentDamageName(SegmentDamage damage) {
  switch (damage) {
    case SegmentDamage::kNone:
      return "";
    case SegmentDamage::kRemoved:
      return "removed";
    case SegmentDamage::kReplaced:
      return "replaced";
    case SegmentDamage::kTruncated:
      return "truncated";
    case SegmentDamage::kResized:
      return "resized";
    case SegmentDamage::kHeader:
      return "header";
    case SegmentDamage::kTable:
      return "table";
  }
  return "";
}

}  // namespace zcal::agent
