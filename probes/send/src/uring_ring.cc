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

namespace {

// One run of the send loop: the buffers free and in flight, what was
// counted, and the first failure (which stops the issuing; what is in
// flight is still reaped, so the buffers are never freed under the kernel).
class UringSendLoop {
 public:
  UringSendLoop(Ring& ring, int fd, const BufferPool& pool, UringOp op, const char* name,
                std::uint32_t depth)
      : r_(ring.get()), fd_(fd), pool_(pool), op_(op), name_(name),
        size_(static_cast<unsigned>(pool.buffer_bytes())), zerocopy_(op != UringOp::kSend),
        // At depth D at most D sends (their notifications included) are in
        // flight; at stream, every buffer of the pool.
        limit_(zerocopy_ && depth != calibrator::kStreamDepth ? depth : pool.count()) {
    free_slots_.reserve(pool.count());
    for (std::uint32_t i = pool.count(); i-- > 0;) free_slots_.push_back(i);
  }

  SendResult Run(const StopCondition& stop) {
    const __kernel_timespec slice = ToTimespec(kWaitSlice);
    for (;;) {
      if (!stopping_ && stop.Reached(issued_bytes_)) StopIssuing();
      Issue(stop);
      if (in_flight_ == 0) break;
      io_uring_cqe* cqe = nullptr;
      __kernel_timespec ts = slice;
      // Wait for a batch, but never for so much of the pool that the socket
      // runs dry while we sleep.
      const unsigned wait = std::clamp<unsigned>(in_flight_ / 2, 1, kWaitBatch);
      const int rc = io_uring_submit_and_wait_timeout(r_, &cqe, wait, &ts, nullptr);
      if (rc < 0 && rc != -ETIME && rc != -EINTR && rc != -EAGAIN && rc != -EBUSY) {
        Fail(PeerFailure::kLocalError, Errc::kFailed,
             std::string(name_) + ": io_uring_enter failed with " + common::ErrnoText(-rc));
        break;
      }
      ReapCompletions();
      if (stopping_ && in_flight_ != 0 && Clock::now() > give_up_ && !GiveUpOnThePeer()) break;
    }
    if (failure_) return tl::unexpected(*failure_);
    if (stop.Cancelled()) return FailPeer(PeerFailure::kLocalError, Errc::kFailed, "cancelled");
    return counters_;
  }

 private:
  void StopIssuing() {
    if (stopping_) return;
    stopping_ = true;
    give_up_ = Clock::now() + kDrainTimeout;
  }

  void Fail(PeerFailure kind, Errc code, std::string message) {
    if (!failure_) failure_ = PeerError(kind, code, std::move(message));
    StopIssuing();
  }

  // Queues a send of every free buffer, within the depth.
  void Issue(const StopCondition& stop) {
    while (!stopping_ && !free_slots_.empty() && in_flight_ < limit_) {
      io_uring_sqe* sqe = io_uring_get_sqe(r_);
      if (sqe == nullptr) break;
      const std::uint32_t slot = free_slots_.back();
      free_slots_.pop_back();
      void* data = pool_.buffer(slot);
      // MSG_WAITALL: on TCP the kernel retries a short send itself, as a
      // stream transport needs, instead of completing it partially; a UDP
      // datagram is sent whole or fails, so there it changes nothing.
      switch (op_) {
        case UringOp::kSend:
          io_uring_prep_send(sqe, fd_, data, size_, MSG_WAITALL | MSG_NOSIGNAL);
          break;
        case UringOp::kSendZc:
          io_uring_prep_send_zc(sqe, fd_, data, size_, MSG_WAITALL | MSG_NOSIGNAL,
                                IORING_SEND_ZC_REPORT_USAGE);
          break;
        case UringOp::kSendZcFixed:
          io_uring_prep_send_zc_fixed(sqe, fd_, data, size_, MSG_WAITALL | MSG_NOSIGNAL,
                                      IORING_SEND_ZC_REPORT_USAGE, 0);
          break;
      }
      io_uring_sqe_set_data64(sqe, slot);
      ++in_flight_;
      counters_.max_in_flight = std::max<std::uint64_t>(counters_.max_in_flight, in_flight_);
      issued_bytes_ += size_;
      if (stop.Reached(issued_bytes_)) StopIssuing();
    }
  }

