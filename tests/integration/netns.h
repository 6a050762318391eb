// Network namespaces for integration tests that need several hosts: named
// namespaces (`ip netns`), a bridge joining them, child processes started
// inside them, and code run inside them from this process. Everything is
// removed when its owner is destroyed, also when a test fails; namespaces a
// killed test process left behind are swept by the next one.
//
// Addresses come from the benchmarking range 198.18.0.0/15 and exist only in
// the namespaces a test creates. Needs root (CAP_SYS_ADMIN, CAP_NET_ADMIN)
// and iproute2; NetnsUnavailable says why a test must skip.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <filesystem>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "test_util.h"

namespace zcal::agent::testing {

/// "" when this process can create network namespaces and run dnsmasq;
/// otherwise why not, for GTEST_SKIP.
std::string NetnsUnavailable();

/// A program started in a process group of its own, stdout and stderr to a
/// log file. It gets SIGKILL when the test process dies first
/// (PR_SET_PDEATHSIG), and its whole group gets SIGKILL when this object is
/// destroyed.
class Child {
 public:
  /// argv[0] is a path. Never null; a program that cannot be executed
  /// exits 127.
  static std::unique_ptr<Child> Start(const std::vector<std::string>& argv,
                                      const std::filesystem::path& log);
  ~Child();
  Child(const Child&) = delete;
  Child& operator=(const Child&) = delete;

  pid_t pid() const { return pid_; }
  std::string Log() const;
  /// Waits until the log holds `fragment` at least `count` times.
  bool WaitForLog(const std::string& fragment, std::chrono::milliseconds timeout,
                  std::size_t count = 1) const;
  /// The port from the last "serving metrics at http://127.0.0.1:PORT"
  /// line of a zcal agent's log; 0 before there is one.
  int MetricsPort() const;
  void Signal(int signal) const;  ///< to the process, not its group
  /// The exit status (or 128 + signal) once it exits within `timeout`.
  std::optional<int> WaitExit(std::chrono::milliseconds timeout);

 private:
  Child(pid_t pid, std::filesystem::path log) : pid_(pid), log_(std::move(log)) {}
  pid_t pid_;
  std::filesystem::path log_;
  bool reaped_ = false;
};

/// One named network namespace, deleted with /etc/netns/NAME when
/// destroyed. Its loopback is up.
class Netns {
 public:
  /// `ip netns add NAME`; null with *error set when that fails.
  static std::unique_ptr<Netns> Create(const std::string& name, std::string* error);
  ~Netns();
  Netns(const Netns&) = delete;
  Netns& operator=(const Netns&) = delete;

  const std::string& name() const { return name_; }
  /// `ip netns exec NAME ARGV...`: ip execs ARGV in place (same pid) in
  /// this namespace, with /etc/netns/NAME/* bind-mounted over /etc/*.
  std::vector<std::string> Exec(const std::vector<std::string>& argv) const;
  /// Runs `ip -n NAME ARGS...`; "" on success, else the command and its
  /// stderr.
  std::string Ip(const std::vector<std::string>& args) const;
  /// Writes /etc/netns/NAME/resolv.conf. The file keeps its inode, so
  /// programs already started see the new text (glibc re-reads it when its
  /// modification time changes).
  void WriteResolvConf(const std::string& text) const;
  /// Runs `fn` on a thread that entered this namespace (setns(2) changes
  /// the calling thread only): sockets `fn` creates belong to it and may be
  /// used from any thread afterwards. False when the namespace cannot be
  /// entered.
  bool RunInside(const std::function<void()>& fn) const;
  /// test_util's HttpGet to 127.0.0.1:PORT of this namespace.
  std::optional<HttpResponse> HttpGet(int port, const std::string& target) const;

 private:
  explicit Netns(std::string name) : name_(std::move(name)) {}
  std::string name_;
};

/// `members` namespaces on one Linux bridge: a hub namespace holds bridge
/// br0 (addresses kDnsAddress and kSilentAddress), and member i (1-based)
/// has eth0 with Address(i)/24, a veth whose other end, "v<i>", is a port
/// of the bridge, and its default route through the hub (which forwards
/// nothing: the hub has no other link), so that eth0 is the NIC of the
/// default route as on a real host. Names are "zcf<PID>-<N>-hub" and "zcf<PID>-<N>-<i>", N
/// counting the networks of this process.
class BridgedNetwork {
 public:
  static constexpr const char* kDnsAddress = "198.18.7.100";
  /// An address of the hub on which nothing listens.
  static constexpr const char* kSilentAddress = "198.18.7.101";

  BridgedNetwork() = default;
  ~BridgedNetwork();  ///< members first, then the hub
  BridgedNetwork(const BridgedNetwork&) = delete;
  BridgedNetwork& operator=(const BridgedNetwork&) = delete;

  /// Creates the hub and `members` (1-99) members; "" or what failed.
  /// What was created before a failure is removed by the destructor.
  std::string Build(int members);

  const Netns& hub() const { return *hub_; }
  const Netns& member(int i) const { return *members_.at(static_cast<std::size_t>(i - 1)); }
  int size() const { return static_cast<int>(members_.size()); }
  /// "198.18.7.I".
  static std::string Address(int i);
  /// Sets the bridge's end of member i's veth up or down ("" or why not);
  /// down, member i is cut off while its own eth0 stays up.
  std::string SetLink(int i, bool up) const;

 private:
  std::unique_ptr<Netns> hub_;
  std::vector<std::unique_ptr<Netns>> members_;
};

/// dnsmasq's arguments to answer for zone `zone` from local data only
/// (NXDOMAIN for a name it does not hold) on `listen`:53, without reading
/// any file of the host. Each of `records` is "NAME,ADDR" (a host record;
/// repeat a name for several addresses); each of `names_without_address`
/// exists (a TXT record) without an A or AAAA record.
std::vector<std::string> DnsmasqArgv(const std::string& listen, const std::string& zone,
                                     const std::vector<std::string>& records,
                                     const std::vector<std::string>& names_without_address);

/// Starts dnsmasq in `ns` with `argv` (DnsmasqArgv) and waits until it
/// answers; null with *error (including its log) when it does not.
std::unique_ptr<Child> StartDnsmasq(const Netns& ns, const std::vector<std::string>& argv,
                                    const std::filesystem::path& log, std::string* error);

/// Removes namespaces (and /etc/netns dirs) named "zcf<PID>-..." whose
/// process no longer runs: what a test killed by a timeout left behind.
void SweepLeftoverNamespaces();

}  // namespace zcal::agent::testing
