#include "zcal/common/units.h"

#include <array>
#include <cctype>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <limits>
#include <optional>
#include <utility>

#include "zcal/common/text.h"

namespace zcal::common {
namespace {

constexpr std::string_view kSizeGrammar =
    "write a number of bytes, optionally with a unit: K/KiB, M/MiB, G/GiB, "
    "T/TiB (powers of 1024) or kB, MB, GB, TB (powers of 1000), e.g. 4096, "
    "64K, 1.5MiB";
constexpr std::string_view kRateGrammar =
    "write bytes per second with a size unit (e.g. 100M or 100MiB/s, powers "
    "of 1024; 100MB/s, powers of 1000) or a bit rate (e.g. 10Gbit/s, 800Mbps)";
constexpr std::string_view kDurationGrammar =
    "write a number of seconds or a number with a unit: ms, s, m (min), h, d "
    "(e.g. 500ms, 30s, 6h)";

struct Number {
  double value = 0;
  std::string_view unit;
};

std::string Quoted(std::string_view text) {
  return "'" + std::string(text) + "'";
}

// Splits "64 KiB" into 64 and "KiB": digits with at most one '.', then at
// most one space, then the unit.
std::optional<Number> SplitNumber(std::string_view text) {
  text = Trim(text);
  std::size_t i = 0;
  bool dot = false;
  while (i < text.size() &&
         (std::isdigit(static_cast<unsigned char>(text[i])) ||
          (text[i] == '.' && !dot))) {
    dot = dot || text[i] == '.';
    ++i;
  }
  const std::string_view digits = text.substr(0, i);
  if (digits.empty() || digits == ".") return std::nullopt;
  Number number;
  const auto [end, ec] =
      std::from_chars(digits.data(), digits.data() + digits.size(),
                      number.value, std::chars_format::fixed);
  if (ec != std::errc() || end != digits.data() + digits.size() ||
      !std::isfinite(number.value)) {
    return std::nullopt;
  }
  number.unit = text.substr(i);
  if (number.unit.starts_with(' ')) number.unit.remove_prefix(1);
  return number;
}

std::string Lower(std::string_view text) {
  std::string out(text);
  for (char& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

// The factor of a size unit, or nullopt. A trailing "B" without "i" means
// powers of 1000 ("kB", "MB"); a bare letter or "iB" powers of 1024.
std::optional<double> SizeFactor(std::string_view unit) {
  const std::string u = Lower(unit);
  if (u.empty() || u == "b") return 1.0;
  static constexpr std::string_view kPrefixes = "kmgt";
  const std::size_t power = kPrefixes.find(u[0]);
  if (power == std::string_view::npos) return std::nullopt;
  const std::string_view rest = std::string_view(u).substr(1);
  const int exponent = static_cast<int>(power) + 1;
  if (rest.empty() || rest == "ib") return std::pow(1024.0, exponent);
  if (rest == "b") return std::pow(1000.0, exponent);
  return std::nullopt;
}

// The factor, in bytes per second, of a bit-rate unit, or nullopt.
std::optional<double> BitRateFactor(std::string_view unit) {
  std::string u = Lower(unit);
  double scale = 1;
  if (!u.empty() && std::string_view("kmgt").find(u[0]) != std::string::npos &&
      u.size() > 1 && u[1] != 'i') {
    scale = std::pow(1000.0, static_cast<double>(std::string_view("kmgt").find(u[0]) + 1));
    u.erase(0, 1);
  }
  if (u == "bit/s" || u == "bps") return scale / 8;
  return std::nullopt;
}

Result<std::uint64_t> WholeBytes(std::string_view text, double value,
                                 std::string_view grammar) {
  // 2^63: far beyond any size or rate, and exactly representable.
  if (value >= 9.2e18) {
    return Fail(Errc::kInvalidArgument, Quoted(text) + " is too large");
  }
  const double rounded = std::round(value);
  if (std::fabs(value - rounded) > 1e-6 * std::max(1.0, value)) {
    return Fail(Errc::kInvalidArgument,
                Quoted(text) + " is not a whole number of bytes; " +
                    std::string(grammar));
  }
  return static_cast<std::uint64_t>(rounded);
}

}  // namespace

Result<std::uint64_t> ParseSize(std::string_view text) {
  const std::optional<Number> number = SplitNumber(text);
  if (!number) {
    return Fail(Errc::kInvalidArgument,
                Quoted(text) + " is not a size; " + std::string(kSizeGrammar));
  }
  const std::optional<double> factor = SizeFactor(number->unit);
  if (!factor) {
    return Fail(Errc::kInvalidArgument,
                Quoted(text) + " has an unknown size unit " +
                    Quoted(number->unit) + "; " + std::string(kSizeGrammar));
  }
  return WholeBytes(text, number->value * *factor, kSizeGrammar);
}

Result<std::uint64_t> ParseRate(std::string_view text) {
  const std::optional<Number> number = SplitNumber(text);
  if (!number) {
    return Fail(Errc::kInvalidArgument,
                Quoted(text) + " is not a rate; " + std::string(kRateGrammar));
  }
  std::string_view unit = number->unit;
  std::optional<double> factor = BitRateFactor(unit);
  if (!factor) {
    if (unit.ends_with("/s")) unit.remove_suffix(2);
    factor = SizeFactor(unit);
  }
  if (!factor) {
    return Fail(Errc::kInvalidArgument,
                Quoted(text) + " has an unknown rate unit " +
                    Quoted(number->unit) + "; " + std::string(kRateGrammar));
  }
  return WholeBytes(text, number->value * *factor, kRateGrammar);
}

Result<std::chrono::milliseconds> ParseDuration(std::string_view text) {
  const std::optional<Number> number = SplitNumber(text);
  if (!number) {
    return Fail(Errc::kInvalidArgument, Quoted(text) + " is not a duration; " +
                                            std::string(kDurationGrammar));
  }
  static constexpr std::array<std::pair<std::string_view, double>, 7> kUnits =
      {{{"", 1000},
        {"ms", 1},
        {"s", 1000},
        {"m", 60 * 1000},
        {"min", 60 * 1000},
        {"h", 3600 * 1000},
        {"d", 86400 * 1000}}};
  for (const auto& [name, factor] : kUnits) {
    if (number->unit != name) continue;
    const double ms = std::round(number->value * factor);
    if (ms > 10.0 * 365 * 86400 * 1000) {
      return Fail(Errc::kInvalidArgument,
                  Quoted(text) + " is too long for a duration (at most ten "
                                 "years)");
    }
    return std::chrono::milliseconds(static_cast<std::int64_t>(ms));
  }
  return Fail(Errc::kInvalidArgument,
              Quoted(text) + " has an unknown duration unit " +
                  Quoted(number->unit) + "; " + std::string(kDurationGrammar));
}

std::string FormatSize(std::uint64_t bytes) {
  static constexpr std::array<std::pair<const char*, std::uint64_t>, 4>
      kUnits = {{{"TiB", 1ULL << 40},
                 {"GiB", 1ULL << 30},
                 {"MiB", 1ULL << 20},
                 {"KiB", 1ULL << 10}}};
  if (bytes != 0) {
    for (const auto& [name, factor] : kUnits) {
      if (bytes % factor == 0) return std::to_string(bytes / factor) + name;
    }
  }
  return std::to_string(bytes) + "B";
}

std::string FormatSizeApprox(double bytes) {
  static constexpr std::array<const char*, 5> kUnits = {"B", "KiB", "MiB",
                                                        "GiB", "TiB"};
  std::size_t unit = 0;
  while (std::fabs(bytes) >= 1024 && unit + 1 < kUnits.size()) {
    bytes /= 1024;
    ++unit;
  }
  char text[32];
  const bool whole = std::fabs(bytes - std::round(bytes)) < 0.05;
  std::snprintf(text, sizeof text, whole ? "%.0f %s" : "%.1f %s", bytes,
                kUnits[unit]);
  return text;
}

std::string FormatRate(std::uint64_t bytes_per_second) {
  return FormatSize(bytes_per_second) + "/s";
}

std::string FormatDuration(std::chrono::milliseconds duration) {
  const std::int64_t ms = duration.count();
  if (ms == 0) return "0s";
  static constexpr std::array<std::pair<const char*, std::int64_t>, 4>
      kUnits = {{{"d", 86400 * 1000},
                 {"h", 3600 * 1000},
                 {"m", 60 * 1000},
                 {"s", 1000}}};
  for (const auto& [name, factor] : kUnits) {
    if (ms % factor == 0) return std::to_string(ms / factor) + name;
  }
  return std::to_string(ms) + "ms";
}

}  // namespace zcal::common