  void ReapCompletions() {
    unsigned head = 0;
    unsigned seen = 0;
    io_uring_cqe* cqe = nullptr;
    io_uring_for_each_cqe(r_, head, cqe) {
      ++seen;
      const auto slot = static_cast<std::uint32_t>(io_uring_cqe_get_data64(cqe));
      if (Released(*cqe)) {
        free_slots_.push_back(slot);
        --in_flight_;
      }
    }
    io_uring_cq_advance(r_, seen);
  }

  // Counts one completion; whether its buffer is free again.
  bool Released(const io_uring_cqe& cqe) {
    if (zerocopy_ && (cqe.flags & IORING_CQE_F_NOTIF) != 0) {
      ++counters_.zc_completions;
      if ((static_cast<std::uint32_t>(cqe.res) & IORING_NOTIF_USAGE_ZC_COPIED) != 0) {
        ++counters_.zc_copied;
      }
      return true;
    }
    if (cqe.res >= 0) {
      counters_.bytes += static_cast<std::uint64_t>(cqe.res);
    } else {
      FailedSend(-cqe.res);
    }
    // With F_MORE a notification follows; the buffer is the kernel's until
    // then.
    return (cqe.flags & IORING_CQE_F_MORE) == 0;
  }

  void FailedSend(int err) {
    if (zerocopy_ && (err == EINVAL || err == EOPNOTSUPP) && counters_.bytes == 0) {
      Fail(PeerFailure::kLocalError, Errc::kUnsupported,
           std::string(name_) + ": the kernel rejected IORING_OP_SEND_ZC with "
               "IORING_SEND_ZC_REPORT_USAGE (" + common::ErrnoText(err) +
               "); it needs Linux 6.2 or later");
    } else if (zerocopy_ && err == ENOMEM) {
      Fail(PeerFailure::kLocalError, Errc::kUnsupported,
           std::string(name_) + ": a send failed with ENOMEM: the kernel charges "
               "the pages of zerocopy sends in flight (" +
               std::to_string(pool_.mapped_bytes() / 1024) +
               " KiB here) to the locked-memory limit (RLIMIT_MEMLOCK " +
               MemlockLimitText() + ", no CAP_IPC_LOCK); raise `ulimit -l` "
               "(LimitMEMLOCK= in systemd) or grant CAP_IPC_LOCK");
    } else if (err != ECANCELED) {
      Fail(SendFailureOf(err), Errc::kFailed,
           std::string(name_) + ": a send completed with " + common::ErrnoText(err));
    }
  }

  // kDrainTimeout after the probe ended, sends are still in flight: the
  // peer stopped reading. Shutting the socket down makes the kernel
  // complete what is queued, so the buffers can be freed safely; returns
  // false once that, too, has had its time.
  bool GiveUpOnThePeer() {
    if (shut_down_) return false;
    ::shutdown(fd_, SHUT_RDWR);
    shut_down_ = true;
    Fail(PeerFailure::kTimeout, Errc::kFailed,
         std::string(name_) + ": " + std::to_string(in_flight_) +
             " sends still in flight 1 s after the probe ended; is the sink still reading "
             "(TCP), or the send buffer draining (UDP)?");
    give_up_ = Clock::now() + kDrainTimeout;
    return true;
  }

  io_uring* r_;
  int fd_;
  const BufferPool& pool_;
  UringOp op_;
  const char* name_;
  unsigned size_;
  bool zerocopy_;
  std::uint32_t limit_;
  std::vector<std::uint32_t> free_slots_;
  SendCounters counters_;
  std::uint64_t issued_bytes_ = 0;
  std::uint32_t in_flight_ = 0;  // buffers not yet released by the kernel
  bool stopping_ = false;
  bool shut_down_ = false;
  Clock::time_point give_up_ = Clock::time_point::max();
  std::optional<PeerError> failure_;
};

}  // namespace

SendResult RunUringSendLoop(Ring& ring, int fd, const BufferPool& pool, UringOp op,
                            const char* name, const StopCondition& stop, std::uint32_t depth) {
  return UringSendLoop(ring, fd, pool, op, name, depth).Run(stop);
}

}  // namespace zcal::probes
