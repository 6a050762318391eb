#include "uring_ring.h"

namespace zcal::probes {

namespace {

class UringSendZcSender final : public Sender {
 public:
  UringSendZcSender(int fd, const BufferPool& pool, std::unique_ptr<Ring> ring,
                    std::uint32_t depth)
      : fd_(fd), pool_(pool), ring_(std::move(ring)), depth_(depth) {}

  SendResult Run(const StopCondition& stop) override {
    return RunUringSendLoop(*ring_, fd_, pool_, UringOp::kSendZc, "uring_send_zc",
                            stop, depth_);
  }

 private:
  int fd_;
  const BufferPool& pool_;
  std::unique_ptr<Ring> ring_;
  std::uint32_t depth_;
};

}  // namespace

Result<std::unique_ptr<Sender>> MakeUringSendZcSender(int fd, const BufferPool& pool,
                                                      std::uint32_t depth) {
  auto ring = Ring::Create(pool.count());
  if (!ring) {
    return Fail(ring.error().code, "uring_send_zc: " + ring.error().message);
  }
  return std::make_unique<UringSendZcSender>(fd, pool, std::move(*ring), depth);
}

}  // namespace zcal::probes
