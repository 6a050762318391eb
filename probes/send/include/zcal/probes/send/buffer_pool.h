// The message buffers a probe sends from: one page-aligned, pre-faulted
// region cut into equal buffers, so that io_uring can register it whole.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include "zcal/common/result.h"

namespace zcal::probes {

/// The memory a probe asks its buffers from (ProbeOptions::buffers).
enum class BufferMemory : std::uint8_t {
  kPages,      ///< ordinary 4 KiB pages (the default)
  kHugePages,  ///< 2 MiB pages: hugetlbfs when reserved, else transparent huge pages
};

/// "pages", "hugepages": the spelling of options and output.
std::string_view BufferMemoryName(BufferMemory memory);
/// Inverse of BufferMemoryName; nullopt for any other text.
std::optional<BufferMemory> ParseBufferMemory(std::string_view text);

/// The pages a pool really got.
enum class PageKind : std::uint8_t {
  kSmall,        ///< 4 KiB pages
  kHugetlb,      ///< 2 MiB pages of hugetlbfs (MAP_HUGETLB, from vm.nr_hugepages)
  kTransparent,  ///< transparent huge pages, each 2 MiB of the range checked in
                 ///< /proc/self/smaps (AnonHugePages)
};

/// "4 KiB pages", "hugetlbfs 2 MiB pages", "transparent huge pages (2 MiB)".
std::string_view PageKindName(PageKind kind);

/// Bytes of one huge page: the only size zcal asks for.
inline constexpr std::size_t kHugePageBytes = 2 * 1024 * 1024;

class BufferPool {
 public:
  /// `count` buffers of `size_bytes` each, in a mapping of their own,
  /// filled with data. With BufferMemory::kHugePages the mapping is whole
  /// 2 MiB pages: hugetlbfs first, when `root`'s
  /// proc/sys/vm/nr_hugepages or nr_overcommit_hugepages is above 0, else
  /// transparent huge pages unless `root`'s
  /// sys/kernel/mm/transparent_hugepage/enabled says [never] (the backing
  /// is checked in this process's /proc/self/smaps). Errors:
  /// Errc::kUnsupported with one sentence saying what to do when huge pages
  /// cannot be had, Errc::kFailed when the memory cannot be mapped,
  /// Errc::kInvalidArgument for a count or size of 0.
  static Result<std::unique_ptr<BufferPool>> Allocate(
      std::uint32_t count, std::uint64_t size_bytes,
      BufferMemory memory = BufferMemory::kPages, const std::string& root = "/");
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
  /// The pages the buffers lie in.
  PageKind pages() const { return pages_; }

 private:
  friend class BufferArena;
  struct Region {
    std::byte* base;
    std::size_t length;  ///< of the whole mapping, >= the buffers' span
    PageKind pages;
  };
  BufferPool(Region region, std::size_t mapped_bytes, std::uint32_t count,
             std::uint64_t buffer_bytes, std::size_t stride, bool owned);

  std::byte* base_;
  std::size_t map_length_;
  std::size_t mapped_bytes_;
  std::uint32_t count_;
  std::uint64_t buffer_bytes_;
  std::size_t stride_;
  PageKind pages_;
  bool owned_;
};

/// Which pages BufferPool::Allocate would give a pool of `memory` now:
/// maps (and unmaps) one 2 MiB huge page to find out, so that a command
/// fails at its start with BufferPool::Allocate's sentence rather than in
/// every probe. kSmall for BufferMemory::kPages.
Result<PageKind> CheckBufferMemory(BufferMemory memory, const std::string& root = "/");

/// One mapping that the probes of a calibration cut their pools from, so
/// that a probe does not pay for mapping, faulting in and unmapping its
/// buffers (docs/probes.md, "What a probe costs beside sending"). Each pool
/// is filled with data again, so a probe starts from freshly written
/// buffers as one with a mapping of its own does. Grows when a probe needs
/// more. Not thread-safe.
///
/// In 4 KiB pages its first mapping is at least `reserve_bytes`, so that the
/// pools of a calibration fit from the first probe on: on the discard path
/// here the first copying probe after the arena grew cost 13-33 % more CPU
/// per byte than the same probe a few hundred ms later, at the sizes where
/// it grew (4, 8 and 16 KiB: fresh pages, though filled before the probe),
/// and that bias entered the baselines' curves where crossovers lie
/// (docs/probes.md, "What a probe costs beside sending"). Huge pages map
/// whole 2 MiB pages, so their first mapping already holds a pool of the
/// default in-flight bytes, and they keep the pages a probe needs.
class BufferArena {
 public:
  explicit BufferArena(std::size_t reserve_bytes = 0) : reserve_bytes_(reserve_bytes) {}
  BufferArena(const BufferArena&) = delete;
  BufferArena& operator=(const BufferArena&) = delete;

  /// `count` buffers of `size_bytes` at the start of the arena, valid until
  /// the next call (which may move the region) and while the arena lives.
  /// A call with another `memory` than the last maps the arena anew.
  /// Errors as BufferPool::Allocate's.
  Result<std::unique_ptr<BufferPool>> Pool(std::uint32_t count, std::uint64_t size_bytes,
                                           BufferMemory memory = BufferMemory::kPages,
                                           const std::string& root = "/");

  /// Bytes mapped now (0 before the first pool).
  std::size_t mapped_bytes() const { return region_ ? region_->mapped_bytes() : 0; }

 private:
  std::unique_ptr<BufferPool> region_;
  BufferMemory memory_ = BufferMemory::kPages;
  std::size_t reserve_bytes_;
};

}  // namespace zcal::probes
