#include "zcal/probes/peer/peer_keys.h"

#include <sys/stat.h>

#include <algorithm>
#include <array>
#include <cstdio>

#include "zcal/common/bounded_read.h"
#include "zcal/common/text.h"
#include "zcal/probes/peer/peer_protocol.h"

namespace zcal::probes::peer {
namespace {

int HexDigit(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

bool IsBlank(char c) { return c == ' ' || c == '\t'; }

}  // namespace

const PeerKey* KeyRing::Find(std::string_view id) const {
  const auto it = std::find_if(keys.begin(), keys.end(),
                               [&](const PeerKey& k) { return k.id == id; });
  return it == keys.end() ? nullptr : &*it;
}

Result<KeyRing> ParseKeyFile(std::string_view text, std::string_view source) {
  KeyRing ring;
  std::size_t line_number = 0;
  const auto fail = [&](const std::string& what) {
    return Fail(Errc::kParse, std::string(source) + ":" +
                                  std::to_string(line_number) + ": " + what);
  };
  for (const std::string_view raw : common::Split(text, '\n')) {
    ++line_number;
    const std::string line(common::Trim(raw));
    if (line.empty() || line.front() == '#') continue;
    const auto gap = std::find_if(line.begin(), line.end(), IsBlank);
    const std::string id(line.begin(), gap);
    const auto secret_start = std::find_if_not(gap, line.end(), IsBlank);
    const std::string hex(secret_start, line.end());
    if (!ValidKeyId(id)) {
      return fail("the key id '" + id.substr(0, 32) +
                  "' is not 1 to 16 of [A-Za-z0-9_.-]; write KEYID HEXSECRET");
    }
    if (hex.empty()) return fail("key " + id + " has no secret; write KEYID HEXSECRET");
    if (ring.Find(id) != nullptr) return fail("key id " + id + " is repeated");
    PeerKey key{id, {}};
    if (hex.size() % 2 != 0 ||
        !std::all_of(hex.begin(), hex.end(), [](char c) { return HexDigit(c) >= 0; })) {
      return fail("the secret of key " + id +
                  " is not an even number of hex digits (`zcal keygen` prints a key)");
    }
    for (std::size_t i = 0; i < hex.size(); i += 2) {
      key.secret.push_back(
          static_cast<std::uint8_t>(HexDigit(hex[i]) * 16 + HexDigit(hex[i + 1])));
    }
    if (key.secret.size() < kMinSecretBytes || key.secret.size() > kMaxSecretBytes) {
      return fail("the secret of key " + id + " has " +
                  std::to_string(key.secret.size()) + " bytes; allowed: " +
                  std::to_string(kMinSecretBytes) + " to " +
                  std::to_string(kMaxSecretBytes) + " (`zcal keygen` prints a key)");
    }
    if (ring.keys.size() == kMaxKeys) {
      return fail("more than " + std::to_string(kMaxKeys) + " keys");
    }
    ring.keys.push_back(std::move(key));
  }
  if (ring.keys.empty()) {
    return Fail(Errc::kParse, std::string(source) +
                                  ": no key; add a line KEYID HEXSECRET "
                                  "(`zcal keygen` prints one)");
  }
  return ring;
}

Result<KeyRing> LoadKeyFile(const std::string& path) {
  Result<common::UniqueFd> fd =
      common::OpenInput(path, common::InputKind::kRegular, "key file");
  if (!fd) return tl::unexpected(fd.error());
  struct stat st {};
  const bool shared = fstat(fd->get(), &st) == 0 && (st.st_mode & 077) != 0;
  Result<std::string> text =
      common::ReadBounded(fd->get(), path, common::kMaxKeyFileBytes, "key file");
  if (!text) return tl::unexpected(text.error());
  Result<KeyRing> ring = ParseKeyFile(*text, path);
  if (ring && shared) {
    char mode[8];
    std::snprintf(mode, sizeof mode, "%04o", static_cast<unsigned>(st.st_mode & 07777));
    ring->warnings.push_back("key file " + path + " has mode " + mode +
                             ": its group or others may read the secrets; "
                             "chmod 600 it, owned by the user the agent runs as");
  }
  return ring;
}

Result<std::string> NewKeyLine(std::string_view id) {
  std::string name(id);
  if (name.empty()) {
    std::array<std::uint8_t, 4> tag{};
    if (Result<void> ok = FillRandom(tag); !ok) return tl::unexpected(ok.error());
    name = "k" + common::HexBytes(tag);
  }
  if (!ValidKeyId(name)) {
    return Fail(Errc::kInvalidArgument,
                "key id '" + name + "' is not 1 to 16 of [A-Za-z0-9_.-]");
  }
  std::array<std::uint8_t, kMinSecretBytes> secret{};
  if (Result<void> ok = FillRandom(secret); !ok) return tl::unexpected(ok.error());
  return name + " " + common::HexBytes(secret);
}

}  // namespace zcal::probes::peer
