#include "zcal/common/atomic_file.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <filesystem>

#include "zcal/common/errno_text.h"

namespace zcal::common {
namespace {

Errc ClassOf(int error) {
  return error == EACCES || error == EPERM || error == EROFS ? Errc::kPermission : Errc::kIo;
}

tl::unexpected<Error> Failed(const std::string& path, const std::string& what, int error) {
  return Fail(ClassOf(error), path + ": " + what + ": " + ErrnoText(error));
}

}  // namespace

AtomicFile::AtomicFile(std::string path, std::string temp, UniqueFd dir, UniqueFd fd,
                       AtomicFileOptions options)
    : path_(std::move(path)),
      temp_(std::move(temp)),
      dir_(std::move(dir)),
      fd_(std::move(fd)),
      options_(options) {}

AtomicFile::~AtomicFile() {
  if (!committed_) unlinkat(dir_.get(), temp_.c_str(), 0);
}

Result<std::unique_ptr<AtomicFile>> AtomicFile::Create(std::string path,
                                                       AtomicFileOptions options) {
  const std::filesystem::path target(path);
  if (target.filename().empty()) {
    return Fail(Errc::kInvalidArgument, path + ": names a directory, not a file");
  }
  const std::filesystem::path dir = target.parent_path().empty() ? "." : target.parent_path();
  if (options.create_directories) {
    std::error_code ec;
    if (!std::filesystem::is_directory(dir, ec)) {
      std::filesystem::create_directories(dir, ec);
      if (ec) {
        return Fail(ClassOf(ec.value()), path + ": cannot create the directory " + dir.string() +
                                             ": " + ec.message());
      }
    }
  }
  UniqueFd dir_fd(open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  if (!dir_fd) return Failed(path, "cannot open the directory " + dir.string(), errno);
  // A name of our own in the target's directory: the rename then stays
  // within one file system, and two writers (threads or processes) never
  // share a temporary file.
  static std::atomic<unsigned> counter{0};
  const std::string temp = "." + target.filename().string() + ".tmp." +
                           std::to_string(getpid()) + "." + std::to_string(counter++);
  UniqueFd fd(openat(dir_fd.get(), temp.c_str(),
                     O_RDWR | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600));
  if (!fd) return Failed(path, "cannot create a file beside it", errno);
  return std::unique_ptr<AtomicFile>(
      new AtomicFile(std::move(path), temp, std::move(dir_fd), std::move(fd), options));
}

Result<void> AtomicFile::Write(std::string_view text) {
  std::size_t written = 0;
  while (written < text.size()) {
    const ssize_t n = write(fd_.get(), text.data() + written, text.size() - written);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return Failed(path_, "cannot write", n < 0 ? errno : ENOSPC);
    written += static_cast<std::size_t>(n);
  }
  return {};
}

Result<void> AtomicFile::Commit() {
  mode_t mode = options_.mode;
  std::optional<uid_t> owner;
  std::optional<gid_t> group = options_.group;
  struct stat existing {};
  if (options_.keep_existing &&
      fstatat(dir_.get(), std::filesystem::path(path_).filename().c_str(), &existing,
              AT_SYMLINK_NOFOLLOW) == 0 &&
      S_ISREG(existing.st_mode)) {
    mode = existing.st_mode & 07777;
    owner = existing.st_uid;
    group = existing.st_gid;
  }
  if (fchmod(fd_.get(), mode) != 0) return Failed(path_, "cannot set the mode", errno);
  if (owner || group) {
    const uid_t uid = owner && *owner != geteuid() ? *owner : static_cast<uid_t>(-1);
    const gid_t gid = group ? *group : static_cast<gid_t>(-1);
    // Keeping another user's ownership needs privilege; without it the file
    // is the writer's, with the mode it had.
    if (fchown(fd_.get(), uid, gid) != 0 && !options_.keep_existing) {
      return Failed(path_,
                    "cannot give it to group " + std::to_string(gid) +
                        " (the writing user must belong to that group)",
                    errno);
    }
  }
  if (options_.durable && fsync(fd_.get()) != 0) {
    return Failed(path_, "cannot flush it to disk", errno);
  }
  const std::string leaf = std::filesystem::path(path_).filename().string();
  if (renameat(dir_.get(), temp_.c_str(), dir_.get(), leaf.c_str()) != 0) {
    return Failed(path_, "cannot put it in place", errno);
  }
  committed_ = true;
  // The rename is durable only once the directory entry is on disk.
  if (options_.durable) fsync(dir_.get());
  return {};
}

Result<void> WriteFileAtomically(const std::string& path, std::string_view text,
                                 AtomicFileOptions options) {
  Result<std::unique_ptr<AtomicFile>> file = AtomicFile::Create(path, options);
  if (!file) return tl::unexpected(file.error());
  if (Result<void> written = (*file)->Write(text); !written) return written;
  return (*file)->Commit();
}

}  // namespace zcal::common
