#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/time.h>
// After <sys/time.h>: it uses struct timespec without including it.
#include <linux/errqueue.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <deque>
#include <thread>
#include <vector>

#include "zcal/probes/send/sender.h"

namespace zcal::probes {

namespace {

using Clock = std::chrono::steady_clock;

// Each successful send(MSG_ZEROCOPY) call gets the next 32-bit id; the kernel
// reports completions as ranges of ids [ee_info, ee_data], possibly merged.
// TCP and UDP alike: the notifications arrive on the error queue as
// IP_RECVERR / IPV6_RECVERR control messages whether or not the socket set
// IP_RECVERR (which, on UDP, would add ICMP errors to the queue: nothing
// this path expects, and reported as an error if it came).
class MsgZerocopySender final : public Sender {
 public:
  MsgZerocopySender(int fd, const BufferPool& pool, std::uint32_t depth)
      : fd_(fd), pool_(pool), depth_(depth), pending_(pool.count(), 0) {}

  SendResult Run(const StopCondition& stop) override {
    std::uint32_t slot = 0;
    std::uint64_t offset = 0;
    auto stalled_since = Clock::time_point::max();
    while (!stop.Reached(counters_.bytes)) {
      if (depth_ != calibrator::kStreamDepth && outstanding_ >= depth_) {
        // At depth D the connection has D sends in flight at most (the rest
        // of a message TCP took in part is a send of its own): block for a
        // completion as an application at that depth would.
        auto freed = ReapThenWait([&] { return outstanding_ >= depth_; });
        if (!freed) return tl::unexpected(freed.error());
        continue;
      }
      if (offset == 0 && pending_[slot] != 0) {
        // Reuse a buffer only after the kernel released it.
        auto freed = ReapThenWait([&] { return pending_[slot] != 0; });
        if (!freed) return tl::unexpected(freed.error());
        continue;
      }
      const ssize_t n = ::send(fd_, pool_.buffer(slot) + offset, pool_.buffer_bytes() - offset,
                               MSG_ZEROCOPY | MSG_NOSIGNAL);
      if (n > 0) {
        Sent(static_cast<std::uint64_t>(n), slot, offset);
        stalled_since = Clock::time_point::max();
        continue;
      }
      if (auto retry = AfterFailedSend(n < 0 ? errno : EIO, stalled_since); !retry) {
        return tl::unexpected(retry.error());
      }
    }
    if (auto drained = Drain(); !drained) return tl::unexpected(drained.error());
    if (stop.Cancelled()) return FailPeer(PeerFailure::kLocalError, Errc::kFailed, "cancelled");
    return counters_;
  }

 private:
  // Reaps the completions queued; where `still_blocked()` after that,
  // waits for more (one wait slice).
  template <typename Blocked>
  Result<void, PeerError> ReapThenWait(const Blocked& still_blocked) {
    if (auto reaped = Reap(); !reaped) return reaped;
    if (still_blocked()) return WaitForCompletions();
    return {};
  }

  // Counts `n` bytes the kernel took from buffer `slot` at `offset` as one
  // send (one completion id), and moves to the next buffer once this one
  // went out whole.
  void Sent(std::uint64_t n, std::uint32_t& slot, std::uint64_t& offset) {
    ++pending_[slot];
    ++outstanding_;
    counters_.max_in_flight = std::max<std::uint64_t>(counters_.max_in_flight, outstanding_);
    slot_of_id_.push_back(static_cast<int>(slot));
    counters_.bytes += n;
    offset += n;
    if (offset == pool_.buffer_bytes()) {
      offset = 0;
      slot = (slot + 1) % pool_.count();
    }
  }

  // A send that took nothing (`err`): retried after an interrupt, a
  // back-off for option memory, or reaping while the socket is full; an
  // error when the socket stays full past the drain timeout
  // (`stalled_since` tracks since when) or for any other errno.
  Result<void, PeerError> AfterFailedSend(int err, Clock::time_point& stalled_since) {
    if (err == EINTR) return {};
    if (err == ENOBUFS) {
      // The socket's option memory (net.core.optmem_max) holds the
      // pending completions: reap some, then retry.
      ++counters_.enobufs;
      return BackOffForOptionMemory();
    }
    if (err == EAGAIN || err == EWOULDBLOCK) {
      const auto now = Clock::now();
      if (stalled_since == Clock::time_point::max()) {
        stalled_since = now;
      } else if (now - stalled_since > kDrainTimeout + kWaitSlice) {
        return FailPeer(PeerFailure::kTimeout, Errc::kFailed,
                        "msg_zerocopy: the socket accepted no data for over " +
                            std::to_string((kDrainTimeout + kWaitSlice).count()) +
                            " ms; is the sink still reading (TCP), or the send "
                            "buffer draining (UDP)?");
      }
      return Reap();
    }
    return FailPeer(SendFailureOf(err), Errc::kFailed,
                    "msg_zerocopy: send(MSG_ZEROCOPY) failed with " + common::ErrnoText(err));
  }

  std::size_t Outstanding() const { return slot_of_id_.size(); }

