#include "zcal/probes/host/sysfs.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>

#include "zcal/common/bounded_read.h"
#include "zcal/common/errno_text.h"
#include "zcal/common/text.h"
#include "zcal/common/unique_fd.h"

namespace zcal::probes {

namespace {

constexpr std::size_t kMaxFileBytes = 1024 * 1024;

}  // namespace

std::filesystem::path UnderRoot(const std::string& root,
                                std::string_view relative) {
  while (!relative.empty() && relative.front() == '/') relative.remove_prefix(1);
  return std::filesystem::path(root.empty() ? "/" : root) / relative;
}

Result<std::string> ReadSmallFile(const std::filesystem::path& path) {
  const common::UniqueFd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC));
  if (!fd) {
    const int err = errno;
    return Fail(err == ENOENT || err == ENOTDIR ? Errc::kNotFound : Errc::kIo,
                path.string() + ": cannot open: " + common::ErrnoText(err));
  }
  return common::ReadBounded(fd.get(), path.string(), kMaxFileBytes, "file");
}

Result<std::string> ReadFirstLine(const std::filesystem::path& path) {
  auto text = ReadSmallFile(path);
  if (!text) return text;
  const auto end = text->find('\n');
  return std::string(common::Trim(std::string_view(*text).substr(0, end)));
}

}  // namespace zcal::probes
