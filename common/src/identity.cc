#include "zcal/common/identity.h"

#include <grp.h>
#include <pwd.h>

#include <cerrno>
#include <charconv>
#include <vector>

#include "zcal/common/bounded_read.h"
#include "zcal/common/errno_text.h"
#include "zcal/common/text.h"

namespace zcal::common {
namespace {

// The buffer getgrnam_r/getpwuid_r need grows with the group's member list;
// ERANGE asks for a larger one. 1 MiB bounds a corrupt database.
constexpr std::size_t kFirstBuffer = 4096;
constexpr std::size_t kLastBuffer = 1 << 20;

}  // namespace

Result<gid_t> ResolveGroup(const std::string& group) {
  unsigned long numeric = 0;
  const auto [end, ec] =
      std::from_chars(group.data(), group.data() + group.size(), numeric);
  if (!group.empty() && ec == std::errc() && end == group.data() + group.size() &&
      numeric < 0xFFFFFFFFUL) {
    return static_cast<gid_t>(numeric);
  }
  for (std::size_t size = kFirstBuffer; size <= kLastBuffer; size *= 4) {
    std::vector<char> buffer(size);
    struct group entry{};
    struct group* found = nullptr;
    const int rc =
        ::getgrnam_r(group.c_str(), &entry, buffer.data(), buffer.size(), &found);
    if (rc == ERANGE) continue;
    if (rc != 0 && rc != ENOENT && rc != ESRCH) {
      return Fail(Errc::kIo, "group '" + group + "': the group database cannot "
                             "be read: " + ErrnoText(rc));
    }
    if (found == nullptr) {
      return Fail(Errc::kNotFound,
                  "no group named '" + group +
                      "' on this host; create it, or give an existing group "
                      "or a numeric gid");
    }
    return found->gr_gid;
  }
  return Fail(Errc::kIo, "group '" + group + "': its entry is larger than " +
                             std::to_string(kLastBuffer) + " bytes");
}

std::string UserName(uid_t uid) {
  for (std::size_t size = kFirstBuffer; size <= kLastBuffer; size *= 4) {
    std::vector<char> buffer(size);
    struct passwd entry{};
    struct passwd* found = nullptr;
    const int rc = ::getpwuid_r(uid, &entry, buffer.data(), buffer.size(), &found);
    if (rc == ERANGE) continue;
    if (rc == 0 && found != nullptr) return found->pw_name;
    break;
  }
  return "uid " + std::to_string(uid);
}

std::optional<bool> EffectiveCapability(const std::string& proc_status, int bit) {
  const Result<std::string> status = ReadBounded(proc_status, 64 * 1024, InputKind::kRegular, "status");
  if (!status || bit < 0 || bit > 63) return std::nullopt;
  for (const std::string_view line : Split(*status, '\n')) {
    if (!line.starts_with("CapEff:")) continue;
    const std::optional<std::uint64_t> caps = ParseHex64(Trim(line.substr(7)));
    if (!caps) return std::nullopt;
    return ((*caps >> bit) & 1U) != 0;
  }
  return std::nullopt;
}

}  // namespace zcal::common
