#include "zcal/agent/units.h"

#include <array>
#include <charconv>
#include <cmath>
#include <limits>
#include <utility>

namespace zcal::agent {
namespace {

std::string_view Trim(std::string_view text) {
  while (!text.empty() && (text.front() == ' ' || text.front() == '\t')) {
    text.remove_prefix(1);
  }
  while (!text.empty() && (text.back() == ' ' || text.back() == '\t')) {
    text.remove_suffix(1);
  }
  return text;
}

// Splits "64 KiB" into the number and the unit; the number part is digits
// and at most one '.', the unit what follows after at most one space.
std::pair<std::string_view, std::string_view> SplitNumber(
    std::string_view text) {
  std::size_t i = 0;
  while (i < text.size() &&
         ((text[i] >= '0' && text[i] <= '9') || text[i] == '.')) {
    ++i;
  }
  std::string_view number = text.substr(0, i);
  std::string_view unit = text.substr(i);
  if (!unit.empty() && unit.front() == ' ') unit.remove_prefix(1);
  return {number, unit};
}

}  // namespace

Result<std::uint64_t> ParseSize(std::string_view text) {
  const std::string_view trimmed = Trim(text);
  const auto [number, unit] = SplitNumber(trimmed);
  std::uint64_t value = 0;
  const auto [end, ec] =
      std::from_chars(number.data(), number.data() + number.size(), value);
  if (number.empty() || ec != std::errc() ||
      end != number.data() + number.size()) {
    return Fail(Errc::kInvalidArgument,
                "'" + std::string(text) +
                    "' is not a size; write a whole number of bytes, "
                    "optionally with a unit: B, KiB, MiB, GiB, kB, MB, GB "
                    "(e.g. 4096, 64KiB)");
  }
  static constexpr std::array<std::pair<std::string_view, std::uint64_t>, 8>
      kUnits = {{{"", 1},
                 {"B", 1},
                 {"KiB", 1ULL << 10},
                 {"MiB", 1ULL << 20},
                 {"GiB", 1ULL << 30},
                 {"kB", 1000},
                 {"MB", 1000 * 1000},
                 {"GB", 1000 * 1000 * 1000}}};
  for (const auto& [name, factor] : kUnits) {
    if (unit != name) continue;
    if (value > std::numeric_limits<std::uint64_t>::max() / factor) {
      return Fail(Errc::kInvalidArgument,
                  "'" + std::string(text) + "' is too large for a size");
    }
    return value * factor;
  }
  return Fail(Errc::kInvalidArgument,
              "'" + std::string(text) + "' has an unknown unit '" +
                  std::string(unit) +
                  "'; allowed units: B, KiB, MiB, GiB, kB, MB, GB");
}

Result<std::chrono::milliseconds> ParseDuration(std::string_view text) {
  const std::string_view trimmed = Trim(text);
  const auto [number, unit] = SplitNumber(trimmed);
  double value = 0;
  const auto [end, ec] =
      std::from_chars(number.data(), number.data() + number.size(), value);
  if (number.empty() || ec != std::errc() ||
      end != number.data() + number.size()) {
    return Fail(Errc::kInvalidArgument,
                "'" + std::string(text) +
                    "' is not a duration; write a number of seconds or a "
                    "number with a unit: ms, s, m, h, d (e.g. 30s, 6h)");
  }
  static constexpr std::array<std::pair<std::string_view, double>, 6> kUnits =
      {{{"", 1000},
        {"ms", 1},
        {"s", 1000},
        {"m", 60 * 1000},
        {"h", 3600 * 1000},
        {"d", 86400 * 1000}}};
  for (const auto& [name, factor] : kUnits) {
    if (unit != name) continue;
    const double ms = std::round(value * factor);
    // Ten years: far beyond any sensible setting, far below overflow.
    if (ms > 10.0 * 365 * 86400 * 1000) {
      return Fail(Errc::kInvalidArgument,
                  "'" + std::string(text) + "' is too long for a duration");
    }
    return std::chrono::milliseconds(static_cast<std::int64_t>(ms));
  }
  return Fail(Errc::kInvalidArgument,
              "'" + std::string(text) + "' has an unknown unit '" +
                  std::string(unit) + "'; allowed units: ms, s, m, h, d");
}

std::string FormatDuration(std::chrono::milliseconds duration) {
  const std::int64_t ms = duration.count();
  if (ms == 0) return "0s";
  static constexpr std::array<std::pair<const char*, std::int64_t>, 4>
      kUnits = {{{"d", 86400 * 1000}, {"h", 3600 * 1000}, {"m", 60 * 1000},
                 {"s", 1000}}};
  for (const auto& [name, factor] : kUnits) {
    if (ms % factor == 0) return std::to_string(ms / factor) + name;
  }
  return std::to_string(ms) + "ms";
}

std::string FormatSize(std::uint64_t bytes) {
  static constexpr std::array<std::pair<const char*, std::uint64_t>, 3>
      kUnits = {{{"GiB", 1ULL << 30}, {"MiB", 1ULL << 20}, {"KiB", 1ULL << 10}}};
  if (bytes != 0) {
    for (const auto& [name, factor] : kUnits) {
      if (bytes % factor == 0) return std::to_string(bytes / factor) + name;
    }
  }
  return std::to_string(bytes) + "B";
}

}  // namespace zcal::agent
