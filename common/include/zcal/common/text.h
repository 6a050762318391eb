// Small text helpers shared by every C++ part of zcal.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace zcal::common {

/// `text` without leading and trailing spaces, tabs, CR and LF.
std::string_view Trim(std::string_view text);

/// The words joined by `separator`: Join({"a", "b"}) == "a, b".
std::string Join(std::span<const std::string_view> words,
                 std::string_view separator = ", ");
std::string Join(std::span<const std::string> words,
                 std::string_view separator = ", ");

/// Splits at every `separator`; empty fields are kept ("a,,b" gives three).
std::vector<std::string_view> Split(std::string_view text, char separator);

/// A 64-bit value as exactly 16 lowercase hex digits, the one spelling of a
/// fingerprint in zcal's output ("00c0ffee00c0ffee").
std::string Hex64(std::uint64_t value);

/// Inverse of Hex64, also accepting 1 to 16 digits of either case and an
/// optional "0x"; nullopt otherwise.
std::optional<std::uint64_t> ParseHex64(std::string_view text);

/// Bytes as lowercase hex, two digits each.
std::string HexBytes(std::span<const std::uint8_t> bytes);

/// 64-bit FNV-1a: a cheap, stable hash for fingerprints (not for security).
inline constexpr std::uint64_t kFnv1aBasis = 0xcbf29ce484222325ULL;
std::uint64_t Fnv1a(std::string_view text, std::uint64_t hash = kFnv1aBasis);

}  // namespace zcal::common
