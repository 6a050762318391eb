// One agent per segment: an exclusive flock(2) on a lock file next to the
// segment (/dev/shm/NAME.lock), held for the agent's lifetime and released
// by the kernel when the process dies, even by SIGKILL.
#pragma once

#include <memory>
#include <string>

#include "zcal/common/result.h"
#include "zcal/common/unique_fd.h"

namespace zcal::agent {

class InstanceLock {
 public:
  /// Takes the lock of `segment_name` ("/zcal"). Errc::kBusy, naming the
  /// holder's pid when known, if another agent holds it; kPermission or
  /// kIo when the lock file cannot be opened. `dir` is where lock files
  /// live ("/dev/shm", the directory of POSIX shared memory on Linux).
  static Result<std::unique_ptr<InstanceLock>> Acquire(
      const std::string& segment_name, const std::string& dir = "/dev/shm");
  ~InstanceLock();  ///< releases the lock; the file stays (see .cc)
  InstanceLock(const InstanceLock&) = delete;
  InstanceLock& operator=(const InstanceLock&) = delete;

  const std::string& path() const { return path_; }

 private:
  InstanceLock(std::string path, common::UniqueFd fd)
      : path_(std::move(path)), fd_(std::move(fd)) {}
  std::string path_;
  common::UniqueFd fd_;
};

}  // namespace zcal::agent
