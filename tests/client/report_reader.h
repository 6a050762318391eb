// A reader of report objects (zcal.h, "What the application sent";
// docs/shm-abi.md, "Report objects"), for the tests: the seed of the
// agent's. The object is untrusted input -- any local user can create one
// with any content -- so every size is range-checked against the file
// before it is used, nothing beyond the checked size is read, and a slot
// whose seqlock (report ABI 1.0 writers kept one) stays busy is reported,
// not waited for.
#pragma once

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cstdint>
#include <cstring>
#include <string>

#include "zcal/zcal.h"

namespace zcal::test {

// Bounds a reader keeps whatever the header says.
inline constexpr std::uint64_t kReportMaxBytes = 64u << 20;
inline constexpr std::uint32_t kReportMaxSlots = 4096;
inline constexpr int kReportRetries = 4096;

// Counters summed over the slots, for the scopes and methods this reader
// knows (a newer writer's others are skipped).
struct ReportCounts {
  zcal_report_cell cells[ZCAL_REPORT_SCOPES][ZCAL_REPORT_METHODS];
};

// Answers `yes` (0, 1) for reason `why`, at every depth.
inline std::uint64_t Answers(const zcal_report_cell& c, int yes, int why) {
  std::uint64_t n = 0;
  for (const auto& at_depth : c.answers) n += at_depth[yes][why];
  return n;
}
// Answers at depth class index `k` (1, 4, 16, stream), of every kind.
inline std::uint64_t AtDepth(const zcal_report_cell& c, int k) {
  std::uint64_t n = 0;
  for (const auto& by_answer : c.answers[k])
    for (std::uint64_t v : by_answer) n += v;
  return n;
}

struct ReportSnapshot {
  std::string error;  // empty: read and valid
  std::uint32_t owner_pid = 0;
  std::uint64_t generation = 0;
  std::uint32_t flags = 0;
  std::uint32_t slots_used = 0;
  std::uint16_t abi_minor = 0;
  std::string name;
  ReportCounts counts{};
  ReportCounts shared{};  // slot 0's share of `counts`
};

namespace report_detail {

inline std::uint64_t Load(const unsigned char* base, std::uint64_t offset) {
  return __atomic_load_n(reinterpret_cast<const std::uint64_t*>(base + offset), __ATOMIC_ACQUIRE);
}
inline std::uint32_t Load32(const unsigned char* base, std::uint64_t offset) {
  return __atomic_load_n(reinterpret_cast<const std::uint32_t*>(base + offset), __ATOMIC_ACQUIRE);
}

// The header's geometry, validated against the file size.
inline std::string Validate(const zcal_report_header& h, std::uint64_t file_bytes) {
  if (h.magic != ZCAL_REPORT_MAGIC) return "bad magic (not a report, or not yet complete)";
  if (h.abi_major != ZCAL_REPORT_ABI_MAJOR)
    return "ABI major " + std::to_string(h.abi_major) + ", this reader reads " +
           std::to_string(ZCAL_REPORT_ABI_MAJOR);
  if (h.header_size < sizeof(zcal_report_header) || h.header_size % 8 != 0)
    return "header_size " + std::to_string(h.header_size);
  if (h.cell_size < sizeof(zcal_report_cell) || h.cell_size % 8 != 0)
    return "cell_size " + std::to_string(h.cell_size);
  if (h.slot_header_size < offsetof(zcal_report_slot, cells) || h.slot_header_size % 8 != 0)
    return "slot_header_size " + std::to_string(h.slot_header_size);
  // Within a major, a cell's fields keep their offsets (new ones are
  // appended, cell_size grows); only scopes and methods may grow.
  if (h.scopes == 0 || h.methods == 0 || h.size_buckets != ZCAL_REPORT_SIZE_BUCKETS ||
      h.depth_classes != ZCAL_DEPTH_CLASSES)
    return "scopes, methods, buckets or depth classes out of range";
  const std::uint64_t cells_bytes = std::uint64_t{h.scopes} * h.methods * h.cell_size;
  if (h.slot_size % 8 != 0 || h.slot_size < h.slot_header_size + cells_bytes)
    return "slot_size " + std::to_string(h.slot_size);
  if (h.slots == 0 || h.slots > kReportMaxSlots || h.slots_used == 0 || h.slots_used > h.slots)
    return "slots " + std::to_string(h.slots) + ", used " + std::to_string(h.slots_used);
  const std::uint64_t need = h.header_size + std::uint64_t{h.slots} * h.slot_size;
  if (need > file_bytes || h.total_size != file_bytes)
    return "sizes say " + std::to_string(need) + " bytes, the file has " + std::to_string(file_bytes);
  if (std::memchr(h.name, '\0', sizeof h.name) == nullptr) return "name not terminated";
  return "";
}

// Adds one slot's cells to `out`; false when its writer stayed busy.
inline bool AddSlot(const unsigned char* base, const zcal_report_header& h, std::uint32_t index,
                    ReportCounts& out, bool& shared) {
  const std::uint64_t slot = h.header_size + std::uint64_t{index} * h.slot_size;
  shared = (Load32(base, slot + offsetof(zcal_report_slot, flags)) & ZCAL_REPORT_SLOT_SHARED) != 0;
  const unsigned scopes = std::min<unsigned>(h.scopes, ZCAL_REPORT_SCOPES);
  const unsigned methods = std::min<unsigned>(h.methods, ZCAL_REPORT_METHODS);
  for (int attempt = 0; attempt < kReportRetries; ++attempt) {
    const std::uint64_t s1 = Load(base, slot);
    if (!shared && (s1 & 1) != 0) continue;
    ReportCounts copy{};
    for (unsigned s = 0; s < scopes; ++s) {
      for (unsigned m = 0; m < methods; ++m) {
        const std::uint64_t cell =
            slot + h.slot_header_size + (std::uint64_t{s} * h.methods + m) * h.cell_size;
        // Word by word: every field of a cell is a uint64_t counter.
        auto* words = reinterpret_cast<std::uint64_t*>(&copy.cells[s][m]);
        for (std::size_t w = 0; w < sizeof(zcal_report_cell) / 8; ++w) words[w] = Load(base, cell + 8 * w);
      }
    }
    if (!shared && __atomic_load_n(reinterpret_cast<const std::uint64_t*>(base + slot),
                                   __ATOMIC_RELAXED) != s1)
      continue;
    for (unsigned s = 0; s < scopes; ++s) {
      for (unsigned m = 0; m < methods; ++m) {
        const auto* from = reinterpret_cast<const std::uint64_t*>(&copy.cells[s][m]);
        auto* to = reinterpret_cast<std::uint64_t*>(&out.cells[s][m]);
        for (std::size_t w = 0; w < sizeof(zcal_report_cell) / 8; ++w) to[w] += from[w];
      }
    }
    return true;
  }
  return false;
}

}  // namespace report_detail

// Reads the report object open as `fd` once (`name` for messages); closes
// `fd`. An agent holds an object open like this while its owner closes it.
inline ReportSnapshot ReadReportFd(int fd, const std::string& name) {
  ReportSnapshot snap;
  struct stat st {};
  if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode) || st.st_size < static_cast<off_t>(sizeof(zcal_report_header)) ||
      static_cast<std::uint64_t>(st.st_size) > kReportMaxBytes) {
    close(fd);
    snap.error = name + ": not a file of a report's size";
    return snap;
  }
  const auto bytes = static_cast<std::uint64_t>(st.st_size);
  void* map = mmap(nullptr, bytes, PROT_READ, MAP_SHARED, fd, 0);
  close(fd);
  if (map == MAP_FAILED) {
    snap.error = name + ": mmap: " + std::strerror(errno);
    return snap;
  }
  const auto* base = static_cast<const unsigned char*>(map);
  // Word by word with acquire loads: the magic (word 0) is stored last,
  // and slots_used, flags and closed_ns change while the owner runs.
  zcal_report_header h{};
  std::uint64_t words[sizeof h / 8];
  for (std::size_t w = 0; w < sizeof h / 8; ++w) words[w] = report_detail::Load(base, 8 * w);
  std::memcpy(&h, words, sizeof h);
  snap.error = report_detail::Validate(h, bytes);
  if (snap.error.empty()) {
    snap.owner_pid = h.owner_pid;
    snap.generation = h.generation;
    snap.flags = h.flags;
    snap.slots_used = h.slots_used;
    snap.abi_minor = h.abi_minor;
    snap.name.assign(h.name, strnlen(h.name, sizeof h.name));
    for (std::uint32_t i = 0; i < h.slots_used && snap.error.empty(); ++i) {
      bool shared = false;
      ReportCounts slot{};
      if (!report_detail::AddSlot(base, h, i, slot, shared)) {
        snap.error = name + ": slot " + std::to_string(i) + " stayed busy";
        break;
      }
      for (int s = 0; s < ZCAL_REPORT_SCOPES; ++s) {
        for (int m = 0; m < ZCAL_REPORT_METHODS; ++m) {
          const auto* from = reinterpret_cast<const std::uint64_t*>(&slot.cells[s][m]);
          auto* to = reinterpret_cast<std::uint64_t*>(&snap.counts.cells[s][m]);
          auto* to_shared = reinterpret_cast<std::uint64_t*>(&snap.shared.cells[s][m]);
          for (std::size_t w = 0; w < sizeof(zcal_report_cell) / 8; ++w) {
            to[w] += from[w];
            if (shared) to_shared[w] += from[w];
          }
        }
      }
    }
  } else {
    snap.error = name + ": " + snap.error;
  }
  munmap(map, bytes);
  return snap;
}

// Reads the report object `name` ("/zcal-report-<pid>") once.
inline ReportSnapshot ReadReport(const std::string& name) {
  const int fd = shm_open(name.c_str(), O_RDONLY | O_CLOEXEC | O_NOFOLLOW, 0);
  if (fd < 0) {
    ReportSnapshot snap;
    snap.error = name + ": " + std::strerror(errno);
    return snap;
  }
  return ReadReportFd(fd, name);
}

inline std::string ReportName(pid_t pid) { return ZCAL_REPORT_PREFIX + std::to_string(pid); }

// Opens this process's report for one test (zcal_report_open's status in
// rc()), and closes it at the end of the scope.
class OpenReport {
 public:
  explicit OpenReport(const char* name) : rc_(zcal_report_open(name)) {}
  OpenReport(const OpenReport&) = delete;
  OpenReport& operator=(const OpenReport&) = delete;
  ~OpenReport() { zcal_report_close(); }
  int rc() const { return rc_; }

 private:
  int rc_;
};

}  // namespace zcal::test
