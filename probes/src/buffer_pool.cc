#include "buffer_pool.h"

#include <sys/mman.h>

#include <cerrno>
#include <cstring>
#include <string>

namespace zcal::probes {

namespace {

constexpr std::size_t kAlignment = 64;

}  // namespace

Result<std::unique_ptr<BufferPool>> BufferPool::Allocate(
    std::uint32_t count, std::uint64_t size_bytes) {
  if (count == 0 || size_bytes == 0) {
    return Fail(Errc::kInvalidArgument, "buffer pool: count and size must be positive");
  }
  const std::size_t stride = (size_bytes + kAlignment - 1) / kAlignment * kAlignment;
  const std::size_t bytes = stride * count;
  void* memory = ::mmap(nullptr, bytes, PROT_READ | PROT_WRITE,
                        MAP_PRIVATE | MAP_ANONYMOUS | MAP_POPULATE, -1, 0);
  if (memory == MAP_FAILED) {
    return Fail(Errc::kFailed, "cannot map " + std::to_string(bytes) +
                                   " bytes of message buffers (" +
                                   std::strerror(errno) + ")");
  }
  // Real data, not the shared zero page: every send then reads (or pins)
  // pages of its own.
  std::memset(memory, 0x5a, bytes);
  return std::unique_ptr<BufferPool>(new BufferPool(
      static_cast<std::byte*>(memory), bytes, count, size_bytes, stride));
}

BufferPool::BufferPool(std::byte* base, std::size_t mapped_bytes,
                       std::uint32_t count, std::uint64_t buffer_bytes,
                       std::size_t stride)
    : base_(base),
      mapped_bytes_(mapped_bytes),
      count_(count),
      buffer_bytes_(buffer_bytes),
      stride_(stride) {}

BufferPool::~BufferPool() { ::munmap(base_, mapped_bytes_); }

}  // namespace zcal::probes
