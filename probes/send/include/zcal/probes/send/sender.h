// The contract every sender method implements (one file per method).
#pragma once

#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstdint>
#include <memory>
#include <string>

#include "zcal/calibrator/depth.h"
#include "zcal/common/errno_text.h"
#include "zcal/common/result.h"
#include "zcal/probes/send/buffer_pool.h"
#include "zcal/probes/types/peer_failure.h"

namespace zcal::probes {

/// After a probe's deadline, how long a sender waits for what is in flight
/// before it gives up on the peer.
inline constexpr std::chrono::milliseconds kDrainTimeout{1000};

/// Longest a sender blocks in one call, so that cancel and deadlines are
/// noticed in time.
inline constexpr std::chrono::milliseconds kWaitSlice{200};

/// When a sender stops issuing sends.
class StopCondition {
 public:
  StopCondition(std::chrono::steady_clock::time_point deadline,
                std::uint64_t max_bytes, const std::atomic<bool>* cancel)
      : deadline_(deadline), max_bytes_(max_bytes), cancel_(cancel) {}

  bool Cancelled() const {
    return cancel_ != nullptr && cancel_->load(std::memory_order_relaxed);
  }
  /// True once the deadline passed, `issued_bytes` reached the cap, or the
  /// probe was cancelled.
  bool Reached(std::uint64_t issued_bytes) const {
    if (max_bytes_ != 0 && issued_bytes >= max_bytes_) return true;
    return Cancelled() || std::chrono::steady_clock::now() >= deadline_;
  }

 private:
  std::chrono::steady_clock::time_point deadline_;
  std::uint64_t max_bytes_;
  const std::atomic<bool>* cancel_;
};

struct SendCounters {
  std::uint64_t bytes = 0;           ///< accepted by the kernel
  std::uint64_t zc_completions = 0;  ///< per send call
  std::uint64_t zc_copied = 0;
  std::uint64_t enobufs = 0;
  /// The most sends in flight at once (for zerocopy: until their
  /// completion was reaped): the depth the probe actually reached.
  std::uint64_t max_in_flight = 0;
};

/// What Sender::Run returns. A failure says how it failed (peer_failure.h):
/// kVanished when the receiver reset or closed the connection, kTimeout
/// when a deadline passed (the socket accepted nothing, or completions did
/// not come, for kDrainTimeout past the probe's end; TCP's retransmission
/// timeout), kLocalError for this host's part (poll, io_uring_enter, the
/// error queue, "cancelled") and for Errc::kUnsupported.
using SendResult = Result<SendCounters, PeerError>;

/// The kind of failure of a send that failed with errno `err`.
inline PeerFailure SendFailureOf(int err) {
  switch (err) {
    case ECONNRESET:
    case EPIPE:
    case ENOTCONN:
    case ECONNREFUSED:
    case ECONNABORTED:
    case ESHUTDOWN:
    case EHOSTUNREACH:
    case ENETUNREACH:
    case ENETDOWN:
    case EHOSTDOWN:
      return PeerFailure::kVanished;
    case ETIMEDOUT:
      return PeerFailure::kTimeout;
    default:
      return PeerFailure::kLocalError;
  }
}

/// A sender bound to one connected TCP socket and one buffer pool (both
/// owned by the caller and outliving the sender). Setup happens in the
/// Make* factory, outside the measured window.
class Sender {
 public:
  virtual ~Sender() = default;
  /// Sends messages of the pool's buffer size until `stop` is reached, then
  /// waits for every send in flight (and, for zerocopy, its completion).
  /// Errors: Errc::kUnsupported when the kernel refuses the method at the
  /// first send, Errc::kFailed otherwise ("cancelled" when cancelled).
  virtual SendResult Run(const StopCondition& stop) = 0;
};

/// Every factory fails with Errc::kUnsupported when the method cannot run
/// here (with the reason) or Errc::kFailed. A zerocopy sender keeps at most
/// `depth` sends in flight (sent, their completion not reaped: depth.h),
/// blocking for a completion before the next send as an application at
/// that depth would; at calibrator::kStreamDepth, as many as the pool
/// holds (each buffer reused once the kernel released it).
Result<std::unique_ptr<Sender>> MakeCopySender(int fd, const BufferPool& pool);
Result<std::unique_ptr<Sender>> MakeMsgZerocopySender(
    int fd, const BufferPool& pool, std::uint32_t depth = calibrator::kStreamDepth);
Result<std::unique_ptr<Sender>> MakeUringSendSender(int fd,
                                                    const BufferPool& pool);
Result<std::unique_ptr<Sender>> MakeUringSendZcSender(
    int fd, const BufferPool& pool, std::uint32_t depth = calibrator::kStreamDepth);
Result<std::unique_ptr<Sender>> MakeUringSendZcFixedSender(
    int fd, const BufferPool& pool, std::uint32_t depth = calibrator::kStreamDepth);

/// The soft RLIMIT_MEMLOCK: "64 KiB", "unlimited".
std::string MemlockLimitText();

}  // namespace zcal::probes
