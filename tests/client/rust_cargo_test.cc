// Runs the Rust crate's tests (client/rust) against a segment the agent's
// writer made: publishes the table client/rust/tests/agent_segment.rs
// expects under a name of this process, runs
//   cargo test --offline --locked
// with Debian's cargo and rustc, this build's libzcal, and the target and
// cargo home inside the build directory, then removes the segment. Exits
// with cargo's status (77, skipped, when the toolchain is missing).
//
//   client_rust_cargo_test CARGO RUSTC MANIFEST TARGET_DIR LIB_DIR
#include <spawn.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <optional>
#include <string>
#include <vector>

#include "zcal/agent/publish/shm_writer.h"

extern char** environ;

namespace {

using zcal::agent::PublishedEntry;
using zcal::agent::ScopeKind;
namespace cal = zcal::calibrator;

constexpr int kSkipped = 77;

PublishedEntry Entry(ScopeKind scope, cal::Method method, cal::Verdict verdict,
                     std::optional<std::uint64_t> threshold, const char* address = "",
                     std::uint8_t prefix_len = 0) {
  PublishedEntry e;
  e.scope = scope;
  e.method = method;
  e.verdict = verdict;
  e.threshold_bytes = threshold;
  e.address = address;
  e.prefix_len = prefix_len;
  e.confidence = 0.9;
  return e;
}

std::vector<PublishedEntry> Table() {
  PublishedEntry inconclusive = Entry(ScopeKind::kPeer, cal::Method::kMsgZerocopy,
                                      cal::Verdict::kInconclusive, std::nullopt, "10.9.0.0", 16);
  inconclusive.reason = cal::Reason::kNoisy;
  PublishedEntry never = Entry(ScopeKind::kHostDefault, cal::Method::kUringSendZc,
                               cal::Verdict::kNever, std::nullopt);
  never.reason = cal::Reason::kSlower;
  PublishedEntry one = Entry(ScopeKind::kPeer, cal::Method::kMsgZerocopy,
                             cal::Verdict::kThreshold, 16384, "10.1.0.0", 16);
  one.depth = zcal::agent::DepthClass::k1;
  return {
      one,
      Entry(ScopeKind::kLoopback, cal::Method::kMsgZerocopy, cal::Verdict::kThreshold, 8192),
      Entry(ScopeKind::kPeer, cal::Method::kMsgZerocopy, cal::Verdict::kThreshold, 4096,
            "10.1.0.0", 16),
      inconclusive,
      Entry(ScopeKind::kPeer, cal::Method::kMsgZerocopy, cal::Verdict::kAlways, std::nullopt,
            "2001:db8::", 32),
      never,
  };
}

bool Executable(const std::string& path) { return access(path.c_str(), X_OK) == 0; }

}  // namespace

int main(int argc, char** argv) {
  if (argc != 6) {
    std::fprintf(stderr, "usage: %s CARGO RUSTC MANIFEST TARGET_DIR LIB_DIR\n", argv[0]);
    return 2;
  }
  const std::string cargo = argv[1], rustc = argv[2], manifest = argv[3], target = argv[4],
                    lib_dir = argv[5];
  const std::string rustdoc = rustc.substr(0, rustc.rfind('/') + 1) + "rustdoc";
  for (const std::string& tool : {cargo, rustc, rustdoc}) {
    if (!Executable(tool)) {
      std::printf("SKIP: %s is missing (apt-get install cargo rustc)\n", tool.c_str());
      return kSkipped;
    }
  }

  const std::string name = "/zcal-rust-" + std::to_string(getpid());
  zcal::agent::ShmWriterOptions options;
  options.name = name;
  options.capacity = 16;
  auto writer = zcal::agent::ShmWriter::Create(options);
  if (!writer) {
    std::fprintf(stderr, "client_rust: %s\n", writer.error().message.c_str());
    return 1;
  }
  if (auto ok = (*writer)->Publish(Table(), false); !ok) {
    std::fprintf(stderr, "client_rust: %s\n", ok.error().message.c_str());
    shm_unlink(name.c_str());
    return 1;
  }

  // The toolchain named here, not the first on PATH (a rustup one would
  // build with another rustc); nothing is written outside the build dir.
  std::vector<std::string> env = {
      "ZCAL_TEST_SEGMENT=" + name, "ZCAL_LIB_DIR=" + lib_dir, "RUSTC=" + rustc,
      "RUSTDOC=" + rustdoc,        "CARGO_TARGET_DIR=" + target,
      "CARGO_HOME=" + target + "/cargo-home", "CARGO_TERM_COLOR=never",
  };
  for (char** e = environ; *e; ++e) {
    const std::string entry = *e;
    const std::string key = entry.substr(0, entry.find('='));
    if (key == "RUSTC" || key == "RUSTDOC" || key == "CARGO_TARGET_DIR" || key == "CARGO_HOME" ||
        key == "RUSTUP_TOOLCHAIN" || key == "CARGO_BUILD_TARGET" || key == "RUSTFLAGS")
      continue;
    env.push_back(entry);
  }
  std::vector<char*> envp;
  for (auto& e : env) envp.push_back(e.data());
  envp.push_back(nullptr);
  std::vector<std::string> args = {cargo,   "test", "--offline", "--locked",
                                   "--manifest-path", manifest};
  std::vector<char*> argp;
  for (auto& a : args) argp.push_back(a.data());
  argp.push_back(nullptr);

  pid_t pid = -1;
  int status = 0;
  const int rc = posix_spawn(&pid, cargo.c_str(), nullptr, nullptr, argp.data(), envp.data());
  if (rc == 0 && waitpid(pid, &status, 0) != pid) status = -1;
  writer->reset();
  shm_unlink(name.c_str());
  if (rc != 0) {
    std::fprintf(stderr, "client_rust: cannot run %s\n", cargo.c_str());
    return 1;
  }
  if (!WIFEXITED(status)) {
    std::fprintf(stderr, "client_rust: cargo did not exit normally (status %d)\n", status);
    return 1;
  }
  return WEXITSTATUS(status);
}
