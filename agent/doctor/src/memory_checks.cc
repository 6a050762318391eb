// Option memory and locked memory: what a zerocopy send in flight holds.
#include <algorithm>

#include "root_files.h"
#include "zcal/agent/doctor/doctor.h"
#include "zcal/common/units.h"
#include "zcal/probes/send/probe.h"

namespace zcal::agent::doctor {

namespace {

using calibrator::Method;

// Each MSG_ZEROCOPY send in flight holds a notification skb charged to
// the socket's option memory (sock_omalloc): 768 bytes of truesize on
// x86_64 up to Linux 6.2, 896 from 6.3 (a larger small-head cache);
// rounded up. TCP may merge the notifications of adjacent sends, UDP (the
// discard path) never does, so one per send is the need.
constexpr std::uint64_t kNotificationBytes = 1024;
constexpr std::uint64_t kPageBytes = 4096;

bool Uses(const DoctorOptions& options, Method method) {
  return std::find(options.methods.begin(), options.methods.end(), method) !=
         options.methods.end();
}

// The sizes a calibration may probe: powers of two from min to max, and max.
std::vector<std::uint64_t> Sizes(const DoctorOptions& options) {
  std::vector<std::uint64_t> sizes;
  for (std::uint64_t s = std::max<std::uint64_t>(options.min_size_bytes, 1);
       s < options.max_size_bytes; s *= 2) {
    sizes.push_back(s);
  }
  sizes.push_back(std::max<std::uint64_t>(options.max_size_bytes, 1));
  return sizes;
}

std::uint64_t PoolBytes(Method method, std::uint64_t size) {
  const std::uint64_t buffer = (size + kPageBytes - 1) / kPageBytes * kPageBytes;
  return probes::PoolBuffers(method, size) * buffer;
}

// The smallest min_size_bytes whose deepest probe fits `optmem` bytes.
std::uint64_t SmallestSizeWithin(std::uint64_t optmem) {
  const std::uint64_t sends = std::max<std::uint64_t>(optmem / kNotificationBytes, 1);
  return (probes::kZerocopyInFlightBytes + sends - 1) / sends;
}

Finding OptmemAgainst(std::string check, std::string where, std::uint64_t value,
                      std::uint64_t need, const DoctorOptions& options) {
  const std::string have = "net.core.optmem_max " + where + " is " + std::to_string(value) +
                           " bytes; ";
  const std::string wants = "the deepest MSG_ZEROCOPY probe (" +
                            std::to_string(need / kNotificationBytes) + " sends of " +
                            common::FormatSize(options.min_size_bytes) +
                            " in flight) needs " + std::to_string(need);
  if (value >= need) return {std::move(check), Status::kOk, have + wants, ""};
  return {std::move(check), Status::kWarn,
          have + wants + ": sends fail with ENOBUFS and wait for completions, so small "
                         "sizes are measured at a lower depth than configured",
          "sysctl -w net.core.optmem_max=" + std::to_string(need) +
              " (and in /etc/sysctl.d/), or min_size_bytes of at least " +
              common::FormatSize(SmallestSizeWithin(value))};
}

}  // namespace

std::uint64_t OptionMemoryNeed(const DoctorOptions& options) {
  std::uint32_t deepest = 0;
  for (const std::uint64_t size : Sizes(options)) {
    deepest = std::max(deepest, probes::PoolBuffers(Method::kMsgZerocopy, size));
  }
  return deepest * kNotificationBytes;
}

std::uint64_t MemlockNeed(const DoctorOptions& options) {
  std::uint64_t need = 0;
  for (const Method method : options.methods) {
    if (!calibrator::IsZerocopy(method)) continue;
    for (const std::uint64_t size : Sizes(options)) need = std::max(need, PoolBytes(method, size));
  }
  return need;
}

std::vector<Finding> CheckOptionMemory(const DoctorOptions& options, const Observations& seen) {
  if (!Uses(options, Method::kMsgZerocopy)) {
    return {{"optmem", Status::kOk, "msg_zerocopy is not among the configured methods", ""}};
  }
  const std::uint64_t need = OptionMemoryNeed(options);
  std::vector<Finding> out;
  if (const auto host = ReadSysctlNumber(options.root, "net.core.optmem_max")) {
    out.push_back(OptmemAgainst("optmem.host", "of this namespace", *host, need, options));
  } else {
    out.push_back({"optmem.host", Status::kWarn,
                   "net.core.optmem_max is unreadable under " + options.root,
                   "run zcal doctor where /proc/sys is mounted"});
  }
  const NamespaceObservation& ns = seen.namespaces;
  if (ns.netns_optmem_max) {
    out.push_back(OptmemAgainst("optmem.netns", "in a new network namespace (the discard path's)",
                                *ns.netns_optmem_max, need, options));
  } else if (ns.netns_uses_host_optmem) {
    out.push_back({"optmem.netns", Status::kOk, ns.netns_note, ""});
  } else {
    out.push_back({"optmem.netns", Status::kWarn,
                   "not read in a new network namespace: " +
                       (ns.netns_note.empty() ? std::string("not tried") : ns.netns_note),
                   "make a network namespace possible (the userns line)"});
  }
  return out;
}

std::vector<Finding> CheckMemlock(const DoctorOptions& options, const Observations& seen) {
  const MemlockObservation& m = seen.memlock;
  const std::uint64_t need = MemlockNeed(options);
  if (m.cap_ipc_lock) {
    return {{"memlock", Status::kOk, "CAP_IPC_LOCK: pinned pages are not limited", ""}};
  }
  if (!m.soft_bytes) {
    return {{"memlock", Status::kOk, "RLIMIT_MEMLOCK is unlimited", ""}};
  }
  const std::string have = "RLIMIT_MEMLOCK is " + common::FormatSize(*m.soft_bytes) +
                           "; the pages of one zerocopy probe need " +
                           common::FormatSize(need) +
                           " (uring_send_zc_fixed registers them all)";
  if (*m.soft_bytes >= need) return {{"memlock", Status::kOk, have, ""}};
  const std::string fix =
      "raise the limit to at least " + common::FormatSize(need) +
      ": LimitMEMLOCK= in the systemd unit, `ulimit -l` in a shell, --ulimit memlock= "
      "for a container; or grant CAP_IPC_LOCK";
  const std::uint64_t one_send =
      (options.min_size_bytes + kPageBytes - 1) / kPageBytes * kPageBytes;
  if (*m.soft_bytes < one_send) {
    return {{"memlock", Status::kFail,
             have + ": not even one send of the smallest size fits, so every zerocopy "
                    "send fails (ENOBUFS, ENOMEM)",
             fix}};
  }
  return {{"memlock", Status::kWarn,
           have + ": uring_send_zc_fixed cannot register its buffers, and zerocopy sends "
                  "wait for pinned pages at large sizes",
           fix}};
}

}  // namespace zcal::agent::doctor
