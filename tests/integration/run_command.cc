#include "run_command.h"

#include <fcntl.h>
#include <poll.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <stdexcept>

namespace zcal::testing {

namespace {

void Check(bool ok, const char* what) {
  if (!ok) throw std::runtime_error(what);
}

}  // namespace

CommandResult RunCommand(const std::vector<std::string>& argv,
                         const std::string& input) {
  int in[2], out[2], err[2];
  Check(pipe2(in, O_CLOEXEC) == 0 && pipe2(out, O_CLOEXEC) == 0 &&
            pipe2(err, O_CLOEXEC) == 0,
        "pipe2");
  const pid_t pid = fork();
  Check(pid >= 0, "fork");
  if (pid == 0) {
    dup2(in[0], 0);
    dup2(out[1], 1);
    dup2(err[1], 2);
    std::vector<char*> args;
    for (const std::string& a : argv) args.push_back(const_cast<char*>(a.c_str()));
    args.push_back(nullptr);
    execv(args[0], args.data());
    _exit(127);
  }
  close(in[0]);
  close(out[1]);
  close(err[1]);
  // Small inputs only: the pipe buffer holds them without a reader.
  if (!input.empty()) {
    Check(write(in[1], input.data(), input.size()) ==
              static_cast<ssize_t>(input.size()),
          "write");
  }
  close(in[1]);
  CommandResult result;
  pollfd fds[2] = {{out[0], POLLIN, 0}, {err[0], POLLIN, 0}};
  std::string* sinks[2] = {&result.out, &result.err};
  int open_fds = 2;
  while (open_fds > 0) {
    Check(poll(fds, 2, -1) >= 0, "poll");
    for (int i = 0; i < 2; ++i) {
      if (fds[i].fd < 0 || fds[i].revents == 0) continue;
      char buffer[4096];
      const ssize_t n = read(fds[i].fd, buffer, sizeof buffer);
      if (n <= 0) {
        close(fds[i].fd);
        fds[i].fd = -1;
        --open_fds;
      } else {
        sinks[i]->append(buffer, static_cast<std::size_t>(n));
      }
    }
  }
  int status = 0;
  rusage usage{};
  Check(wait4(pid, &status, 0, &usage) == pid, "wait4");
  result.max_rss_kib = usage.ru_maxrss;
  result.exit_status =
      WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  return result;
}

std::string ZcalPath() {
  const char* path = std::getenv("ZCAL");
  return path ? path : "zcal";
}

std::string SourcePath(const std::string& relative) {
  const char* root = std::getenv("ZCAL_SOURCE_ROOT");
  return std::string(root ? root : ".") + "/" + relative;
}

}  // namespace zcal::testing