  // Reads every notification queued on the error queue, without blocking.
  Result<void, PeerError> Reap() {
    while (Outstanding() != 0) {
      char control[CMSG_SPACE(sizeof(sock_extended_err)) + 64];
      msghdr msg{};
      msg.msg_control = control;
      msg.msg_controllen = sizeof control;
      const ssize_t n = ::recvmsg(fd_, &msg, MSG_ERRQUEUE | MSG_DONTWAIT);
      if (n < 0) {
        if (errno == EINTR) continue;
        if (errno == EAGAIN || errno == EWOULDBLOCK) return {};
        return FailPeer(PeerFailure::kLocalError, Errc::kFailed,
                        "msg_zerocopy: reading the error queue failed with " +
                            common::ErrnoText(errno));
      }
      for (cmsghdr* c = CMSG_FIRSTHDR(&msg); c != nullptr; c = CMSG_NXTHDR(&msg, c)) {
        const bool recverr = (c->cmsg_level == SOL_IP && c->cmsg_type == IP_RECVERR) ||
                             (c->cmsg_level == SOL_IPV6 && c->cmsg_type == IPV6_RECVERR);
        if (!recverr) continue;
        sock_extended_err err;
        std::memcpy(&err, CMSG_DATA(c), sizeof err);
        if (err.ee_origin != SO_EE_ORIGIN_ZEROCOPY) {
          const int reported = static_cast<int>(err.ee_errno);
          return FailPeer(SendFailureOf(reported), Errc::kFailed,
                          "msg_zerocopy: the socket reported error " +
                              common::ErrnoText(reported));
        }
        Complete(err.ee_info, err.ee_data,
                 (err.ee_code & SO_EE_CODE_ZEROCOPY_COPIED) != 0);
      }
    }
    return {};
  }

  void Complete(std::uint32_t first, std::uint32_t last, bool copied) {
    // Unsigned arithmetic keeps this right across the 32-bit wrap of ids.
    const std::uint64_t count = static_cast<std::uint32_t>(last - first) + 1ULL;
    counters_.zc_completions += count;
    if (copied) counters_.zc_copied += count;
    for (std::uint64_t k = 0; k < count; ++k) {
      const std::uint32_t index =
          static_cast<std::uint32_t>(first + static_cast<std::uint32_t>(k)) - base_id_;
      if (index >= slot_of_id_.size() || slot_of_id_[index] < 0) continue;
      --pending_[static_cast<std::size_t>(slot_of_id_[index])];
      --outstanding_;
      slot_of_id_[index] = -1;
    }
    while (!slot_of_id_.empty() && slot_of_id_.front() < 0) {
      slot_of_id_.pop_front();
      ++base_id_;
    }
  }

  // Blocks until the error queue has something (at most one wait slice).
  Result<void, PeerError> WaitForCompletions() {
    pollfd p{fd_, 0, 0};  // POLLERR is always reported
    const int ready = ::poll(&p, 1, static_cast<int>(kWaitSlice.count()));
    if (ready < 0 && errno != EINTR) {
      return FailPeer(PeerFailure::kLocalError, Errc::kFailed,
                      "msg_zerocopy: poll failed with " + common::ErrnoText(errno));
    }
    return Reap();
  }

  Result<void, PeerError> BackOffForOptionMemory() {
    if (Outstanding() != 0) {
      enobufs_idle_ = Clock::time_point::max();
      return WaitForCompletions();
    }
    // Nothing of ours holds option memory; something else on the socket
    // does. Retry for a while before calling the limit too small.
    const auto now = Clock::now();
    if (enobufs_idle_ == Clock::time_point::max()) enobufs_idle_ = now;
    if (now - enobufs_idle_ > kDrainTimeout) {
      return FailPeer(PeerFailure::kLocalError, Errc::kUnsupported,
                      "msg_zerocopy: send(MSG_ZEROCOPY) of " +
                      std::to_string(pool_.buffer_bytes()) +
                      " bytes fails with ENOBUFS even with no send outstanding: "
                      "the socket's option memory (net.core.optmem_max) or the "
                      "locked-memory limit for pinned pages (RLIMIT_MEMLOCK " +
                      MemlockLimitText() +
                      ", no CAP_IPC_LOCK) is too small; raise either");
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
    return {};
  }

  Result<void, PeerError> Drain() {
    const auto give_up = Clock::now() + kDrainTimeout;
    while (Outstanding() != 0) {
      if (Clock::now() > give_up) {
        return FailPeer(PeerFailure::kTimeout, Errc::kFailed,
                        "msg_zerocopy: " + std::to_string(Outstanding()) +
                        " zerocopy completions missing " +
                        std::to_string(kDrainTimeout.count()) +
                        " ms after the last send");
      }
      if (auto waited = WaitForCompletions(); !waited) {
        return tl::unexpected(waited.error());
      }
    }
    return {};
  }

  int fd_;
  const BufferPool& pool_;
  std::uint32_t depth_;       // kStreamDepth: as many as the pool holds
  std::size_t outstanding_ = 0;  // sends whose completion is not reaped
  SendCounters counters_;
  std::vector<std::uint32_t> pending_;  // completions owed, per buffer
  std::deque<int> slot_of_id_;          // from base_id_ on; -1 = completed
  std::uint32_t base_id_ = 0;
  Clock::time_point enobufs_idle_ = Clock::time_point::max();
};

}  // namespace

Result<std::unique_ptr<Sender>> MakeMsgZerocopySender(int fd, const BufferPool& pool,
                                                      std::uint32_t depth) {
  const int one = 1;
  if (::setsockopt(fd, SOL_SOCKET, SO_ZEROCOPY, &one, sizeof one) != 0) {
    return Fail(Errc::kUnsupported,
                "msg_zerocopy: the socket refused SO_ZEROCOPY (" + common::ErrnoText(errno) +
                    "); it needs Linux 4.14 or later");
  }
  const timeval timeout{0, static_cast<suseconds_t>(kWaitSlice.count() * 1000)};
  if (::setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &timeout, sizeof timeout) != 0) {
    return Fail(Errc::kFailed, "msg_zerocopy: setsockopt(SO_SNDTIMEO) failed with " +
                                   common::ErrnoText(errno));
  }
  return std::make_unique<MsgZerocopySender>(fd, pool, depth);
}

}  // namespace zcal::probes
