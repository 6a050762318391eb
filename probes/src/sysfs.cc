#include "sysfs.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

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
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    const int err = errno;
    return Fail(err == ENOENT || err == ENOTDIR ? Errc::kNotFound : Errc::kIo,
                path.string() + ": cannot open (" + std::strerror(err) + ")");
  }
  std::string text;
  char buffer[4096];
  while (text.size() < kMaxFileBytes) {
    const ssize_t n = ::read(fd, buffer, sizeof buffer);
    if (n == 0) break;
    if (n < 0) {
      if (errno == EINTR) continue;
      const int err = errno;
      ::close(fd);
      return Fail(Errc::kIo,
                  path.string() + ": cannot read (" + std::strerror(err) + ")");
    }
    text.append(buffer, static_cast<std::size_t>(n));
  }
  ::close(fd);
  return text;
}

Result<std::string> ReadFirstLine(const std::filesystem::path& path) {
  auto text = ReadSmallFile(path);
  if (!text) return text;
  const auto end = text->find('\n');
  return Trim(std::string_view(*text).substr(0, end));
}

std::string Trim(std::string_view text) {
  const char* space = " \t\r\n";
  const auto first = text.find_first_not_of(space);
  if (first == std::string_view::npos) return {};
  const auto last = text.find_last_not_of(space);
  return std::string(text.substr(first, last - first + 1));
}

}  // namespace zcal::probes
