#include "zcal/agent/service/instance_lock.h"

#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <utility>

#include "zcal/common/errno_text.h"

namespace zcal::agent {

// The lock file is never unlinked: removing it while another agent waits to
// open it would let two agents lock two different files of the same name.
Result<std::unique_ptr<InstanceLock>> InstanceLock::Acquire(
    const std::string& segment_name, const std::string& dir) {
  const std::string path = dir + segment_name + ".lock";
  common::UniqueFd fd(open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0644));
  if (!fd && errno == EACCES) {
    // Locking needs no write access; only recording the pid does.
    fd.Reset(open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NOFOLLOW));
  }
  if (!fd) {
    const int error = errno;
    const std::string why = common::ErrnoText(error);
    if (error == ELOOP) {
      return Fail(Errc::kPermission,
                  path + " is a symbolic link; refusing to use it as the "
                         "agent's lock file. Remove it.");
    }
    return Fail(error == EACCES ? Errc::kPermission : Errc::kIo,
                path + ": cannot open the agent's lock file (" + why +
                    "); run the agent as the user that owns it, or remove "
                    "it if no agent runs");
  }
  if (flock(fd.get(), LOCK_EX | LOCK_NB) != 0) {
    const int error = errno;
    std::string holder;
    char buffer[32] = {};
    const ssize_t n = pread(fd.get(), buffer, sizeof buffer - 1, 0);
    if (n > 0) {
      const long pid = std::strtol(buffer, nullptr, 10);
      if (pid > 0) holder = " (pid " + std::to_string(pid) + ")";
    }
    if (error == EWOULDBLOCK) {
      return Fail(Errc::kBusy,
                  "another zcal agent" + holder + " already publishes segment " +
                      segment_name + " (lock " + path +
                      "); stop it first, or give this agent another "
                      "segment.name");
    }
    return Fail(Errc::kIo, path + ": cannot lock: " + common::ErrnoText(error));
  }
  const std::string pid = std::to_string(getpid()) + "\n";
  if (ftruncate(fd.get(), 0) == 0) {
    [[maybe_unused]] const ssize_t n = pwrite(fd.get(), pid.data(), pid.size(), 0);
  }
  return std::unique_ptr<InstanceLock>(new InstanceLock(path, std::move(fd)));
}

InstanceLock::~InstanceLock() {
  if (ftruncate(fd_.get(), 0) != 0) {
    // A stale pid in the file only makes a later message less precise.
  }
}

}  // namespace zcal::agent
