// An io_uring instance set up the way high-performance senders use it, and
// the send loop the three io_uring methods share.
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "uring_names.h"
#include "zcal/calibrator/depth.h"
#include "zcal/common/result.h"
#include "zcal/probes/send/buffer_pool.h"
#include "zcal/probes/send/sender.h"

namespace zcal::probes {

class Ring {
 public:
  /// A ring with at least `entries` SQEs (and twice as many CQEs), single
  /// issuer with deferred task work where the kernel has it, and its fd
  /// registered. Errc::kUnsupported when io_uring is blocked or missing
  /// (EPERM, ENOSYS), naming the cause; Errc::kFailed otherwise.
  static Result<std::unique_ptr<Ring>> Create(unsigned entries);
  ~Ring();
  Ring(const Ring&) = delete;
  Ring& operator=(const Ring&) = delete;

  io_uring* get() { return &ring_; }

 private:
  Ring() = default;
  io_uring ring_{};
};

/// The sentence for a failed io_uring_setup (err > 0), with what to do.
std::string UringSetupFailure(int err);

enum class UringOp : std::uint8_t {
  kSend,         ///< IORING_OP_SEND
  kSendZc,       ///< IORING_OP_SEND_ZC, REPORT_USAGE
  kSendZcFixed,  ///< the same from buffer 0, registered as the whole pool
};

/// Keeps every buffer of the pool in flight (at most `depth` sends for the
/// zerocopy ops, a send counting until its notification; kStreamDepth: no
/// limit but the pool), submitting in batches, until `stop`; then reaps
/// what is in flight (at most kDrainTimeout). `name` is the method's name
/// for messages.
SendResult RunUringSendLoop(Ring& ring, int fd, const BufferPool& pool,
                            UringOp op, const char* name, const StopCondition& stop,
                            std::uint32_t depth = calibrator::kStreamDepth);

}  // namespace zcal::probes
