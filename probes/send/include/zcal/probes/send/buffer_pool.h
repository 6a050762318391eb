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
  /// `count` buffers of `size_bytes` each, in a mapping of their own,
  /// filled with data. Errc::kFailed when the memory cannot be mapped.
  static Result<std::unique_ptr<BufferPool>> Allocate(std::uint32_t count,
                                                      std::uint64_t size_bytes);
  /// Unmaps the region when the pool owns it (Allocate), not when it is
  /// cut from an arena.
  ~BufferPool();
  BufferPool(const BufferPool&) = delete;
  BufferPool& operator=(const BufferPool&) = delete;

  std::uint32_t count() const { return count_; }
  std::uint64_t buffer_bytes() const { return buffer_bytes_; }
  std::byte* buffer(std::uint32_t index) const {
    return base_ + static_cast<std::size_t>(index) * stride_;
  }
  std::byte* base() const { return base_; }
  /// Bytes from base() the buffers span (what a registration pins).
  std::size_t mapped_bytes() const { return mapped_bytes_; }

 private:
  friend class BufferArena;
  BufferPool(std::byte* base, std::size_t mapped_bytes, std::uint32_t count,
             std::uint64_t buffer_bytes, std::size_t stride, bool owned);

  std::byte* base_;
  std::size_t mapped_bytes_;
  std::uint32_t count_;
  std::uint64_t buffer_bytes_;
  std::size_t stride_;
  bool owned_;
};

/// One mapping that the probes of a calibration cut their pools from, so
/// that a probe does not pay for mapping, faulting in and unmapping its
/// buffers (docs/probes.md, "What a probe costs beside sending"). Each pool
/// is filled with data again, so a probe starts from freshly written
/// buffers as one with a mapping of its own does. Grows when a probe needs
/// more. Not thread-safe.
class BufferArena {
 public:
  BufferArena() = default;
  BufferArena(const BufferArena&) = delete;
  BufferArena& operator=(const BufferArena&) = delete;

  /// `count` buffers of `size_bytes` at the start of the arena, valid until
  /// the next call (which may move the region) and while the arena lives.
  /// Errc::kFailed when the memory cannot be mapped.
  Result<std::unique_ptr<BufferPool>> Pool(std::uint32_t count, std::uint64_t size_bytes);

  /// Bytes mapped now (0 before the first pool).
  std::size_t mapped_bytes() const { return region_ ? region_->mapped_bytes() : 0; }

 private:
  std::unique_ptr<BufferPool> region_;
};

}  // namespace zcal::probes
