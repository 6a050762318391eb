#include "zcal/probes/send/capabilities.h"

#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>

#include "uring_ring.h"
#include "zcal/common/unique_fd.h"
#include "zcal/probes/host/sysfs.h"
#include "zcal/probes/send/sender.h"

namespace zcal::probes {

namespace {

using calibrator::Method;

Support No(std::string reason) { return {false, std::move(reason)}; }

Support CheckZerocopySocket() {
  const common::UniqueFd fd(::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0));
  if (!fd) return No("msg_zerocopy: cannot create a TCP socket (" + common::ErrnoText(errno) + ")");
  const int one = 1;
  const int rc = ::setsockopt(fd.get(), SOL_SOCKET, SO_ZEROCOPY, &one, sizeof one);
  const int err = errno;
  if (rc != 0) {
    return No("msg_zerocopy: the socket refused SO_ZEROCOPY (" + common::ErrnoText(err) +
              "); it needs Linux 4.14 or later");
  }
  return {};
}

Support CheckUring(Method method, const CapabilityOptions& options) {
  const std::string name(calibrator::MethodName(method));
  const auto disabled = ReadFirstLine(UnderRoot(options.root, "proc/sys/kernel/io_uring_disabled"));
  if (disabled && *disabled == "2") {
    return No(name + ": io_uring is disabled (kernel.io_uring_disabled = 2); set "
                     "the sysctl to 0 to measure this method");
  }
  auto ring = Ring::Create(4);
  if (!ring) {
    std::string reason = name + ": " + ring.error().message;
    if (disabled && *disabled == "1") {
      reason += " (kernel.io_uring_disabled = 1 allows only the group in "
                "kernel.io_uring_group)";
    }
    return No(std::move(reason));
  }
  io_uring_probe* probe = io_uring_get_probe_ring((*ring)->get());
  if (probe == nullptr) {
    return No(name + ": the kernel cannot list its io_uring operations "
                     "(io_uring_register PROBE failed); it needs Linux 5.6 or later");
  }
  const int op = method == Method::kUringSend ? IORING_OP_SEND : IORING_OP_SEND_ZC;
  const bool supported = io_uring_opcode_supported(probe, op) != 0;
  io_uring_free_probe(probe);
  if (!supported) {
    return No(name + (op == IORING_OP_SEND
                          ? ": the kernel lacks IORING_OP_SEND (Linux 5.6 or later)"
                          : ": the kernel lacks IORING_OP_SEND_ZC (Linux 6.0 or later)"));
  }
  return {};
}

}  // namespace

Support CheckSupport(Method method, const CapabilityOptions& options) {
  switch (method) {
    case Method::kCopy:
      return {};
    case Method::kMsgZerocopy:
      return CheckZerocopySocket();
    case Method::kUringSend:
    case Method::kUringSendZc:
    case Method::kUringSendZcFixed:
      return CheckUring(method, options);
  }
  return No("unknown method");
}

}  // namespace zcal::probes
