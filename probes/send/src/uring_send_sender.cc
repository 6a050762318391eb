#include "uring_ring.h"

namespace zcal::probes {

namespace {

class UringSendSender final : public Sender {
 public:
  UringSendSender(int fd, const BufferPool& pool, std::unique_ptr<Ring> ring)
      : fd_(fd), pool_(pool), ring_(std::move(ring)) {}

  SendResult Run(const StopCondition& stop) override {
    return RunUringSendLoop(*ring_, fd_, pool_, UringOp::kSend, "uring_send", stop);
  }

 private:
  int fd_;
  const BufferPool& pool_;
  std::unique_ptr<Ring> ring_;
};

}  // namespace

Result<std::unique_ptr<Sender>> MakeUringSendSender(int fd, const BufferPool& pool) {
  auto ring = Ring::Create(pool.count());
  if (!ring) {
    return Fail(ring.error().code, "uring_send: " + ring.error().message);
  }
  return std::make_unique<UringSendSender>(fd, pool, std::move(*ring));
}

}  // namespace zcal::probes
