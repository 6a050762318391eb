// Message buffers in 2 MiB pages (BufferMemory::kHugePages): hugetlbfs
// when the host reserved some, else transparent huge pages, checked.
#pragma once

#include <cstddef>
#include <string>

#include "zcal/common/result.h"
#include "zcal/probes/send/buffer_pool.h"

namespace zcal::probes {

struct PageMapping {
  std::byte* base = nullptr;
  std::size_t length = 0;  ///< a multiple of kHugePageBytes
  PageKind pages = PageKind::kHugetlb;
};

/// A private anonymous mapping of `bytes` rounded up to whole huge pages,
/// every byte written with `fill` (which faults the pages in). Errors:
/// Errc::kUnsupported with BufferPool::Allocate's sentence.
Result<PageMapping> MapHugePages(std::size_t bytes, int fill, const std::string& root);

/// Bytes of [base, base + length) that this process's /proc/self/smaps
/// counts as transparent huge pages (AnonHugePages of the mappings that
/// overlap it, each at most its overlap).
std::size_t TransparentHugeBytes(const std::byte* base, std::size_t length);

}  // namespace zcal::probes
