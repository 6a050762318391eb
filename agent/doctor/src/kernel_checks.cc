// Kernel releases that move the answer, so that a reader sees why a result
// differs from another kernel's.
#include <charconv>
#include <filesystem>
#include <system_error>

#include "root_files.h"
#include "zcal/agent/doctor/doctor.h"

namespace zcal::agent::doctor {

namespace {

// An interface whose sysfs entry lies under devices/virtual (veth, bridge)
// has no device: in a container it is the pod's end of a veth pair.
bool IsVirtual(const DoctorOptions& options, const std::string& interface) {
  std::error_code ec;
  const std::filesystem::path target = std::filesystem::read_symlink(
      UnderRoot(options.root, "sys/class/net/" + interface), ec);
  return !ec && target.string().find("/virtual/") != std::string::npos;
}

Finding Stacking(const KernelVersion& v, const std::string& release) {
  if (v.AtLeast(6, 10)) {
    return {"kernel.send_zc_stacking", Status::kOk,
            "Linux " + release + " stacks the notifications of consecutive SEND_ZC requests",
            ""};
  }
  return {"kernel.send_zc_stacking", Status::kWarn,
          "Linux " + release + " posts one notification per SEND_ZC request; from Linux "
              "6.10 consecutive ones stack, so the io_uring zerocopy thresholds are "
              "higher here than on 6.10 or later",
          "compare thresholds only among hosts of one kernel series; Linux 6.10 or later "
          "lowers the io_uring zerocopy thresholds"};
}

Finding Forwarding(const DoctorOptions& options, const Observations& seen,
                   const KernelVersion& v, const std::string& release) {
  if (v.AtLeast(6, 17)) {
    return {"kernel.zerocopy_forwarding", Status::kOk,
            "Linux " + release + " keeps MSG_ZEROCOPY through forwarding (veth, a pod's "
                "traffic)",
            ""};
  }
  const std::string& egress = seen.egress_interface;
  if (!egress.empty() && egress != "lo" && IsVirtual(options, egress)) {
    return {"kernel.zerocopy_forwarding", Status::kWarn,
            "traffic leaves through " + egress + ", a virtual interface (a container's "
                "veth); before Linux 6.17 the kernel copies zerocopy sends forwarded "
                "through it, so peers measure kernel_copied",
            "run the agent in the host's network namespace (hostNetwork: true), or use "
            "Linux 6.17 or later"};
  }
  return {"kernel.zerocopy_forwarding", Status::kOk,
          "Linux " + release + " copies MSG_ZEROCOPY sends forwarded through veth (before "
              "6.17), which does not apply here: traffic leaves through " +
              (egress.empty() ? std::string("no default route") : egress),
          ""};
}

}  // namespace

std::optional<KernelVersion> ParseKernelRelease(std::string_view release) {
  KernelVersion v;
  const char* end = release.data() + release.size();
  auto [p, ec] = std::from_chars(release.data(), end, v.major);
  if (ec != std::errc() || p == end || *p != '.') return std::nullopt;
  auto [q, ec2] = std::from_chars(p + 1, end, v.minor);
  if (ec2 != std::errc() || q == p + 1) return std::nullopt;
  return v;
}

std::vector<Finding> CheckKernel(const DoctorOptions& options, const Observations& seen) {
  const std::string& release = seen.host.kernel_release;
  const std::optional<KernelVersion> v = ParseKernelRelease(release);
  if (!v) {
    return {{"kernel", Status::kWarn,
             "the kernel release '" + release + "' (proc/sys/kernel/osrelease under " +
                 options.root + ") is unreadable",
             "run zcal doctor where /proc is mounted"}};
  }
  return {Stacking(*v, release), Forwarding(options, seen, *v, release)};
}

}  // namespace zcal::agent::doctor
