#include "zcal/probes/send/buffer_pool.h"

#include <sys/mman.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <string>

#include "huge_pages.h"

namespace zcal::probes {

namespace {

constexpr std::size_t kAlignment = 64;
// Real data, not the shared zero page: every send then reads (or pins)
// pages of its own.
constexpr int kFill = 0x5a;

std::size_t StrideOf(std::uint64_t size_bytes) {
  return (size_bytes + kAlignment - 1) / kAlignment * kAlignment;
}

Result<PageMapping> MapSmallPages(std::size_t bytes) {
  void* memory = ::mmap(nullptr, bytes, PROT_READ | PROT_WRITE,
                        MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (memory == MAP_FAILED) {
    return Fail(Errc::kFailed, "cannot map " + std::to_string(bytes) +
                                   " bytes of message buffers (" +
                                   std::strerror(errno) + ")");
  }
  // With THP "always" the faults below would take huge pages: 4 KiB pages
  // are what this pool promises, so that the two kinds can be compared.
  // Without THP in the kernel the advice fails, and the pages are small.
  ::madvise(memory, bytes, MADV_NOHUGEPAGE);
  std::memset(memory, kFill, bytes);
  return PageMapping{static_cast<std::byte*>(memory), bytes, PageKind::kSmall};
}

}  // namespace

std::string_view BufferMemoryName(BufferMemory memory) {
  return memory == BufferMemory::kHugePages ? "hugepages" : "pages";
}

std::optional<BufferMemory> ParseBufferMemory(std::string_view text) {
  if (text == "pages") return BufferMemory::kPages;
  if (text == "hugepages") return BufferMemory::kHugePages;
  return std::nullopt;
}

std::string_view PageKindName(PageKind kind) {
  switch (kind) {
    case PageKind::kSmall: return "4 KiB pages";
    case PageKind::kHugetlb: return "hugetlbfs 2 MiB pages";
    case PageKind::kTransparent: return "transparent huge pages (2 MiB)";
  }
  return "unknown pages";
}

Result<std::unique_ptr<BufferPool>> BufferPool::Allocate(
    std::uint32_t count, std::uint64_t size_bytes, BufferMemory memory,
    const std::string& root) {
  if (count == 0 || size_bytes == 0) {
    return Fail(Errc::kInvalidArgument, "buffer pool: count and size must be positive");
  }
  const std::size_t stride = StrideOf(size_bytes);
  const std::size_t bytes = stride * count;
  auto mapped = memory == BufferMemory::kHugePages ? MapHugePages(bytes, kFill, root)
                                                   : MapSmallPages(bytes);
  if (!mapped) return tl::unexpected(mapped.error());
  return std::unique_ptr<BufferPool>(new BufferPool(
      {mapped->base, mapped->length, mapped->pages}, bytes, count, size_bytes, stride, true));
}

Result<PageKind> CheckBufferMemory(BufferMemory memory, const std::string& root) {
  auto pool = BufferPool::Allocate(1, kHugePageBytes, memory, root);
  if (!pool) return tl::unexpected(pool.error());
  return (*pool)->pages();
}

BufferPool::BufferPool(Region region, std::size_t mapped_bytes, std::uint32_t count,
                       std::uint64_t buffer_bytes, std::size_t stride, bool owned)
    : base_(region.base),
      map_length_(region.length),
      mapped_bytes_(mapped_bytes),
      count_(count),
      buffer_bytes_(buffer_bytes),
      stride_(stride),
      pages_(region.pages),
      owned_(owned) {}

BufferPool::~BufferPool() {
  if (owned_) ::munmap(base_, map_length_);
}

Result<std::unique_ptr<BufferPool>> BufferArena::Pool(std::uint32_t count,
                                                      std::uint64_t size_bytes,
                                                      BufferMemory memory,
                                                      const std::string& root) {
  if (count == 0 || size_bytes == 0) {
    return Fail(Errc::kInvalidArgument, "buffer pool: count and size must be positive");
  }
  const std::size_t stride = StrideOf(size_bytes);
  const std::size_t bytes = stride * count;
  if (!region_ || region_->map_length_ < bytes || memory_ != memory) {
    region_.reset();
    const std::size_t map = memory == BufferMemory::kPages ? std::max(bytes, reserve_bytes_) : bytes;
    auto grown = BufferPool::Allocate(1, map, memory, root);
    if (!grown) return tl::unexpected(grown.error());
    region_ = std::move(*grown);
    memory_ = memory;
  } else {
    std::memset(region_->base(), kFill, bytes);
  }
  return std::unique_ptr<BufferPool>(
      new BufferPool({region_->base(), region_->map_length_, region_->pages()}, bytes, count,
                     size_bytes, stride, false));
}

}  // namespace zcal::probes
