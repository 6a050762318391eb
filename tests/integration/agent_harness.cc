#include "agent_harness.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <cstdlib>
#include <sstream>
#include <thread>

#include <nlohmann/json.hpp>

#include "http_test_util.h"
#include "test_util.h"
#include "zcal/zcal.hpp"

namespace zcal::agent::testing {

std::string ZcalBinary() {
  const char* path = std::getenv("ZCAL");
  return path != nullptr ? path : "zcal";
}

std::string UniqueSegment() {
  static std::atomic<int> counter{0};
  return "/zcal-it-" + std::to_string(getpid()) + "-" +
         std::to_string(counter++);
}

std::size_t CountOf(const std::string& text, const std::string& fragment) {
  std::size_t count = 0;
  for (std::size_t at = text.find(fragment); at != std::string::npos;
       at = text.find(fragment, at + fragment.size())) {
    ++count;
  }
  return count;
}

std::string AgentConfig(const AgentSettings& s) {
  std::ostringstream out;
  out << "paths:\n"
      << "  - {name: loopback, type: loopback}\n";
  if (s.discard) out << "  - {name: discard, type: discard}\n";
  if (!s.methods.empty()) out << "methods: " << s.methods << "\n";
  if (!s.depths.empty()) out << "depths: " << s.depths << "\n";
  out << "sizes: {min: 4KiB, max: 64KiB}\n"
      << "schedule:\n"
      << "  at_startup: " << (s.at_startup ? "true" : "false") << "\n"
      << "  interval: 1h\n"
      << "  jitter: 0\n"
      << "  retry_after_failure: 1s\n"
      << "  fingerprint_poll: " << s.fingerprint_poll << "\n"
      << "budget:\n"
      << "  seconds_per_calibration: " << s.budget_seconds << "\n"
      << "  seconds_per_hour: 3600\n"
      << "segment:\n"
      << "  name: " << s.segment << "\n"
      << "  heartbeat: " << s.heartbeat << "\n"
      << "metrics:\n"
      << "  listen: \"" << s.metrics << "\"\n"
      << "state:\n"
      << "  path: " << s.state.string() << "\n";
  if (!s.sink_listen.empty()) {
    out << "sink:\n"
        << "  listen: \"" << s.sink_listen << "\"\n"
        << "  key_file: \"" << s.sink_key_file << "\"\n";
  }
  if (!s.peers_static.empty()) {
    out << "peers:\n"
        << "  static:\n";
    for (const std::string& peer : s.peers_static) out << "    - \"" << peer << "\"\n";
  }
  if (!s.host_default_interface.empty()) {
    out << "host_default:\n"
        << "  interface: \"" << s.host_default_interface << "\"\n";
  }
  out << s.apps;
  out
      << "log:\n"
      << "  level: debug\n"
      << "host:\n"
      << "  root: " << s.host_root << "\n";
  return out.str();
}

SegmentCleanup::~SegmentCleanup() {
  shm_unlink(name_.c_str());
  unlink(("/dev/shm" + name_ + ".lock").c_str());
}

std::unique_ptr<AgentProcess> AgentProcess::Start(
    const std::filesystem::path& config, const std::filesystem::path& log) {
  return StartProgram({ZcalBinary(), "agent", "--config", config.string()},
                      log);
}

std::unique_ptr<AgentProcess> AgentProcess::StartProgram(
    const std::vector<std::string>& argv, const std::filesystem::path& log) {
  std::vector<char*> args;
  for (const std::string& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  const pid_t pid = fork();
  if (pid == 0) {
    const int fd = open(log.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    dup2(fd, 2);
    const int null = open("/dev/null", O_RDWR);
    dup2(null, 0);
    dup2(null, 1);
    execv(args[0], args.data());
    _exit(127);
  }
  return std::unique_ptr<AgentProcess>(new AgentProcess(pid, log));
}

AgentProcess::~AgentProcess() {
  if (!reaped_) {
    kill(pid_, SIGKILL);
    waitpid(pid_, nullptr, 0);
  }
}

std::string AgentProcess::Log() const { return ReadFile(log_); }

bool AgentProcess::WaitForLog(const std::string& fragment,
                              std::chrono::milliseconds timeout,
                              std::size_t count) const {
  return WaitFor([&] { return CountOf(Log(), fragment) >= count; }, timeout);
}

bool Contains(const std::string& text, const std::string& fragment) {
  return text.find(fragment) != std::string::npos;
}

std::string Scrape(int port) {
  const auto response = HttpGet(port, "/metrics");
  return response && response->status == 200 ? response->body : "";
}

double Series(int port, const std::string& series) {
  return SeriesValue(Scrape(port), series).value_or(-1);
}

std::optional<zcal_info> ReadInfo(const std::string& segment) {
  auto opened = client::Segment::Open(segment.c_str());
  if (!opened) return std::nullopt;
  auto info = opened->Info();
  if (!info) return std::nullopt;
  return *info;
}

int AgentProcess::MetricsPort() const {
  const std::string marker = "serving metrics at http://127.0.0.1:";
  const std::string log = Log();
  const std::size_t at = log.rfind(marker);
  if (at == std::string::npos) return 0;
  return std::atoi(log.c_str() + at + marker.size());
}

void AgentProcess::Signal(int signal) const { kill(pid_, signal); }

std::optional<int> AgentProcess::WaitExit(std::chrono::milliseconds timeout) {
  if (reaped_) return std::nullopt;
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  for (;;) {
    int status = 0;
    const pid_t done = waitpid(pid_, &status, WNOHANG);
    if (done == pid_) {
      reaped_ = true;
      return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
    }
    if (std::chrono::steady_clock::now() >= deadline) return std::nullopt;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
}

// A fake sysfs/procfs tree that the test edits: the host facts of the
// loopback path come from it.
void MakeFakeRoot(const std::filesystem::path& root) {
  std::filesystem::create_directories(root / "proc/sys/kernel");
  std::filesystem::create_directories(root / "sys/class/net/lo");
  WriteFile(root / "proc/sys/kernel/osrelease", "6.18.0-test\n");
  WriteFile(root / "proc/cpuinfo", "model name\t: Test CPU\n");
  WriteFile(root / "proc/cmdline", "ro quiet\n");
  WriteFile(root / "sys/class/net/lo/mtu", "65536\n");
}

// A fake host whose NIC eth0 is a PCI virtio NIC; `iommu_type` "" puts it
// in no IOMMU group, else in group 7 of that type. Routes are the kernel's,
// not the fake tree's: the tests name eth0 as host_default.interface.
void MakeFakeNic(const std::filesystem::path& root, const std::string& iommu_type) {
  MakeFakeRoot(root);
  namespace fs = std::filesystem;
  const fs::path pci = root / "sys/devices/pci0000:00/0000:00:03.0";
  fs::create_directories(pci / "net/eth0");
  fs::create_directories(root / "sys/bus/pci/drivers/virtio-pci");
  fs::create_directory_symlink("../../../bus/pci/drivers/virtio-pci", pci / "driver");
  fs::create_directory_symlink("../../../bus/pci", pci / "subsystem");
  fs::create_directory_symlink("../../../0000:00:03.0", pci / "net/eth0/device");
  WriteFile(pci / "net/eth0/mtu", "1500\n");
  fs::create_directory_symlink("../../devices/pci0000:00/0000:00:03.0/net/eth0",
                               root / "sys/class/net/eth0");
  if (!iommu_type.empty()) {
    fs::create_directories(root / "sys/kernel/iommu_groups/7");
    WriteFile(root / "sys/kernel/iommu_groups/7/type", iommu_type + "\n");
    fs::create_directory_symlink("../../../kernel/iommu_groups/7", pci / "iommu_group");
  }
}

// A saved state with the discard path's results: republished at start, it
// goes through the host-default rule without waiting for a probe, so the
// branches of the rule are checked end to end whatever this machine measures.
void SaveDiscardState(const std::filesystem::path& path, const std::string& fingerprint) {
  const auto threshold = [](std::uint64_t bytes) {
    return nlohmann::json{{"published",
                           {{"verdict", "threshold"}, {"threshold_bytes", bytes},
                            {"reason", nullptr}, {"confidence", 0.8}}},
                          {"measured_at_ns", 1'700'000'000'000'000'000ULL},
                          {"pending", nullptr}};
  };
  const nlohmann::json state = {
      {"format", "zcal-state"},
      {"version", 1},
      {"saved_at_ns", 1'700'000'000'000'000'000ULL},
      {"fingerprint", fingerprint},
      {"last_success_ns", 1'700'000'000'000'000'000ULL},
      {"host", nlohmann::json::object()},
      {"paths",
       {{"discard",
         {{"msg_zerocopy", threshold(24576)}, {"uring_send_zc_fixed", threshold(8192)}}}}}};
  std::filesystem::create_directories(path.parent_path());
  WriteFile(path, state.dump());
}

}  // namespace zcal::agent::testing
