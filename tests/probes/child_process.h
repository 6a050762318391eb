// Runs a function in a forked child (so that a seccomp filter, dropped
// capabilities or a new network namespace stay there) and returns what it
// printed. The child's namespaces and limits die with it, even when the
// test fails.
#pragma once

#include <sys/wait.h>
#include <unistd.h>

#include <functional>
#include <optional>
#include <string>

namespace zcal::probes::testing {

/// The child's text, or nullopt when it did not exit with status 0.
inline std::optional<std::string> RunInChild(const std::function<std::string()>& body) {
  int pipe_fds[2];
  if (::pipe(pipe_fds) != 0) return std::nullopt;
  const pid_t pid = ::fork();
  if (pid < 0) return std::nullopt;
  if (pid == 0) {
    ::close(pipe_fds[0]);
    const std::string text = body();
    std::size_t written = 0;
    while (written < text.size()) {
      const ssize_t n = ::write(pipe_fds[1], text.data() + written, text.size() - written);
      if (n <= 0) ::_exit(2);
      written += static_cast<std::size_t>(n);
    }
    ::_exit(0);
  }
  ::close(pipe_fds[1]);
  std::string text;
  char buffer[4096];
  for (;;) {
    const ssize_t n = ::read(pipe_fds[0], buffer, sizeof buffer);
    if (n <= 0) break;
    text.append(buffer, static_cast<std::size_t>(n));
  }
  ::close(pipe_fds[0]);
  int status = 0;
  ::waitpid(pid, &status, 0);
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) return std::nullopt;
  return text;
}

}  // namespace zcal::probes::testing
