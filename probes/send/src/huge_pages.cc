#include "huge_pages.h"

#include <sys/mman.h>

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <cstdint>
#include <cstring>
#include <fstream>
#include <optional>
#include <string_view>
#include <utility>

#include "zcal/common/errno_text.h"
#include "zcal/common/text.h"
#include "zcal/probes/host/sysfs.h"

namespace zcal::probes {

namespace {

// MADV_COLLAPSE (Linux 6.1) is missing from Debian 12's glibc headers.
constexpr int kMadvCollapse = 25;
constexpr int kMapHuge2Mb = 21 << MAP_HUGE_SHIFT;
constexpr const char* kThpEnabled = "sys/kernel/mm/transparent_hugepage/enabled";

// Why one kind of huge page could not be had, and whether enabling THP
// belongs in the advice.
struct Refusal {
  std::string why;
  bool thp_off = false;
};

std::size_t RoundUp(std::size_t bytes) {
  return (bytes + kHugePageBytes - 1) / kHugePageBytes * kHugePageBytes;
}

std::optional<std::uint64_t> ParseCount(std::string_view text) {
  std::uint64_t value = 0;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (ec != std::errc() || end != text.data() + text.size()) return std::nullopt;
  return value;
}

using Attempt = tl::expected<PageMapping, Refusal>;

Attempt Refuse(std::string why, bool thp_off = false) {
  return tl::unexpected(Refusal{std::move(why), thp_off});
}

Attempt TryHugetlb(std::size_t length, int fill, const std::string& root) {
  const auto reserved_text = ReadFirstLine(UnderRoot(root, "proc/sys/vm/nr_hugepages"));
  if (!reserved_text) {
    return Refuse("hugetlbfs is not available (" + reserved_text.error().message + ")");
  }
  const auto reserved = ParseCount(*reserved_text).value_or(0);
  const auto overcommit_text =
      ReadFirstLine(UnderRoot(root, "proc/sys/vm/nr_overcommit_hugepages"));
  const auto overcommit = overcommit_text ? ParseCount(*overcommit_text).value_or(0) : 0;
  if (reserved == 0 && overcommit == 0) {
    return Refuse("none reserved (vm.nr_hugepages is 0)");
  }
  void* memory =
      ::mmap(nullptr, length, PROT_READ | PROT_WRITE,
             MAP_PRIVATE | MAP_ANONYMOUS | MAP_HUGETLB | kMapHuge2Mb | MAP_POPULATE, -1, 0);
  if (memory == MAP_FAILED) {
    return Refuse("hugetlbfs gave no " + std::to_string(length / kHugePageBytes) +
                  " free 2 MiB pages (vm.nr_hugepages is " + std::to_string(reserved) +
                  ", others may hold them; mmap: " + common::ErrnoText(errno) + ")");
  }
  std::memset(memory, fill, length);
  return PageMapping{static_cast<std::byte*>(memory), length, PageKind::kHugetlb};
}

// A range of `length` that starts on a 2 MiB boundary, the only place a
// huge page can go: one huge page more is mapped and the ends cut off.
std::byte* MapAligned(std::size_t length) {
  void* raw = ::mmap(nullptr, length + kHugePageBytes, PROT_READ | PROT_WRITE,
                     MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (raw == MAP_FAILED) return nullptr;
  const auto start = reinterpret_cast<std::uintptr_t>(raw);
  const std::uintptr_t aligned = (start + kHugePageBytes - 1) / kHugePageBytes * kHugePageBytes;
  if (aligned > start) ::munmap(raw, aligned - start);
  const std::size_t tail = kHugePageBytes - (aligned - start);
  if (tail > 0) ::munmap(reinterpret_cast<void*>(aligned + length), tail);
  return reinterpret_cast<std::byte*>(aligned);
}

Attempt TryTransparent(std::size_t length, int fill, const std::string& root) {
  const auto enabled_path = UnderRoot(root, kThpEnabled);
  const auto enabled = ReadFirstLine(enabled_path);
  if (!enabled) {
    return Refuse("transparent huge pages are not available (" + enabled.error().message + ")",
                  true);
  }
  if (enabled->find("[never]") != std::string::npos) {
    return Refuse(
        "transparent huge pages are disabled (" + enabled_path.string() + " is [never])", true);
  }
  std::byte* base = MapAligned(length);
  if (base == nullptr) {
    return Refuse("cannot map " + std::to_string(length) +
                  " bytes for transparent huge pages (" + common::ErrnoText(errno) + ")");
  }
  if (::madvise(base, length, MADV_HUGEPAGE) != 0) {
    const int err = errno;
    ::munmap(base, length);
    return Refuse("madvise(MADV_HUGEPAGE) failed with " + common::ErrnoText(err), true);
  }
  // The kernel gives a huge page at the first fault of an advised range;
  // the fill is that fault.
  std::memset(base, fill, length);
  std::size_t huge = TransparentHugeBytes(base, length);
  if (huge < length) {
    // When memory is fragmented the fault falls back to small pages;
    // MADV_COLLAPSE compacts and collapses them synchronously.
    ::madvise(base, length, kMadvCollapse);
    huge = TransparentHugeBytes(base, length);
  }
  if (huge < length) {
    ::munmap(base, length);
    return Refuse("transparent huge pages backed only " + std::to_string(huge / 1024) + " of " +
                  std::to_string(length / 1024) +
                  " KiB (memory too fragmented; /proc/self/smaps AnonHugePages)");
  }
  return PageMapping{base, length, PageKind::kTransparent};
}

}  // namespace

Result<PageMapping> MapHugePages(std::size_t bytes, int fill, const std::string& root) {
  const std::size_t length = RoundUp(bytes);
  const Attempt hugetlb_attempt = TryHugetlb(length, fill, root);
  if (hugetlb_attempt) return *hugetlb_attempt;
  const Attempt thp_attempt = TryTransparent(length, fill, root);
  if (thp_attempt) return *thp_attempt;
  const Refusal& hugetlb = hugetlb_attempt.error();
  const Refusal& thp = thp_attempt.error();
  const std::string pages = std::to_string(length / kHugePageBytes);
  return Fail(Errc::kUnsupported,
              "huge pages: " + hugetlb.why + " and " + thp.why + ": reserve some with sysctl " +
                  "vm.nr_hugepages=" + pages +
                  (thp.thp_off
                       ? " or enable THP (echo madvise > /" + std::string(kThpEnabled) + ")"
                       : std::string()));
}

std::size_t TransparentHugeBytes(const std::byte* base, std::size_t length) {
  const auto lo = reinterpret_cast<std::uintptr_t>(base);
  const std::uintptr_t hi = lo + length;
  std::ifstream smaps("/proc/self/smaps");
  std::size_t overlap = 0;
  std::size_t huge = 0;
  std::string line;
  while (std::getline(smaps, line)) {
    const char first = line.empty() ? ' ' : line.front();
    if ((first >= '0' && first <= '9') || (first >= 'a' && first <= 'f')) {
      // A mapping's header: "start-end perms offset dev inode [name]".
      std::uintptr_t start = 0, end = 0;
      const char* p = line.data();
      const char* stop = p + line.size();
      auto [dash, ec] = std::from_chars(p, stop, start, 16);
      if (ec != std::errc() || dash == stop || *dash != '-') continue;
      [[maybe_unused]] auto [after, ec2] = std::from_chars(dash + 1, stop, end, 16);
      overlap = ec2 == std::errc() && end > lo && start < hi
                    ? std::min(end, hi) - std::max(start, lo)
                    : 0;
      continue;
    }
    constexpr std::string_view kField = "AnonHugePages:";
    if (overlap == 0 || !line.starts_with(kField)) continue;
    std::string_view value = common::Trim(std::string_view(line).substr(kField.size()));
    std::uint64_t kib = 0;
    std::from_chars(value.data(), value.data() + value.size(), kib);
    huge += std::min<std::size_t>(kib * 1024, overlap);
  }
  return huge;
}

}  // namespace zcal::probes
