// Capability detection: whether a send method can run on this host, decided
// before probing. A method that cannot is a verdict ("unsupported" with a
// reason), not an error.
#pragma once

#include <cstdint>
#include <string>

#include "zcal/calibrator/method.h"

namespace zcal::probes {

struct Support {
  bool supported = true;
  std::string reason;  ///< why not, and what to do; empty when supported
};

struct CapabilityOptions {
  std::string root = "/";  ///< procfs root (reads proc/sys/kernel/...)
};

/// Checks, without sending anything:
///  - msg_zerocopy: a TCP socket accepts SO_ZEROCOPY;
///  - io_uring methods: kernel.io_uring_disabled, then io_uring_setup (which
///    fails with EPERM or ENOSYS when a sysctl or a seccomp filter blocks
///    it), then the opcode (IORING_OP_SEND or IORING_OP_SEND_ZC) through
///    io_uring_get_probe;
///  - copy: always supported.
/// Registered buffers are checked by the probe itself, which knows how many
/// bytes it registers (ENOMEM above the locked-memory limit).
Support CheckSupport(calibrator::Method method,
                     const CapabilityOptions& options = {});

}  // namespace zcal::probes
