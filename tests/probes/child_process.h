// Runs a function in a forked child (so that a seccomp filter, dropped
// capabilities or a new network namespace stay there) and returns what it
// printed. The child's namespaces and limits die with it, even when the
// test fails.
#pragma once

#include <sched.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
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

/// Runs `body` in a forked child inside a network namespace of its own,
/// after the shell command `setup` (empty: none) ran in it. Its text, or
/// "skip: why" when the machine does not allow it (no unshare, a setup
/// command that fails). The namespace dies with the child, also when an
/// expectation fails.
inline std::string InPrivateNetwork(const std::string& setup,
                                    const std::function<std::string()>& body) {
  auto text = RunInChild([&]() -> std::string {
    if (::unshare(CLONE_NEWNET) != 0) {
      return std::string("skip: cannot create a network namespace (unshare: ") +
             std::strerror(errno) + ")";
    }
    if (!setup.empty()) {
      const std::string command = "(" + setup + ") 2>&1";
      FILE* pipe = ::popen(command.c_str(), "r");
      if (pipe == nullptr) return "skip: cannot run " + setup;
      std::string output;
      char buffer[512];
      while (std::fgets(buffer, sizeof buffer, pipe) != nullptr) output += buffer;
      if (::pclose(pipe) != 0) return "skip: " + setup + ": " + output;
    }
    return body();
  });
  return text ? *text : "the child failed";
}

}  // namespace zcal::probes::testing
