// The message buffers a probe sends from: one page-aligned, pre-faulted
// region cut into equal buffers, so that io_uring can register it whole.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>

#include "zcal/common/result.h"

namespace zcal::probes {

class BufferPool {
 public:
  /// `count` buffers of `size_bytes` each. Errc::kFailed when the memory
  /// cannot be mapped.
  static Result<std::unique_ptr<BufferPool>> Allocate(std::uint32_t count,
                                                      std::uint64_t size_bytes);
  ~BufferPool();
  BufferPool(const BufferPool&) = delete;
  BufferPool& operator=(const BufferPool&) = delete;

  std::uint32_t count() const { return count_; }
  std::uint64_t buffer_bytes() const { return buffer_bytes_; }
  std::byte* buffer(std::uint32_t index) const {
    return base_ + static_cast<std::size_t>(index) * stride_;
  }
  std::byte* base() const { return base_; }
  std::size_t mapped_bytes() const { return mapped_bytes_; }

 private:
  BufferPool(std::byte* base, std::size_t mapped_bytes, std::uint32_t count,
             std::uint64_t buffer_bytes, std::size_t stride);

  std::byte* base_;
  std::size_t mapped_bytes_;
  std::uint32_t count_;
  std::uint64_t buffer_bytes_;
  std::size_t stride_;
};

}  // namespace zcal::probes
