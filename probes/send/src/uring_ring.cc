#include "uring_ring.h"

#include <sys/socket.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <optional>
#include <vector>

namespace zcal::probes {

namespace {

using Clock = std::chrono::steady_clock;

// Requests handed to the kernel per io_uring_enter at most before waiting:
// high-performance senders submit several SQEs per call; 8 is what the
// issue's yardstick sender used.
constexpr unsigned kWaitBatch = 8;

__kernel_timespec ToTimespec(std::chrono::milliseconds ms) {
  __kernel_timespec ts{};
  ts.tv_sec = ms.count() / 1000;
  ts.tv_nsec = (ms.count() % 1000) * 1000000;
  return ts;
}

}  // namespace

std::string UringSetupFailure(int err) {
  std::string text = "io_uring_setup failed with " + common::ErrnoText(err);
  if (err == EPERM || err == ENOSYS) {
    text += ": io_uring is blocked here (a seccomp filter, as container "
            "runtimes install, or the sysctl kernel.io_uring_disabled); allow "
            "the io_uring syscalls to measure this method";
  } else if (err == ENOMEM) {
    text += ": not enough memory for the ring";
  }
  return text;
}

Result<std::unique_ptr<Ring>> Ring::Create(unsigned entries) {
  std::unique_ptr<Ring> ring(new Ring());
  io_uring_params params{};
  // Newest flags first; older kernels reject them with EINVAL.
  const unsigned flag_sets[] = {
      IORING_SETUP_SINGLE_ISSUER | IORING_SETUP_DEFER_TASKRUN,
      IORING_SETUP_COOP_TASKRUN,
      0,
  };
  int rc = -EINVAL;
  for (unsigned flags : flag_sets) {
    params = {};
    params.flags = flags | IORING_SETUP_CQSIZE;
    params.cq_entries = entries * 2;
    rc = io_uring_queue_init_params(entries, &ring->ring_, &params);
    if (rc != -EINVAL) break;
  }
  if (rc < 0) {
    ring.release();  // never initialised: nothing to tear down
    const int err = -rc;
    return Fail(err == EPERM || err == ENOSYS ? Errc::kUnsupported : Errc::kFailed,
                UringSetupFailure(err));
  }
  // Saves the fd lookup on every io_uring_enter; optional (Linux 5.18).
  (void)io_uring_register_ring_fd(&ring->ring_);
  return ring;
}

Ring::~Ring() { io_uring_queue_exit(&ring_); }

SendResult RunUringSendLoop(Ring& ring, int fd, const BufferPool& pool, UringOp op,
                            const char* name, const StopCondition& stop, std::uint32_t depth) {
  io_uring* r = ring.get();
  const auto size = static_cast<unsigned>(pool.buffer_bytes());
  const bool zerocopy = op != UringOp::kSend;
  // At depth D at most D sends (their notifications included) are in
  // flight; at stream, every buffer of the pool.
  const std::uint32_t limit =
      zerocopy && depth != calibrator::kStreamDepth ? depth : pool.count();
  std::vector<std::uint32_t> free_slots;
  free_slots.reserve(pool.count());
  for (std::uint32_t i = pool.count(); i-- > 0;) free_slots.push_back(i);

  SendCounters counters;
  std::uint64_t issued_bytes = 0;
  std::uint32_t in_flight = 0;  // buffers not yet released by the kernel
  bool stopping = false;
  bool shut_down = false;
  Clock::time_point give_up = Clock::time_point::max();
  std::optional<PeerError> failure;
  const __kernel_timespec slice = ToTimespec(kWaitSlice);

  auto stop_issuing = [&] {
    if (stopping) return;
    stopping = true;
    give_up = Clock::now() + kDrainTimeout;
  };
  auto fail = [&](PeerFailure kind, Errc code, std::string message) {
    if (!failure) failure = PeerError(kind, code, std::move(message));
    stop_issuing();
  };

  for (;;) {
    if (!stopping && stop.Reached(issued_bytes)) stop_issuing();
    while (!stopping && !free_slots.empty() && in_flight < limit) {
      io_uring_sqe* sqe = io_uring_get_sqe(r);
      if (sqe == nullptr) break;
      const std::uint32_t slot = free_slots.back();
      free_slots.pop_back();
      void* data = pool.buffer(slot);
      // MSG_WAITALL: on TCP the kernel retries a short send itself, as a
      // stream transport needs, instead of completing it partially; a UDP
      // datagram is sent whole or fails, so there it changes nothing.
      switch (op) {
        case UringOp::kSend:
          io_uring_prep_send(sqe, fd, data, size, MSG_WAITALL | MSG_NOSIGNAL);
          break;
        case UringOp::kSendZc:
          io_uring_prep_send_zc(sqe, fd, data, size, MSG_WAITALL | MSG_NOSIGNAL,
                                IORING_SEND_ZC_REPORT_USAGE);
          break;
        case UringOp::kSendZcFixed:
          io_uring_prep_send_zc_fixed(sqe, fd, data, size,
                                      MSG_WAITALL | MSG_NOSIGNAL,
                                      IORING_SEND_ZC_REPORT_USAGE, 0);
          break;
      }
      io_uring_sqe_set_data64(sqe, slot);
      ++in_flight;
      counters.max_in_flight = std::max<std::uint64_t>(counters.max_in_flight, in_flight);
      issued_bytes += size;
      if (stop.Reached(issued_bytes)) stop_issuing();
    }
    if (in_flight == 0) break;

    io_uring_cqe* cqe = nullptr;
    __kernel_timespec ts = slice;
    // Wait for a batch, but never for so much of the pool that the socket
    // runs dry while we sleep.
    const unsigned wait = std::clamp<unsigned>(in_flight / 2, 1, kWaitBatch);
    const int rc = io_uring_submit_and_wait_timeout(r, &cqe, wait, &ts, nullptr);
    if (rc < 0 && rc != -ETIME && rc != -EINTR && rc != -EAGAIN && rc != -EBUSY) {
      fail(PeerFailure::kLocalError, Errc::kFailed, std::string(name) + ": io_uring_enter failed with " +
                              common::ErrnoText(-rc));
      break;
    }

    unsigned head = 0;
    unsigned seen = 0;
    io_uring_for_each_cqe(r, head, cqe) {
      ++seen;
      const auto slot = static_cast<std::uint32_t>(io_uring_cqe_get_data64(cqe));
      bool released = true;
      if (zerocopy && (cqe->flags & IORING_CQE_F_NOTIF) != 0) {
        ++counters.zc_completions;
        if ((static_cast<std::uint32_t>(cqe->res) & IORING_NOTIF_USAGE_ZC_COPIED) != 0) {
          ++counters.zc_copied;
        }
      } else {
        if (cqe->res >= 0) {
          counters.bytes += static_cast<std::uint64_t>(cqe->res);
        } else if (zerocopy && (cqe->res == -EINVAL || cqe->res == -EOPNOTSUPP) &&
                   counters.bytes == 0) {
          fail(PeerFailure::kLocalError, Errc::kUnsupported,
               std::string(name) + ": the kernel rejected IORING_OP_SEND_ZC with "
                   "IORING_SEND_ZC_REPORT_USAGE (" + common::ErrnoText(-cqe->res) +
                   "); it needs Linux 6.2 or later");
        } else if (zerocopy && cqe->res == -ENOMEM) {
          fail(PeerFailure::kLocalError, Errc::kUnsupported,
               std::string(name) + ": a send failed with ENOMEM: the kernel charges "
                   "the pages of zerocopy sends in flight (" +
                   std::to_string(pool.mapped_bytes() / 1024) +
                   " KiB here) to the locked-memory limit (RLIMIT_MEMLOCK " +
                   MemlockLimitText() + ", no CAP_IPC_LOCK); raise `ulimit -l` "
                   "(LimitMEMLOCK= in systemd) or grant CAP_IPC_LOCK");
        } else if (cqe->res != -ECANCELED) {
          fail(SendFailureOf(-cqe->res), Errc::kFailed,
               std::string(name) + ": a send completed with " + common::ErrnoText(-cqe->res));
        }
        // With F_MORE a notification follows; the buffer is the kernel's
        // until then.
        released = (cqe->flags & IORING_CQE_F_MORE) == 0;
      }
      if (released) {
        free_slots.push_back(slot);
        --in_flight;
      }
    }
    io_uring_cq_advance(r, seen);

    if (stopping && in_flight != 0 && Clock::now() > give_up) {
      if (shut_down) break;
      // The peer stopped reading: shutting the socket down makes the kernel
      // complete what is queued, so the buffers can be freed safely.
      ::shutdown(fd, SHUT_RDWR);
      shut_down = true;
      fail(PeerFailure::kTimeout, Errc::kFailed, std::string(name) + ": " + std::to_string(in_flight) +
                              " sends still in flight 1 s after the probe ended; "
                              "is the sink still reading (TCP), or the send buffer "
                              "draining (UDP)?");
      give_up = Clock::now() + kDrainTimeout;
    }
  }
  if (failure) return tl::unexpected(*failure);
  if (stop.Cancelled()) return FailPeer(PeerFailure::kLocalError, Errc::kFailed, "cancelled");
  return counters;
}

}  // namespace zcal::probes
