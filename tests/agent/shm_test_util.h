// Helpers of the shared-memory tests: entries to publish, and running a
// program (zcal, zc_sender) with its output captured.
#pragma once

#include <fcntl.h>
#include <poll.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <map>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "segment_image.h"
#include "zcal/agent/publish/shm_writer.h"

extern char** environ;

namespace zcal::test {

inline agent::PublishedEntry Entry(agent::ScopeKind scope, std::uint64_t threshold,
                                   calibrator::Method method =
                                       calibrator::Method::kMsgZerocopy) {
  agent::PublishedEntry e;
  e.scope = scope;
  e.method = method;
  e.verdict = calibrator::Verdict::kThreshold;
  e.threshold_bytes = threshold;
  e.measured_at_ns = NowNs();
  return e;
}

inline agent::PublishedEntry PeerEntry(const std::string& address, std::uint8_t prefix,
                                       std::uint64_t threshold) {
  agent::PublishedEntry e = Entry(agent::ScopeKind::kPeer, threshold);
  e.address = address;
  e.prefix_len = prefix;
  return e;
}

inline agent::PublishedEntry AtDepth(agent::PublishedEntry e, agent::DepthClass depth) {
  e.depth = depth;
  return e;
}

inline std::unique_ptr<agent::ShmWriter> MakeWriter(const ScopedName& name,
                                                    std::uint32_t capacity = 16) {
  agent::ShmWriterOptions options;
  options.name = name.str();
  options.capacity = capacity;
  auto writer = agent::ShmWriter::Create(options);
  if (!writer) throw std::runtime_error(writer.error().message);
  return std::move(*writer);
}

struct ProcessResult {
  int exit_status = -1;  ///< -1 when it did not exit normally
  std::string out, err;
};

/// Runs argv[0] (a path) with extra "NAME=value" environment entries.
inline ProcessResult Run(const std::vector<std::string>& argv,
                         const std::vector<std::string>& env = {}) {
  int out_pipe[2], err_pipe[2];
  if (pipe2(out_pipe, O_CLOEXEC) != 0 || pipe2(err_pipe, O_CLOEXEC) != 0)
    throw std::runtime_error("pipe");
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_adddup2(&actions, out_pipe[1], 1);
  posix_spawn_file_actions_adddup2(&actions, err_pipe[1], 2);
  std::vector<char*> args;
  for (const auto& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  std::vector<std::string> env_strings(env);
  for (char** e = environ; *e; ++e) env_strings.emplace_back(*e);
  std::vector<char*> envp;
  for (auto& e : env_strings) envp.push_back(e.data());
  envp.push_back(nullptr);
  pid_t pid = -1;
  const int rc = posix_spawn(&pid, argv[0].c_str(), &actions, nullptr, args.data(),
                             envp.data());
  posix_spawn_file_actions_destroy(&actions);
  close(out_pipe[1]);
  close(err_pipe[1]);
  ProcessResult result;
  if (rc != 0) {
    close(out_pipe[0]);
    close(err_pipe[0]);
    result.err = "posix_spawn " + argv[0] + " failed";
    return result;
  }
  pollfd fds[2] = {{out_pipe[0], POLLIN, 0}, {err_pipe[0], POLLIN, 0}};
  std::string* sinks[2] = {&result.out, &result.err};
  int open_fds = 2;
  while (open_fds > 0) {
    if (poll(fds, 2, -1) < 0) break;
    for (int i = 0; i < 2; ++i) {
      if (fds[i].fd < 0 || fds[i].revents == 0) continue;
      char buf[4096];
      const ssize_t n = read(fds[i].fd, buf, sizeof buf);
      if (n > 0) {
        sinks[i]->append(buf, static_cast<std::size_t>(n));
      } else {
        close(fds[i].fd);
        fds[i].fd = -1;
        --open_fds;
      }
    }
  }
  int status = 0;
  waitpid(pid, &status, 0);
  if (WIFEXITED(status)) result.exit_status = WEXITSTATUS(status);
  return result;
}

/// The NAME=value lines of an env file or a --print-env output, comments
/// and blank lines skipped.
inline std::map<std::string, std::string> EnvLines(const std::string& text) {
  std::map<std::string, std::string> out;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) {
    if (line.empty() || line[0] == '#') continue;
    const auto eq = line.find('=');
    if (eq != std::string::npos) out[line.substr(0, eq)] = line.substr(eq + 1);
  }
  return out;
}

inline std::size_t LineCount(const std::string& text) {
  return static_cast<std::size_t>(std::count(text.begin(), text.end(), '\n'));
}

/// A test of the zcal binary (ZCAL_BINARY, set by meson test) with a
/// private temporary directory, removed after the test, pass or fail.
class ZcalCommandTest : public ::testing::Test {
 protected:
  void SetUp() override {
    const char* path = std::getenv("ZCAL_BINARY");
    if (path == nullptr) GTEST_SKIP() << "ZCAL_BINARY is not set (run through meson test)";
    binary_ = path;
    char dir[] = "/tmp/zcal-command-test-XXXXXX";
    ASSERT_NE(mkdtemp(dir), nullptr);
    dir_ = dir;
  }
  void TearDown() override {
    if (!dir_.empty()) std::filesystem::remove_all(dir_);
  }
  /// A refusal: one line on standard error that says `says`, nothing on
  /// standard output, exit status `status`.
  static void ExpectRefused(const ProcessResult& r, int status, const std::string& says) {
    EXPECT_EQ(r.exit_status, status) << r.err;
    EXPECT_EQ(r.out, "");
    EXPECT_EQ(LineCount(r.err), 1u) << r.err;
    EXPECT_NE(r.err.find(says), std::string::npos) << r.err;
  }
  std::string binary_;
  std::filesystem::path dir_;
};

}  // namespace zcal::test
