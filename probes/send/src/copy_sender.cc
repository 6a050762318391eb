#include <sys/socket.h>
#include <sys/time.h>

#include <cerrno>

#include "zcal/probes/send/sender.h"

namespace zcal::probes {

namespace {

class CopySender final : public Sender {
 public:
  CopySender(int fd, const BufferPool& pool) : fd_(fd), pool_(pool) {}

  SendResult Run(const StopCondition& stop) override {
    SendCounters counters;
    const std::uint64_t size = pool_.buffer_bytes();
    std::uint32_t slot = 0;
    std::uint64_t offset = 0;
    auto stalled_since = std::chrono::steady_clock::time_point::max();
    while (!stop.Reached(counters.bytes)) {
      // A TCP send may be partial; a UDP datagram goes whole or fails.
      const ssize_t n = ::send(fd_, pool_.buffer(slot) + offset, size - offset,
                               MSG_NOSIGNAL);
      if (n > 0) {
        counters.bytes += static_cast<std::uint64_t>(n);
        offset += static_cast<std::uint64_t>(n);
        if (offset == size) {
          offset = 0;
          slot = (slot + 1) % pool_.count();
        }
        stalled_since = std::chrono::steady_clock::time_point::max();
        continue;
      }
      if (n < 0 && errno == EINTR) continue;
      if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
        // SO_SNDTIMEO expired: the peer reads nothing (TCP), or the device
        // frees nothing (UDP). Keep waiting until
        // the deadline plus the drain time, then give up.
        const auto now = std::chrono::steady_clock::now();
        if (stalled_since == std::chrono::steady_clock::time_point::max()) {
          stalled_since = now;
        } else if (now - stalled_since > kDrainTimeout + kWaitSlice) {
          return FailPeer(PeerFailure::kTimeout, Errc::kFailed,
                      "copy: the socket accepted no data for over " +
                          std::to_string((kDrainTimeout + kWaitSlice).count()) +
                          " ms; is the sink still reading (TCP), or the send "
                          "buffer draining (UDP)?");
        }
        continue;
      }
      const int err = errno;
      return FailPeer(SendFailureOf(err), Errc::kFailed,
                      "copy: send(2) failed with " + common::ErrnoText(err));
    }
    if (stop.Cancelled()) return FailPeer(PeerFailure::kLocalError, Errc::kFailed, "cancelled");
    return counters;
  }

 private:
  int fd_;
  const BufferPool& pool_;
};

}  // namespace

Result<std::unique_ptr<Sender>> MakeCopySender(int fd, const BufferPool& pool) {
  const timeval timeout{0, static_cast<suseconds_t>(kWaitSlice.count() * 1000)};
  if (::setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &timeout, sizeof timeout) != 0) {
    return Fail(Errc::kFailed, "copy: setsockopt(SO_SNDTIMEO) failed with " +
                                   common::ErrnoText(errno));
  }
  return std::make_unique<CopySender>(fd, pool);
}

}  // namespace zcal::probes
