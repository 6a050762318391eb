#include "zcal/calibrator/depth.h"

#include <algorithm>
#include <charconv>

namespace zcal::calibrator {

std::string DepthName(std::uint32_t depth) {
  return depth == kStreamDepth ? "stream" : std::to_string(depth);
}

Result<std::uint32_t> ParseDepth(std::string_view text) {
  if (text == "stream") return kStreamDepth;
  std::uint64_t value = 0;
  const char* end = text.data() + text.size();
  const auto [last, ec] = std::from_chars(text.data(), end, value);
  const std::string quoted = "'" + std::string(text) + "'";
  if (text.empty() || ec != std::errc() || last != end) {
    return Fail(Errc::kInvalidArgument,
                "depth: " + quoted + " is not a depth; write a whole number of sends in "
                "flight from 1 to " + std::to_string(kMaxDepth) + ", or \"stream\"");
  }
  if (value == 0 || value > kMaxDepth) {
    return Fail(Errc::kInvalidArgument,
                "depth: " + quoted + " is out of range; a depth is 1 to " +
                    std::to_string(kMaxDepth) + " sends in flight, or \"stream\"");
  }
  return static_cast<std::uint32_t>(value);
}

Result<std::vector<std::uint32_t>> NormalizeDepthClasses(std::vector<std::uint32_t> classes) {
  if (classes.empty()) {
    return Fail(Errc::kInvalidArgument, "depth classes: none given; name at least one, "
                                        "e.g. \"1,4,16,stream\"");
  }
  if (classes.size() > kMaxDepthClasses) {
    return Fail(Errc::kInvalidArgument,
                "depth classes: " + std::to_string(classes.size()) + " given, at most " +
                    std::to_string(kMaxDepthClasses) + " are allowed");
  }
  for (std::uint32_t depth : classes) {
    if (depth > kMaxDepth) {
      return Fail(Errc::kInvalidArgument,
                  "depth classes: " + std::to_string(depth) + " is out of range; a depth is 1 to " +
                      std::to_string(kMaxDepth) + " sends in flight, or \"stream\"");
    }
  }
  // Numeric classes ascending, stream (0) last: 0 - 1 wraps to the largest.
  std::sort(classes.begin(), classes.end(),
            [](std::uint32_t a, std::uint32_t b) { return a - 1 < b - 1; });
  const auto dup = std::adjacent_find(classes.begin(), classes.end());
  if (dup != classes.end()) {
    return Fail(Errc::kInvalidArgument,
                "depth classes: " + DepthName(*dup) + " is named twice; name each class once");
  }
  return classes;
}

Result<std::vector<std::uint32_t>> ParseDepthClasses(std::string_view text) {
  std::vector<std::uint32_t> classes;
  std::size_t start = 0;
  while (start <= text.size()) {
    const std::size_t comma = std::min(text.find(',', start), text.size());
    auto depth = ParseDepth(text.substr(start, comma - start));
    if (!depth) return tl::unexpected(depth.error());
    classes.push_back(*depth);
    if (classes.size() > kMaxDepthClasses) break;  // NormalizeDepthClasses says so
    start = comma + 1;
  }
  return NormalizeDepthClasses(std::move(classes));
}

std::vector<std::uint32_t> DefaultDepthClasses() { return {1, 4, 16, kStreamDepth}; }

std::uint32_t ClassOf(std::uint32_t depth, const std::vector<std::uint32_t>& classes) {
  if (classes.empty()) return kStreamDepth;
  depth = std::max<std::uint32_t>(depth, 1);
  const bool stream = classes.back() == kStreamDepth;
  if (stream && (depth >= kStreamDepthFrom || classes.size() == 1)) return kStreamDepth;
  std::uint32_t below = classes.front();  // the smallest: none is at or below
  for (std::uint32_t c : classes) {
    if (c != kStreamDepth && c <= depth) below = c;
  }
  return below;
}

}  // namespace zcal::calibrator
