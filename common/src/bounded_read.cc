#include "zcal/common/bounded_read.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>

#include "zcal/common/errno_text.h"
#include "zcal/common/units.h"

namespace zcal::common {
namespace {

std::string_view KindName(mode_t mode) {
  if (S_ISDIR(mode)) return "a directory";
  if (S_ISCHR(mode)) return "a character device";
  if (S_ISBLK(mode)) return "a block device";
  if (S_ISSOCK(mode)) return "a socket";
  if (S_ISFIFO(mode)) return "a pipe";
  return "not a regular file";
}

std::string TooLarge(const std::string& path, std::string_view what,
                     std::uint64_t max_bytes) {
  return path + ": the " + std::string(what) + " is larger than " +
         FormatSizeApprox(static_cast<double>(max_bytes)) +
         ", the most zcal reads for it; give the right file";
}

}  // namespace

Result<UniqueFd> OpenInput(const std::string& path, InputKind kind,
                           std::string_view what) {
  UniqueFd fd;
  if (path == "-") {
    fd.Reset(::fcntl(STDIN_FILENO, F_DUPFD_CLOEXEC, 0));
  } else {
    // O_NONBLOCK: opening a FIFO must not wait for a writer before its kind
    // is checked; it is cleared again below.
    fd.Reset(::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY));
  }
  if (!fd) {
    const int err = errno;
    const Errc code = err == ENOENT ? Errc::kNotFound
                      : err == EACCES ? Errc::kPermission
                                      : Errc::kIo;
    return Fail(code, path + ": cannot open the " + std::string(what) + ": " +
                          ErrnoText(err));
  }
  struct stat st{};
  if (::fstat(fd.get(), &st) != 0) {
    return Fail(Errc::kIo, path + ": " + ErrnoText(errno));
  }
  const bool regular = S_ISREG(st.st_mode);
  const bool pipe = S_ISFIFO(st.st_mode);
  if (!regular && !(pipe && kind == InputKind::kRegularOrPipe)) {
    return Fail(Errc::kInvalidArgument,
                path + " is " + std::string(KindName(st.st_mode)) + ", not " +
                    (kind == InputKind::kRegular ? "a regular file"
                                                 : "a regular file or a pipe") +
                    "; give the " + std::string(what) + " file");
  }
  const int flags = ::fcntl(fd.get(), F_GETFL);
  if (flags >= 0) ::fcntl(fd.get(), F_SETFL, flags & ~O_NONBLOCK);
  return fd;
}

Result<std::size_t> ReadSome(int fd, const std::string& path, char* buffer,
                             std::size_t size) {
  while (true) {
    const ssize_t n = ::read(fd, buffer, size);
    if (n >= 0) return static_cast<std::size_t>(n);
    if (errno != EINTR) {
      return Fail(Errc::kIo, path + ": read failed: " + ErrnoText(errno));
    }
  }
}

Result<std::string> ReadBounded(int fd, const std::string& path,
                                std::uint64_t max_bytes, std::string_view what) {
  struct stat st{};
  if (::fstat(fd, &st) == 0 && S_ISREG(st.st_mode) &&
      static_cast<std::uint64_t>(st.st_size) > max_bytes) {
    return Fail(Errc::kInvalidArgument, TooLarge(path, what, max_bytes));
  }
  std::string text;
  std::size_t used = 0;
  while (true) {
    // The file may grow after fstat: never hold more than one byte over.
    if (text.size() - used < 4096) {
      text.resize(std::min<std::uint64_t>(
          std::max<std::size_t>(text.size() * 2, 64 * 1024), max_bytes + 1));
    }
    if (used == text.size()) break;
    const Result<std::size_t> n = ReadSome(fd, path, text.data() + used, text.size() - used);
    if (!n) return tl::unexpected(n.error());
    if (*n == 0) break;
    used += *n;
  }
  if (used > max_bytes) {
    return Fail(Errc::kInvalidArgument, TooLarge(path, what, max_bytes));
  }
  text.resize(used);
  return text;
}

Result<std::string> ReadBounded(const std::string& path, std::uint64_t max_bytes,
                                InputKind kind, std::string_view what) {
  Result<UniqueFd> fd = OpenInput(path, kind, what);
  if (!fd) return tl::unexpected(fd.error());
  return ReadBounded(fd->get(), path, max_bytes, what);
}

}  // namespace zcal::common
