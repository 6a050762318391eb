// The observations that only the running kernel gives (doctor.h,
// Observations), one function each.
#pragma once

#include <string_view>

#include "zcal/agent/doctor/doctor.h"

namespace zcal::agent::doctor {

/// Creates a two-entry ring, lists its opcodes and asks whether SEND_ZC
/// takes IORING_SEND_ZC_REPORT_USAGE by submitting one on an unconnected
/// UDP socket: the kernel checks the flags before it looks at the socket,
/// so EINVAL means no, and the send itself fails (no destination): nothing
/// leaves the host.
UringObservation ProbeUring();

/// Forks a child that creates the namespaces the discard path needs and
/// reads net.core.optmem_max inside the new network namespace.
NamespaceObservation ProbeNamespaces(std::string_view root);

/// RLIMIT_MEMLOCK, and CAP_IPC_LOCK from ROOT/proc/self/status.
MemlockObservation ProbeMemlock(std::string_view root);

/// Whether CapEff of ROOT/proc/self/status holds capability `bit`.
bool HasCapability(std::string_view root, int bit);

}  // namespace zcal::agent::doctor
