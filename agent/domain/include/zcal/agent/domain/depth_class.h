// How many zerocopy sends of one connection were in flight when a result
// was measured: the depth class of an answer (ZCAL_DEPTH_* of the ABI,
// client/include/zcal/zcal.h; docs/shm-abi.md).
#pragma once

#include <cstdint>
#include <iterator>
#include <optional>
#include <string_view>

namespace zcal::agent {

/// The code is the depth, as in the segment; 0 is a bulk stream. At most 8
/// classes: the metrics label thresholds with it.
enum class DepthClass : std::uint16_t {
  kStream = 0,  ///< as many as the probe's pool keeps: what probes measure today
  k1 = 1,
  k4 = 4,
  k16 = 16,
};
inline constexpr DepthClass kDepthClasses[] = {DepthClass::k1, DepthClass::k4,
                                               DepthClass::k16, DepthClass::kStream};
static_assert(std::size(kDepthClasses) <= 8, "the metrics' depth label is bounded at 8");

/// "stream", "1", "4", "16" (metric label, zcal show, JSON, state file).
constexpr std::string_view DepthClassName(DepthClass depth) {
  switch (depth) {
    case DepthClass::kStream: return "stream";
    case DepthClass::k1: return "1";
    case DepthClass::k4: return "4";
    case DepthClass::k16: return "16";
  }
  return "unknown";
}

/// The class named `name` (DepthClassName), or nullopt.
constexpr std::optional<DepthClass> ParseDepthClass(std::string_view name) {
  for (const DepthClass depth : kDepthClasses) {
    if (DepthClassName(depth) == name) return depth;
  }
  return std::nullopt;
}

}  // namespace zcal::agent
