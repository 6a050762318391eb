// Ownership of a file descriptor.
#pragma once

#include <unistd.h>

#include <utility>

namespace zcal::common {

/// Owns one file descriptor and closes it when destroyed. Movable, not
/// copyable. -1 means empty. Not thread-safe (as an int is not).
class UniqueFd {
 public:
  UniqueFd() = default;
  explicit UniqueFd(int fd) : fd_(fd) {}
  ~UniqueFd() { Reset(); }
  UniqueFd(UniqueFd&& other) noexcept : fd_(other.Release()) {}
  UniqueFd& operator=(UniqueFd&& other) noexcept {
    if (this != &other) Reset(other.Release());
    return *this;
  }
  UniqueFd(const UniqueFd&) = delete;
  UniqueFd& operator=(const UniqueFd&) = delete;

  int get() const { return fd_; }
  explicit operator bool() const { return fd_ >= 0; }

  /// Gives up ownership without closing; the object becomes empty.
  int Release() { return std::exchange(fd_, -1); }

  /// Closes the descriptor held (if any) and takes `fd`.
  void Reset(int fd = -1) {
    if (fd_ >= 0) ::close(fd_);
    fd_ = fd;
  }

 private:
  int fd_ = -1;
};

}  // namespace zcal::common
