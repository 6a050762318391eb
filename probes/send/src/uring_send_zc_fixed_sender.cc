#include <sys/uio.h>

#include <cerrno>
#include <string>

#include "uring_ring.h"

namespace zcal::probes {

namespace {

class UringSendZcFixedSender final : public Sender {
 public:
  UringSendZcFixedSender(int fd, const BufferPool& pool, std::unique_ptr<Ring> ring,
                         std::uint32_t depth)
      : fd_(fd), pool_(pool), ring_(std::move(ring)), depth_(depth) {}

  SendResult Run(const StopCondition& stop) override {
    return RunUringSendLoop(*ring_, fd_, pool_, UringOp::kSendZcFixed,
                            "uring_send_zc_fixed", stop, depth_);
  }

 private:
  int fd_;
  const BufferPool& pool_;
  std::unique_ptr<Ring> ring_;
  std::uint32_t depth_;
};

}  // namespace

Result<std::unique_ptr<Sender>> MakeUringSendZcFixedSender(int fd, const BufferPool& pool,
                                                           std::uint32_t depth) {
  auto ring = Ring::Create(pool.count());
  if (!ring) {
    return Fail(ring.error().code, "uring_send_zc_fixed: " + ring.error().message);
  }
  // One registered buffer spans the whole pool; sends address slices of it.
  const iovec region{pool.base(), pool.mapped_bytes()};
  const int rc = io_uring_register_buffers((*ring)->get(), &region, 1);
  if (rc == -ENOMEM) {
    return Fail(Errc::kUnsupported,
                "uring_send_zc_fixed: registering " +
                    std::to_string(pool.mapped_bytes() / 1024) +
                    " KiB of buffers failed with ENOMEM: beyond the locked-memory "
                    "limit (RLIMIT_MEMLOCK " + MemlockLimitText() +
                    ", no CAP_IPC_LOCK); raise `ulimit -l` (LimitMEMLOCK= in "
                    "systemd) or grant CAP_IPC_LOCK");
  }
  if (rc < 0) {
    return Fail(rc == -EPERM || rc == -EOPNOTSUPP || rc == -EINVAL ? Errc::kUnsupported
                                                                   : Errc::kFailed,
                "uring_send_zc_fixed: io_uring_register_buffers failed with " +
                    common::ErrnoText(-rc));
  }
  return std::make_unique<UringSendZcFixedSender>(fd, pool, std::move(*ring), depth);
}

}  // namespace zcal::probes
