// io_uring and MSG_ZEROCOPY: can a zerocopy send be issued at all.
#include <cerrno>

#include "root_files.h"
#include "zcal/agent/doctor/doctor.h"
#include "zcal/common/errno_text.h"

namespace zcal::agent::doctor {

namespace {

bool UringUsable(const Observations& seen) { return seen.uring.setup_errno == 0; }

Finding UringAllowed(const DoctorOptions& options, const Observations& seen) {
  const std::optional<std::string> disabled = ReadSysctl(options.root, "kernel.io_uring_disabled");
  const std::string sysctl =
      "kernel.io_uring_disabled = " + (disabled ? *disabled : std::string("absent"));
  const int err = seen.uring.setup_errno;
  if (err == 0) return {"io_uring", Status::kOk, "io_uring_setup works (" + sysctl + ")", ""};

  Finding f{"io_uring", Status::kWarn,
            "io_uring_setup fails with " + common::ErrnoText(err) + " (" + sysctl +
                "): the methods uring_send, uring_send_zc and uring_send_zc_fixed are "
                "unsupported, msg_zerocopy is still measured",
            ""};
  if (err == EPERM && disabled == "2") {
    f.fix = "io_uring is off for everyone: `sysctl -w kernel.io_uring_disabled=0` "
            "(and in /etc/sysctl.d/)";
  } else if (err == EPERM && disabled == "1") {
    const std::optional<std::string> group = ReadSysctl(options.root, "kernel.io_uring_group");
    f.fix = "io_uring is allowed to root and the group kernel.io_uring_group (" +
            (group ? *group : std::string("unset")) +
            ") only: add the agent's user to that group, or set "
            "kernel.io_uring_disabled=0";
  } else if (err == EPERM) {
    f.fix = "a seccomp filter refuses io_uring_setup (EPERM), as container runtimes' "
            "default profiles do: allow io_uring_setup, io_uring_enter and "
            "io_uring_register in the profile (in Kubernetes, a Localhost seccompProfile "
            "that allows them)";
  } else if (err == ENOSYS) {
    f.fix = "io_uring_setup is unknown (ENOSYS): either the kernel is built without "
            "CONFIG_IO_URING or a seccomp filter answers ENOSYS; use a kernel with "
            "io_uring (Linux 6.0+ for SEND_ZC), or allow the io_uring system calls in the "
            "seccomp profile";
  } else if (err == ENOMEM) {
    f.fix = "not enough locked memory for a ring: raise RLIMIT_MEMLOCK (see memlock)";
  } else {
    f.fix = "see io_uring_setup(2) for " + common::ErrnoText(err);
  }
  return f;
}

Finding Opcodes(const Observations& seen) {
  const UringObservation& u = seen.uring;
  if (!UringUsable(seen)) {
    return {"io_uring.send_zc", Status::kWarn, "not asked: no io_uring ring could be created",
            "make io_uring usable (the io_uring line)"};
  }
  if (!u.send_zc || !u.sendmsg_zc) {
    return {"io_uring.send_zc", Status::kWarn,
            "the kernel cannot list its io_uring operations (IORING_REGISTER_PROBE, Linux 5.6)",
            "use Linux 6.0 or later for IORING_OP_SEND_ZC"};
  }
  if (!*u.send_zc) {
    return {"io_uring.send_zc", Status::kWarn,
            "the kernel lacks IORING_OP_SEND_ZC (Linux 6.0): uring_send_zc and "
            "uring_send_zc_fixed are unsupported",
            "use Linux 6.0 or later (6.2 for REPORT_USAGE)"};
  }
  if (!*u.sendmsg_zc) {
    return {"io_uring.send_zc", Status::kWarn,
            "IORING_OP_SEND_ZC is supported, IORING_OP_SENDMSG_ZC (Linux 6.1) is not: "
            "transports that send with sendmsg cannot use io_uring zerocopy",
            "use Linux 6.1 or later"};
  }
  return {"io_uring.send_zc", Status::kOk,
          "IORING_OP_SEND_ZC and IORING_OP_SENDMSG_ZC are supported", ""};
}

Finding ReportUsage(const Observations& seen) {
  const std::optional<bool>& usage = seen.uring.report_usage;
  if (!usage) {
    return {"io_uring.report_usage", Status::kWarn,
            "not asked: no IORING_OP_SEND_ZC, or its answer was unclear",
            "make IORING_OP_SEND_ZC usable (the io_uring.send_zc line)"};
  }
  if (!*usage) {
    return {"io_uring.report_usage", Status::kWarn,
            "SEND_ZC refuses IORING_SEND_ZC_REPORT_USAGE (Linux 6.2): zcal cannot tell "
            "the sends the kernel copied, and does not probe the io_uring zerocopy "
            "methods",
            "use Linux 6.2 or later"};
  }
  return {"io_uring.report_usage", Status::kOk,
          "SEND_ZC accepts IORING_SEND_ZC_REPORT_USAGE: copied sends are counted", ""};
}

Finding MsgZerocopy(const Observations& seen) {
  if (seen.msg_zerocopy.supported) {
    return {"msg_zerocopy", Status::kOk, "TCP sockets accept SO_ZEROCOPY", ""};
  }
  // With io_uring's SEND_ZC there is still a zerocopy send; without, none.
  const bool other = UringUsable(seen) && seen.uring.send_zc == true;
  return {"msg_zerocopy", other ? Status::kWarn : Status::kFail,
          seen.msg_zerocopy.reason +
              (other ? "" : "; with io_uring's SEND_ZC unusable too, no zerocopy send works here"),
          "use Linux 4.14 or later, and check that no seccomp filter or LSM refuses "
          "setsockopt(SO_ZEROCOPY)"};
}

}  // namespace

std::vector<Finding> CheckUring(const DoctorOptions& options, const Observations& seen) {
  return {MsgZerocopy(seen), UringAllowed(options, seen), Opcodes(seen), ReportUsage(seen)};
}

}  // namespace zcal::agent::doctor
