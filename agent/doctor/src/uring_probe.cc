// Raw system calls on purpose: liburing 2.3 (Debian 12) has no name for
// IORING_SEND_ZC_REPORT_USAGE, and the kernel's <linux/io_uring.h>, which
// has it, cannot be included next to liburing's copy of the same structs.
// A two-entry ring and one request need no more than this.
#include <linux/io_uring.h>
#include <netinet/in.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>
#include <cstddef>
#include <cstdint>
#include <vector>

#include "probes_live.h"
#include "zcal/common/unique_fd.h"

namespace zcal::agent::doctor {

namespace {

constexpr unsigned kProbeOps = 256;

class Mapping {
 public:
  Mapping(int fd, std::size_t bytes, off_t offset)
      : bytes_(bytes),
        base_(::mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_POPULATE, fd,
                     offset)) {}
  ~Mapping() {
    if (ok()) ::munmap(base_, bytes_);
  }
  Mapping(const Mapping&) = delete;
  Mapping& operator=(const Mapping&) = delete;
  bool ok() const { return base_ != MAP_FAILED; }
  template <typename T>
  T* at(std::uint32_t offset) const {
    return reinterpret_cast<T*>(static_cast<char*>(base_) + offset);
  }

 private:
  std::size_t bytes_;
  void* base_;
};

bool Supported(const io_uring_probe& probe, unsigned op) {
  if (op > probe.last_op) return false;
  return (probe.ops[op].flags & IO_URING_OP_SUPPORTED) != 0;
}

// The first completion's result of one SEND_ZC with REPORT_USAGE, or
// nullopt when the ring could not be driven.
std::optional<int> SubmitReportUsage(int ring, const io_uring_params& p) {
  const common::UniqueFd udp(::socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0));
  if (udp.get() < 0) return std::nullopt;
  const Mapping sq(ring, p.sq_off.array + p.sq_entries * sizeof(std::uint32_t),
                   IORING_OFF_SQ_RING);
  const Mapping cq(ring, p.cq_off.cqes + p.cq_entries * sizeof(io_uring_cqe),
                   IORING_OFF_CQ_RING);
  const Mapping sqes(ring, p.sq_entries * sizeof(io_uring_sqe), IORING_OFF_SQES);
  if (!sq.ok() || !cq.ok() || !sqes.ok()) return std::nullopt;

  static char byte = 0;
  io_uring_sqe* sqe = sqes.at<io_uring_sqe>(0);
  *sqe = io_uring_sqe{};
  sqe->opcode = IORING_OP_SEND_ZC;
  sqe->fd = udp.get();
  sqe->addr = reinterpret_cast<std::uintptr_t>(&byte);
  sqe->len = 1;
  sqe->ioprio = IORING_SEND_ZC_REPORT_USAGE;
  sqe->user_data = 1;
  const std::uint32_t tail = __atomic_load_n(sq.at<std::uint32_t>(p.sq_off.tail), __ATOMIC_ACQUIRE);
  const std::uint32_t mask = *sq.at<std::uint32_t>(p.sq_off.ring_mask);
  sq.at<std::uint32_t>(p.sq_off.array)[tail & mask] = 0;
  // The kernel reads the entry once it sees the new tail.
  __atomic_store_n(sq.at<std::uint32_t>(p.sq_off.tail), tail + 1, __ATOMIC_RELEASE);

  long rc = -1;
  do {
    rc = ::syscall(__NR_io_uring_enter, ring, 1, 1, IORING_ENTER_GETEVENTS, nullptr, 0);
  } while (rc < 0 && errno == EINTR);
  if (rc < 0) return std::nullopt;
  const std::uint32_t head = *cq.at<std::uint32_t>(p.cq_off.head);
  const std::uint32_t cq_tail = __atomic_load_n(cq.at<std::uint32_t>(p.cq_off.tail), __ATOMIC_ACQUIRE);
  if (head == cq_tail) return std::nullopt;
  const std::uint32_t cq_mask = *cq.at<std::uint32_t>(p.cq_off.ring_mask);
  return cq.at<io_uring_cqe>(p.cq_off.cqes)[head & cq_mask].res;
}

}  // namespace

UringObservation ProbeUring() {
  UringObservation seen;
  io_uring_params params{};
  const long fd = ::syscall(__NR_io_uring_setup, 2, &params);
  if (fd < 0) {
    seen.setup_errno = errno;
    return seen;
  }
  const common::UniqueFd ring(static_cast<int>(fd));
  std::vector<std::byte> buffer(sizeof(io_uring_probe) + kProbeOps * sizeof(io_uring_probe_op));
  auto* probe = reinterpret_cast<io_uring_probe*>(buffer.data());
  if (::syscall(__NR_io_uring_register, ring.get(), IORING_REGISTER_PROBE, probe, kProbeOps) < 0) {
    return seen;
  }
  seen.send_zc = Supported(*probe, IORING_OP_SEND_ZC);
  seen.sendmsg_zc = Supported(*probe, IORING_OP_SENDMSG_ZC);
  if (seen.send_zc == true) {
    if (const std::optional<int> res = SubmitReportUsage(ring.get(), params)) {
      seen.report_usage = *res != -EINVAL;
    }
  }
  return seen;
}

}  // namespace zcal::agent::doctor
