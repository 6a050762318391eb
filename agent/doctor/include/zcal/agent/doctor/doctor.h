// zcal doctor: whether zerocopy send can work and pay on this host, as the
// user that runs it sees it, and what to change. Each check is a function
// over a root directory (the procfs and sysfs tree to read, "/" on a host,
// a fake tree in tests) and the Observations that only the running kernel
// can give (system calls, a child in fresh namespaces, the segment), which
// Observe() gathers once and tests write by hand.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "zcal/agent/domain/agent_state.h"
#include "zcal/agent/report/segment_table.h"
#include "zcal/calibrator/method.h"
#include "zcal/common/result.h"
#include "zcal/probes/host/host_facts.h"
#include "zcal/probes/send/capabilities.h"

namespace zcal::agent::doctor {

/// How a check came out, in increasing order of gravity.
enum class Status : std::uint8_t {
  kOk,    ///< nothing to change
  kWarn,  ///< zerocopy works, but a method, a path or part of its gain is lost
  kFail,  ///< zerocopy, or the agent's answer, does not work until fixed
};
std::string_view StatusName(Status status);  ///< "ok", "warn", "fail"

/// One line of the diagnosis. `check` is a stable dotted name
/// ("io_uring.send_zc", "nic.eth0.iommu"); `fix` is set whenever `status`
/// is not kOk (a command, a setting, or what to run instead).
struct Finding {
  std::string check;
  Status status = Status::kOk;
  std::string detail;  ///< what was found, one sentence
  std::string fix;
};

/// What the checks compare against: the agent's configuration, as
/// cmd_doctor reads it (its defaults are those of configs/default.yaml).
struct DoctorOptions {
  std::string root = "/";  ///< procfs and sysfs are read under it
  std::string segment = "/zcal";
  std::string state_path = "/run/zcal/state.json";
  /// The sizes the agent probes: they set how many sends a probe keeps in
  /// flight (probes::PoolBuffers), hence option memory and pinned pages.
  std::uint64_t min_size_bytes = 1024;
  std::uint64_t max_size_bytes = 256 * 1024;
  std::vector<calibrator::Method> methods = {calibrator::kAllMethods.begin(),
                                             calibrator::kAllMethods.end()};
  /// A heartbeat older than this means the agent is gone or hung (it
  /// beats every segment.heartbeat, 2 s by default). Seconds.
  double max_heartbeat_age_seconds = 30;
};

/// io_uring as the kernel answers this process (ProbeUring).
struct UringObservation {
  int setup_errno = 0;  ///< of io_uring_setup; 0 = a ring was created
  /// Opcodes from IORING_REGISTER_PROBE; nullopt when no ring or no probe
  /// (Linux before 5.6).
  std::optional<bool> send_zc;
  std::optional<bool> sendmsg_zc;
  /// Whether SEND_ZC accepts IORING_SEND_ZC_REPORT_USAGE (Linux 6.2);
  /// nullopt when not asked (no SEND_ZC) or the answer was unclear.
  std::optional<bool> report_usage;
};

/// Namespaces as a child process of this one could create them
/// (ProbeNamespaces); nothing is left behind.
struct NamespaceObservation {
  bool privileged = false;  ///< CAP_SYS_ADMIN: the discard path needs no userns
  /// errno of unshare(CLONE_NEWUSER | CLONE_NEWNET) in a child, 0 when it
  /// worked; nullopt when not tried (privileged, or no child could be made).
  std::optional<int> userns_errno;
  /// errno of unshare(CLONE_NEWNET) when privileged; nullopt otherwise.
  std::optional<int> netns_errno;
  /// net.core.optmem_max read inside the fresh network namespace; nullopt
  /// when none could be made or the kernel has no per-namespace value
  /// (before Linux 6.9 the host's applies): `netns_note` says which.
  std::optional<std::uint64_t> netns_optmem_max;
  /// A new network namespace was made and has no optmem_max of its own.
  bool netns_uses_host_optmem = false;
  std::string netns_note;  ///< why netns_optmem_max is unknown
};

/// The locked-memory limit of this process.
struct MemlockObservation {
  std::optional<std::uint64_t> soft_bytes;  ///< nullopt = unlimited
  bool cap_ipc_lock = false;                ///< exempt from the limit
};

/// What only the running kernel and the agent's files can say.
struct Observations {
  UringObservation uring;
  probes::Support msg_zerocopy;  ///< probes::CheckSupport(kMsgZerocopy)
  NamespaceObservation namespaces;
  MemlockObservation memlock;
  probes::HostFacts host;       ///< probes::CollectHostFacts under root
  std::string egress_interface;  ///< the default route's; "" unknown
  SegmentTable segment;          ///< ReadSegmentTable(options.segment)
  /// LoadState(options.state_path), or why it could not be read.
  Result<AgentState> state = tl::unexpected(Error{Errc::kNotFound, "not read"});
  std::uint64_t now_ns = 0;  ///< CLOCK_REALTIME when observed
};

/// Gathers the observations. Never fails: what cannot be observed is left
/// unknown, and the checks say so. Forks a short-lived child for the
/// namespaces; sends nothing on any network.
Observations Observe(const DoctorOptions& options);

/// The checks, in the order they are printed. Each reads what it needs
/// under options.root and judges `seen`; each returns one line or more.
std::vector<Finding> CheckUring(const DoctorOptions& options, const Observations& seen);
std::vector<Finding> CheckKernel(const DoctorOptions& options, const Observations& seen);
std::vector<Finding> CheckOptionMemory(const DoctorOptions& options, const Observations& seen);
std::vector<Finding> CheckMemlock(const DoctorOptions& options, const Observations& seen);
std::vector<Finding> CheckUserNamespaces(const DoctorOptions& options, const Observations& seen);
std::vector<Finding> CheckNics(const DoctorOptions& options, const Observations& seen);
std::vector<Finding> CheckAgent(const DoctorOptions& options, const Observations& seen);

/// All of the above, in that order.
std::vector<Finding> Diagnose(const DoctorOptions& options, const Observations& seen);

/// The gravest status among `findings` (kOk when empty).
Status Worst(const std::vector<Finding>& findings);

/// {"status": worst, "checks": [{"check", "status", "detail", "fix"}]},
/// "fix" null when status is ok.
nlohmann::json FindingsJson(const std::vector<Finding>& findings);

/// What the agent needs, in bytes, by the rules of docs/operations.md
/// ("zcal doctor"): option memory for the MSG_ZEROCOPY notifications of
/// the deepest probe, and locked memory for the pages of one zerocopy
/// probe (uring_send_zc_fixed registers them all).
std::uint64_t OptionMemoryNeed(const DoctorOptions& options);
std::uint64_t MemlockNeed(const DoctorOptions& options);

/// "6.1.0-27-amd64" -> {6, 1}; nullopt when it does not start so.
struct KernelVersion {
  int major = 0;
  int minor = 0;
  bool AtLeast(int want_major, int want_minor) const {
    return major > want_major || (major == want_major && minor >= want_minor);
  }
};
std::optional<KernelVersion> ParseKernelRelease(std::string_view release);

}  // namespace zcal::agent::doctor
