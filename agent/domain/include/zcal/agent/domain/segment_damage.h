// What the writer found wrong with its own segment when it checked it (at
// each heartbeat and before each publish), and repaired: the `cause` label
// of zcal_segment_repairs_total and the word in the agent's warning line.
#pragma once

#include <array>
#include <cstdint>
#include <string_view>

namespace zcal::agent {

enum class SegmentDamage : std::uint8_t {
  kNone,
  kRemoved,    ///< no file at the name any more
  kReplaced,   ///< another file at the name, not retired by a writer
  kTruncated,  ///< the file is shorter than the writer's mapping
  kResized,    ///< the file is longer than the writer's mapping
  kHeader,     ///< a header field differs from what the writer stored
  kTable,      ///< an entry in use differs from what the writer stored
};

/// Every damage zcal_segment_repairs_total counts, in the order the
/// metrics render them.
inline constexpr std::array<SegmentDamage, 6> kSegmentDamages = {
    SegmentDamage::kRemoved,   SegmentDamage::kReplaced, SegmentDamage::kTruncated,
    SegmentDamage::kResized,   SegmentDamage::kHeader,   SegmentDamage::kTable};

/// "", "removed", "replaced", "truncated", "resized", "header", "table".
std::string_view SegmentDamageName(SegmentDamage damage);

}  // namespace zcal::agent
