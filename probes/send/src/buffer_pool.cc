#include "zcal/probes/send/buffer_pool.h"

#include <sys/mman.h>

#include <cerrno>
#include <cstring>
#include <string>

namespace zcal::probes {

namespace {

constexpr std::size_t kAlignment = 64;
// Real data, not the shared zero page: every send then reads (or pins)
// pages of its own.
constexpr int kFill = 0x5a;

std::size_t StrideOf(std::uint64_t size_bytes) {
  return (size_bytes + kAlignment - 1) / kAlignment * kAlignment;
}

}  // namespace

Result<std::unique_ptr<BufferPool>> BufferPool::Allocate(
    std::uint32_t count, std::uint64_t size_bytes) {
  if (count == 0 || size_bytes == 0) {
    return Fail(Errc::kInvalidArgument, "buffer pool: count and size must be positive");
  }
  const std::size_t stride = StrideOf(size_bytes);
  const std::size_t bytes = stride * count;
  void* memory = ::mmap(nullptr, bytes, PROT_READ | PROT_WRITE,
                        MAP_PRIVATE | MAP_ANONYMOUS | MAP_POPULATE, -1, 0);
  if (memory == MAP_FAILED) {
    return Fail(Errc::kFailed, "cannot map " + std::to_string(bytes) +
                                   " bytes of message buffers (" +
                                   std::strerror(errno) + ")");
  }
  std::memset(memory, kFill, bytes);
  return std::unique_ptr<BufferPool>(new BufferPool(
      static_cast<std::byte*>(memory), bytes, count, size_bytes, stride, true));
}

BufferPool::BufferPool(std::byte* base, std::size_t mapped_bytes,
                       std::uint32_t count, std::uint64_t buffer_bytes,
                       std::size_t stride, bool owned)
    : base_(base),
      mapped_bytes_(mapped_bytes),
      count_(count),
      buffer_bytes_(buffer_bytes),
      stride_(stride),
      owned_(owned) {}

BufferPool::~BufferPool() {
  if (owned_) ::munmap(base_, mapped_bytes_);
}

Result<std::unique_ptr<BufferPool>> BufferArena::Pool(std::uint32_t count,
                                                      std::uint64_t size_bytes) {
  if (count == 0 || size_bytes == 0) {
    return Fail(Errc::kInvalidArgument, "buffer pool: count and size must be positive");
  }
  const std::size_t stride = StrideOf(size_bytes);
  const std::size_t bytes = stride * count;
  if (!region_ || region_->mapped_bytes() < bytes) {
    region_.reset();
    auto grown = BufferPool::Allocate(1, bytes);
    if (!grown) return tl::unexpected(grown.error());
    region_ = std::move(*grown);
  } else {
    std::memset(region_->base(), kFill, bytes);
  }
  return std::unique_ptr<BufferPool>(
      new BufferPool(region_->base(), bytes, count, size_bytes, stride, false));
}

}  // namespace zcal::probes
