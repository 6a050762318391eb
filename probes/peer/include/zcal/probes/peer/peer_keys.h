// The shared keys of peer probes: a file of lines `KEYID HEXSECRET`
// (docs/peer-protocol.md, "Keys"). A sink accepts every key of its file, so
// that a new key can be added to every sink before clients present it and
// the old one removed afterwards: rotation without downtime. A client
// presents the first key of its file.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "zcal/common/result.h"

namespace zcal::probes::peer {

inline constexpr std::size_t kMinSecretBytes = 32;
inline constexpr std::size_t kMaxSecretBytes = 64;
inline constexpr std::size_t kMaxKeys = 64;

struct PeerKey {
  std::string id;                    ///< ValidKeyId (peer_protocol.h)
  std::vector<std::uint8_t> secret;  ///< kMinSecretBytes..kMaxSecretBytes

  /// For telling configurations apart (a rotated key file), not for
  /// authenticating anyone: not constant-time.
  bool operator==(const PeerKey&) const = default;
};

struct KeyRing {
  std::vector<PeerKey> keys;  ///< in file order; never empty
  /// Sentences for the log, e.g. a file others may read.
  std::vector<std::string> warnings;

  /// nullptr when no key has this id.
  const PeerKey* Find(std::string_view id) const;
  /// The key a client presents: the first.
  const PeerKey& Presented() const { return keys.front(); }

  bool operator==(const KeyRing&) const = default;
};

/// Parses the text of a key file. Blank lines and lines starting with '#'
/// are skipped; every other line is `KEYID HEXSECRET` (one or more spaces
/// or tabs between). Errc::kParse naming `source`:LINE and what is wrong
/// (never the secret): a bad id, a repeated id, a secret that is not hex or
/// shorter than 32 bytes, more than kMaxKeys keys, or no key at all.
Result<KeyRing> ParseKeyFile(std::string_view text, std::string_view source);

/// Reads and parses a key file (at most 64 KiB, a regular file). A file
/// that its group or others may read gets a warning in the ring.
Result<KeyRing> LoadKeyFile(const std::string& path);

/// A new key line, `ID HEX` with a 32-byte secret from libsodium's CSPRNG.
/// An empty `id` gets a random one ("k" and 8 hex digits).
/// Errc::kInvalidArgument for an invalid id.
Result<std::string> NewKeyLine(std::string_view id);

}  // namespace zcal::probes::peer
