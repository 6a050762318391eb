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

/// The classes for messages: "1, 4, 16, stream".
inline constexpr std::string_view kDepthClassNames = "1, 4, 16, stream";

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

/// The class whose depth is `depth` (calibrator/depth.h: 0 is stream), or
/// nullopt for a depth the segment publishes no class of.
constexpr std::optional<DepthClass> DepthClassOf(std::uint32_t depth) {
  for (const DepthClass c : kDepthClasses) {
    if (static_cast<std::uint32_t>(c) == depth) return c;
  }
  return std::nullopt;
}

/// The depth of a class, as calibrator/depth.h counts it (stream is 0).
constexpr std::uint32_t DepthOf(DepthClass depth) { return static_cast<std::uint32_t>(depth); }

}  // namespace zcal::agent
