#include "netns.h"

#include <fcntl.h>
#include <sched.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <cstdlib>
#include <cstring>
#include <thread>

#include "agent_harness.h"

namespace zcal::agent::testing {

namespace {

constexpr const char* kDnsmasq = "/usr/sbin/dnsmasq";

const std::string& IpBinary() {
  static const std::string path = [] {
    for (const char* p : {"/usr/sbin/ip", "/sbin/ip", "/usr/bin/ip", "/bin/ip"}) {
      if (access(p, X_OK) == 0) return std::string(p);
    }
    return std::string();
  }();
  return path;
}

std::string Joined(const std::vector<std::string>& argv) {
  std::string text;
  for (const std::string& a : argv) text += (text.empty() ? "" : " ") + a;
  return text;
}

// "" when the command exits 0, else the command and what it said.
std::string Run(const std::vector<std::string>& argv) {
  const CommandResult r = RunCommand(argv);
  if (r.status == 0) return {};
  return "`" + Joined(argv) + "` exited " + std::to_string(r.status) + ": " + r.err;
}

std::string Ip(const std::vector<std::string>& args) {
  std::vector<std::string> argv = {IpBinary()};
  argv.insert(argv.end(), args.begin(), args.end());
  return Run(argv);
}

// False for a process that is gone or a zombie (killed, not yet reaped).
bool Running(const std::string& pid) {
  const std::string stat = ReadFile("/proc/" + pid + "/stat");
  const std::size_t end = stat.rfind(')');
  return end != std::string::npos && end + 2 < stat.size() && stat[end + 2] != 'Z';
}

}  // namespace

std::string NetnsUnavailable() {
  if (geteuid() != 0) return "needs root to create network namespaces";
  if (IpBinary().empty()) return "needs iproute2's ip (package iproute2)";
  if (access(kDnsmasq, X_OK) != 0) {
    return std::string("needs ") + kDnsmasq + " (package dnsmasq-base)";
  }
  const std::string probe = "zcf" + std::to_string(getpid()) + "-probe";
  if (const std::string error = Ip({"netns", "add", probe}); !error.empty()) {
    return "cannot create a network namespace: " + error;
  }
  Ip({"netns", "del", probe});
  return {};
}

std::unique_ptr<Child> Child::Start(const std::vector<std::string>& argv,
                                    const std::filesystem::path& log) {
  std::vector<char*> args;
  for (const std::string& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  const pid_t parent = getpid();
  const pid_t pid = fork();
  if (pid == 0) {
    setpgid(0, 0);
    // The test may be killed (a meson timeout) before its destructors run.
    prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (getppid() != parent) _exit(127);
    const int fd = open(log.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    const int null = open("/dev/null", O_RDONLY | O_CLOEXEC);
    dup2(null, 0);
    dup2(fd, 1);
    dup2(fd, 2);
    execv(args[0], args.data());
    _exit(127);
  }
  // Both sides set the group, so that a signal to it right after fork finds it.
  setpgid(pid, pid);
  return std::unique_ptr<Child>(new Child(pid, log));
}

Child::~Child() {
  kill(-pid_, SIGKILL);
  if (!reaped_) {
    kill(pid_, SIGKILL);
    waitpid(pid_, nullptr, 0);
  }
}

std::string Child::Log() const { return ReadFile(log_); }

bool Child::WaitForLog(const std::string& fragment, std::chrono::milliseconds timeout,
                       std::size_t count) const {
  return WaitFor([&] { return CountOf(Log(), fragment) >= count; }, timeout);
}

int Child::MetricsPort() const {
  const std::string marker = "serving metrics at http://127.0.0.1:";
  const std::string log = Log();
  const std::size_t at = log.rfind(marker);
  if (at == std::string::npos) return 0;
  return std::atoi(log.c_str() + at + marker.size());
}

void Child::Signal(int signal) const { kill(pid_, signal); }

std::optional<int> Child::WaitExit(std::chrono::milliseconds timeout) {
  if (reaped_) return std::nullopt;
  std::optional<int> status_out;
  WaitFor(
      [&] {
        int status = 0;
        if (waitpid(pid_, &status, WNOHANG) != pid_) return false;
        reaped_ = true;
        status_out = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
        return true;
      },
      timeout);
  return status_out;
}

std::unique_ptr<Netns> Netns::Create(const std::string& name, std::string* error) {
  *error = testing::Ip({"netns", "add", name});
  if (!error->empty()) return nullptr;
  std::unique_ptr<Netns> ns(new Netns(name));
  *error = ns->Ip({"link", "set", "lo", "up"});
  if (!error->empty()) return nullptr;
  return ns;
}

Netns::~Netns() {
  testing::Ip({"netns", "del", name_});
  std::error_code ec;
  std::filesystem::remove_all("/etc/netns/" + name_, ec);
}

std::vector<std::string> Netns::Exec(const std::vector<std::string>& argv) const {
  std::vector<std::string> out = {IpBinary(), "netns", "exec", name_};
  out.insert(out.end(), argv.begin(), argv.end());
  return out;
}

std::string Netns::Ip(const std::vector<std::string>& args) const {
  std::vector<std::string> argv = {"-n", name_};
  argv.insert(argv.end(), args.begin(), args.end());
  return testing::Ip(argv);
}

void Netns::WriteResolvConf(const std::string& text) const {
  const std::filesystem::path dir = "/etc/netns/" + name_;
  std::filesystem::create_directories(dir);
  WriteFile(dir / "resolv.conf", text);
}

bool Netns::RunInside(const std::function<void()>& fn) const {
  bool entered = false;
  std::thread thread([&] {
    const int fd = open(("/run/netns/" + name_).c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) return;
    entered = setns(fd, CLONE_NEWNET) == 0;
    close(fd);
    if (entered) fn();
  });
  thread.join();
  return entered;
}

std::optional<HttpResponse> Netns::HttpGet(int port, const std::string& target) const {
  std::optional<HttpResponse> response;
  RunInside([&] { response = testing::HttpGet(port, target); });
  return response;
}

BridgedNetwork::~BridgedNetwork() {
  members_.clear();
  hub_.reset();
}

std::string BridgedNetwork::Address(int i) { return "198.18.7." + std::to_string(i); }

std::string BridgedNetwork::Build(int members) {
  static std::atomic<int> networks{0};
  const std::string prefix =
      "zcf" + std::to_string(getpid()) + "-" + std::to_string(networks++) + "-";
  std::string error;
  hub_ = Netns::Create(prefix + "hub", &error);
  if (!hub_) return error;
  for (const auto& step : std::vector<std::vector<std::string>>{
           {"link", "add", "br0", "type", "bridge"},
           {"addr", "add", std::string(kDnsAddress) + "/24", "dev", "br0"},
           {"addr", "add", std::string(kSilentAddress) + "/24", "dev", "br0"},
           {"link", "set", "br0", "up"}}) {
    if (error = hub_->Ip(step); !error.empty()) return error;
  }
  for (int i = 1; i <= members; ++i) {
    auto member = Netns::Create(prefix + std::to_string(i), &error);
    if (!member) return error;
    const std::string veth = "v" + std::to_string(i);
    if (error = hub_->Ip({"link", "add", veth, "type", "veth", "peer", "name", "eth0",
                          "netns", member->name()});
        !error.empty()) {
      return error;
    }
    for (const auto& step : std::vector<std::vector<std::string>>{
             {"link", "set", veth, "master", "br0"}, {"link", "set", veth, "up"}}) {
      if (error = hub_->Ip(step); !error.empty()) return error;
    }
    for (const auto& step : std::vector<std::vector<std::string>>{
             {"addr", "add", Address(i) + "/24", "dev", "eth0"},
             {"link", "set", "eth0", "up"},
             {"route", "add", "default", "via", kDnsAddress}}) {
      if (error = member->Ip(step); !error.empty()) return error;
    }
    members_.push_back(std::move(member));
  }
  return {};
}

std::string BridgedNetwork::SetLink(int i, bool up) const {
  return hub_->Ip({"link", "set", "v" + std::to_string(i), up ? "up" : "down"});
}

std::vector<std::string> DnsmasqArgv(const std::string& listen, const std::string& zone,
                                     const std::vector<std::string>& records,
                                     const std::vector<std::string>& names_without_address) {
  std::vector<std::string> argv = {kDnsmasq,
                                   "--no-daemon",
                                   "--conf-file=/dev/null",
                                   "--no-resolv",
                                   "--no-hosts",
                                   "--pid-file=",
                                   "--user=root",
                                   "--log-facility=-",
                                   "--log-queries",
                                   "--bind-interfaces",
                                   "--listen-address=" + listen,
                                   "--local=/" + zone + "/"};
  for (const std::string& r : records) argv.push_back("--host-record=" + r);
  for (const std::string& n : names_without_address) argv.push_back("--txt-record=" + n + ",x");
  return argv;
}

std::unique_ptr<Child> StartDnsmasq(const Netns& ns, const std::vector<std::string>& argv,
                                    const std::filesystem::path& log, std::string* error) {
  auto dnsmasq = Child::Start(ns.Exec(argv), log);
  // dnsmasq logs "started" once its sockets are bound.
  if (!dnsmasq->WaitForLog("started, version", std::chrono::seconds(10))) {
    *error = "dnsmasq did not start: " + dnsmasq->Log();
    return nullptr;
  }
  return dnsmasq;
}

void SweepLeftoverNamespaces() {
  std::vector<std::string> leftovers;
  for (const char* dir : {"/run/netns", "/etc/netns"}) {
    std::error_code ec;
    for (const auto& entry : std::filesystem::directory_iterator(dir, ec)) {
      const std::string name = entry.path().filename().string();
      // "zcf<PID>-...": std::regex is avoided, GCC 12 warns inside it under ASan.
      const std::size_t dash = name.find('-');
      if (!name.starts_with("zcf") || dash == std::string::npos || dash == 3) continue;
      const std::string pid = name.substr(3, dash - 3);
      if (pid.find_first_not_of("0123456789") != std::string::npos) continue;
      if (!Running(pid)) leftovers.push_back(name);
    }
  }
  for (const std::string& name : leftovers) {
    std::error_code ec;
    if (std::filesystem::exists("/run/netns/" + name, ec)) Ip({"netns", "del", name});
    std::filesystem::remove_all("/etc/netns/" + name, ec);
  }
}

}  // namespace zcal::agent::testing
