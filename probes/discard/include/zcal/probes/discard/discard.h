// The discard path: connected UDP datagrams to 127.0.0.2 inside a private
// network namespace whose `lo` has a `blackhole` root qdisc. Datagrams are
// freed in the qdisc before any device or receiver touches them, so the
// kernel never copies a zerocopy send: what this path measures is the
// sender's own cost (copying against pinning, notification, unpinning),
// without NIC DMA, IOMMU or receiver. Nothing changes in the host's
// namespace and nothing leaves the host.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "zcal/calibrator/sample.h"
#include "zcal/common/result.h"
#include "zcal/common/unique_fd.h"
#include "zcal/probes/send/probe.h"
#include "zcal/probes/send/probe_runner.h"
#include "zcal/probes/types/target.h"

namespace zcal::probes {

/// The largest UDP payload over IPv4: 65,535 - 20 (IP) - 8 (UDP) bytes.
inline constexpr std::uint64_t kMaxUdpPayloadBytes =
    TraitsOf(TargetKind::kDiscard).max_message_bytes;
static_assert(kMaxUdpPayloadBytes == 65535 - 20 - 8);
/// Where the discard path's datagrams go (any 127/8 address but the
/// namespace's own 127.0.0.1 would do) and the port (the discard service).
inline constexpr const char* kDiscardAddress = "127.0.0.2";
inline constexpr std::uint16_t kDiscardPort = 9;
/// Sockets the namespace's helper hands over per request.
inline constexpr int kSocketBatch = 16;

struct DiscardNamespaceOptions {
  /// The root qdisc installed on lo. Only tests change it, to a kind the
  /// kernel does not know, to reach the missing-qdisc path.
  std::string qdisc = "blackhole";
  /// procfs root for the facts named when the namespace cannot be created
  /// (CapEff, kernel.unprivileged_userns_clone, user.max_user_namespaces).
  std::string root = "/";
};

/// A private network namespace for the discard path, held by a helper
/// process (forked from the caller) that created it and that hands out
/// UDP sockets of it; the caller's threads stay in their namespace and
/// send on those sockets. The namespace is gone once the object is
/// destroyed and every socket it handed out is closed.
///
/// Thread safety: ConnectUdp may be called from any thread. The helper is
/// killed when the thread that called Create exits (PR_SET_PDEATHSIG), so
/// keep the object on that thread's lifetime.
class DiscardNamespace {
 public:
  /// Creates the namespace as root / with CAP_SYS_ADMIN
  /// (unshare(CLONE_NEWNET)), or else in an unprivileged user namespace
  /// (CLONE_NEWUSER | CLONE_NEWNET) where the kernel allows it; brings lo
  /// up and installs the qdisc through rtnetlink. Errors:
  /// Errc::kUnsupported when no namespace can be created or the kernel
  /// lacks the qdisc, with a sentence naming what is missing and how to
  /// grant it; Errc::kFailed otherwise (fork, socketpair, netlink errors).
  static Result<std::unique_ptr<DiscardNamespace>> Create(
      const DiscardNamespaceOptions& options = {});

  /// Kills and reaps the helper.
  ~DiscardNamespace();
  DiscardNamespace(const DiscardNamespace&) = delete;
  DiscardNamespace& operator=(const DiscardNamespace&) = delete;

  /// A new blocking UDP socket of the namespace (close-on-exec), connected
  /// to kDiscardAddress:kDiscardPort. The helper makes them kSocketBatch at
  /// a time, so that a probe rarely waits for the helper to be scheduled
  /// (on a loaded host a round trip took up to 1.5 ms). Errc::kFailed when
  /// the helper is gone and none is left, or the socket cannot be made.
  Result<common::UniqueFd> ConnectUdp();

  /// True when the namespace lives in an unprivileged user namespace
  /// (the caller lacked CAP_SYS_ADMIN or unshare(CLONE_NEWNET) was refused).
  bool in_user_namespace() const { return in_user_namespace_; }

  /// The helper process (for tests that check it is gone afterwards).
  pid_t helper_pid() const { return helper_; }

 private:
  DiscardNamespace(pid_t helper, common::UniqueFd control, bool in_user_namespace);

  // Asks the helper for kSocketBatch sockets; with mutex_ held.
  Result<void> Restock(const std::string& where);

  pid_t helper_;
  common::UniqueFd control_;
  bool in_user_namespace_;
  std::mutex mutex_;  // one request on the control socket at a time; stock_
  std::vector<common::UniqueFd> stock_;  // unconnected sockets of the namespace
};

/// Runs one probe on the discard path (options.sink is ignored): the
/// method sends datagrams of options.size_bytes (1 to kMaxUdpPayloadBytes)
/// on a fresh socket from `discard`. Otherwise as RunProbe.
calibrator::Sample RunDiscardProbe(DiscardNamespace& discard,
                                   const ProbeOptions& options);

/// RunDiscardProbe with how a failed probe failed, its buffers from
/// `arena` when given.
ProbeOutcome DiscardProbeOn(DiscardNamespace& discard, const ProbeOptions& options,
                            BufferArena* arena = nullptr);

}  // namespace zcal::probes
