#include "report_object.h"

#include <algorithm>
#include <array>
#include <climits>
#include <cstddef>
#include <cstring>
#include <memory>

#include "bus_guard.h"
#include "zcal/zcal.h"

namespace zcal::agent::apps {
namespace {

constexpr std::size_t kCellWords = sizeof(zcal_report_cell) / 8;
constexpr unsigned kScopes = ZCAL_REPORT_SCOPES;
// Method codes beyond the calibrator's methods are not counted.
constexpr unsigned kMethods = 5;
static_assert(kMethods <= ZCAL_REPORT_METHODS);
static_assert(ZCAL_REPORT_SCOPES == kAppScopes);
static_assert(ZCAL_REPORT_SIZE_BUCKETS == kAppSizeBuckets);
static_assert(ZCAL_DEPTH_CLASSES == kAppDepthClasses);

using Raw = std::array<std::array<std::array<std::uint64_t, kCellWords>, kMethods>, kScopes>;

std::uint64_t Load(const unsigned char* base, std::uint64_t offset) {
  // The owner writes while we read: each word once, atomically.
  return __atomic_load_n(reinterpret_cast<const std::uint64_t*>(base + offset), __ATOMIC_ACQUIRE);
}
std::uint64_t LoadRelaxed(const unsigned char* base, std::uint64_t offset) {
  return __atomic_load_n(reinterpret_cast<const std::uint64_t*>(base + offset), __ATOMIC_RELAXED);
}

Result<ObjectHeader, ObjectError> Refuse(AppRefusal kind, std::string text) {
  return Fail(ObjectError(kind, std::move(text)));
}

bool IsLabelByte(unsigned char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' ||
         c == '.' || c == ':' || c == '-';
}

std::optional<std::string> CheckGeometry(const zcal_report_header& h, std::uint64_t file_bytes) {
  if (h.header_size < sizeof(zcal_report_header) || h.header_size % 8 != 0)
    return "header_size " + std::to_string(h.header_size);
  if (h.cell_size < sizeof(zcal_report_cell) || h.cell_size % 8 != 0)
    return "cell_size " + std::to_string(h.cell_size);
  if (h.slot_header_size < offsetof(zcal_report_slot, cells) || h.slot_header_size % 8 != 0)
    return "slot_header_size " + std::to_string(h.slot_header_size);
  if (h.scopes == 0 || h.methods == 0 || h.size_buckets != ZCAL_REPORT_SIZE_BUCKETS ||
      h.depth_classes != ZCAL_DEPTH_CLASSES)
    return "scopes " + std::to_string(h.scopes) + ", methods " + std::to_string(h.methods) +
           ", size buckets " + std::to_string(h.size_buckets) + ", depth classes " +
           std::to_string(h.depth_classes);
  // At most 2^16 * 2^16 * 2^32: no overflow in 64 bits.
  const std::uint64_t cells_bytes = std::uint64_t{h.scopes} * h.methods * h.cell_size;
  if (h.slot_size % 8 != 0 || h.slot_size < h.slot_header_size ||
      h.slot_size - h.slot_header_size < cells_bytes)
    return "slot_size " + std::to_string(h.slot_size);
  if (h.slots == 0 || h.slots > AppsReader::kMaxSlots || h.slots_used == 0 ||
      h.slots_used > h.slots)
    return "slots " + std::to_string(h.slots) + ", used " + std::to_string(h.slots_used);
  const std::uint64_t need = h.header_size + std::uint64_t{h.slots} * h.slot_size;
  if (need > file_bytes || h.total_size != file_bytes)
    return "sizes say " + std::to_string(need) + " bytes, total_size " +
           std::to_string(h.total_size) + ", the file has " + std::to_string(file_bytes);
  if (h.owner_pid == 0 || h.owner_pid > INT_MAX)
    return "owner_pid " + std::to_string(h.owner_pid);
  if (h.generation == 0) return "generation 0";
  return std::nullopt;
}

// One slot's known cells into `out`; false when its seqlock stayed busy.
bool CopySlot(const unsigned char* base, const ObjectHeader& h, std::uint32_t index, int attempts,
              Raw& out) {
  const std::uint64_t slot = h.header_size + std::uint64_t{index} * h.slot_size;
  const unsigned scopes = std::min<unsigned>(h.scopes, kScopes);
  const unsigned methods = std::min<unsigned>(h.methods, kMethods);
  // Slot 0 (several writers) never has a seqlock; minor 1 writers leave
  // every seq 0, so the first copy holds.
  const bool plain = index == 0;
  for (int attempt = 0; attempt < attempts; ++attempt) {
    const std::uint64_t s1 = Load(base, slot);
    if (!plain && (s1 & 1) != 0) continue;
    for (unsigned s = 0; s < scopes; ++s) {
      for (unsigned m = 0; m < methods; ++m) {
        const std::uint64_t cell =
            slot + h.slot_header_size + (std::uint64_t{s} * h.methods + m) * h.cell_size;
        for (std::size_t w = 0; w < kCellWords; ++w) out[s][m][w] = Load(base, cell + 8 * w);
      }
    }
    if (plain || LoadRelaxed(base, slot) == s1) return true;
  }
  return false;
}

// CopySlot under the SIGBUS guard (bus_guard.h): no destructor in between.
struct SlotCopy {
  const unsigned char* base;
  const ObjectHeader* header;
  std::uint32_t index;
  int attempts;
  Raw* out;
  bool copied;
};
void CopySlotGuarded(void* context) {
  auto* c = static_cast<SlotCopy*>(context);
  c->copied = CopySlot(c->base, *c->header, c->index, c->attempts, *c->out);
}

struct HeaderCopy {
  const unsigned char* base;
  std::uint64_t* words;
  std::size_t count;
};
void CopyHeaderGuarded(void* context) {
  auto* c = static_cast<HeaderCopy*>(context);
  for (std::size_t w = 0; w < c->count; ++w) c->words[w] = Load(c->base, 8 * w);
}

ObjectError Shrunk() {
  return ObjectError(AppRefusal::kSize, "the file shrank while it was read (SIGBUS)");
}

AppCounters ToCounters(const std::array<std::uint64_t, kCellWords>& words) {
  zcal_report_cell cell;
  static_assert(sizeof cell == sizeof words);
  std::memcpy(&cell, words.data(), sizeof cell);
  AppCounters c;
  for (std::size_t d = 0; d < kAppDepthClasses; ++d)
    for (std::size_t z = 0; z < 2; ++z)
      for (std::size_t r = 0; r < kAppReasons; ++r) c.answers[d][z][r] = cell.answers[d][z][r];
  c.bytes = {cell.bytes[0], cell.bytes[1]};
  c.completions = cell.completions;
  c.copied = cell.copied;
  std::copy(std::begin(cell.sizes), std::end(cell.sizes), c.sizes.begin());
  return c;
}

}  // namespace

Result<std::string, ObjectError> SanitiseName(std::string_view raw) {
  const std::size_t end = raw.find('\0');
  if (end == std::string_view::npos)
    return Fail(ObjectError(AppRefusal::kName, "name not terminated by a NUL"));
  const std::string_view name = raw.substr(0, end);
  if (name.empty()) return Fail(ObjectError(AppRefusal::kName, "empty name"));
  std::string label;
  for (const char ch : name) {
    const auto c = static_cast<unsigned char>(ch);
    if (c < 0x20 || c == 0x7f || c == '/')
      return Fail(ObjectError(AppRefusal::kName, "name holds byte " + std::to_string(c)));
    label.push_back(IsLabelByte(c) ? ch : '_');
  }
  return label;
}

Result<ObjectHeader, ObjectError> ReadHeader(const unsigned char* base, std::uint64_t file_bytes) {
  zcal_report_header h{};
  std::array<std::uint64_t, sizeof h / 8> words{};
  HeaderCopy copy{base, words.data(), words.size()};
  if (!CopyGuarded(CopyHeaderGuarded, &copy)) return Fail(Shrunk());
  std::memcpy(&h, words.data(), sizeof h);
  if (h.magic != ZCAL_REPORT_MAGIC)
    return Refuse(AppRefusal::kMagic, "no report magic (not a report, or one being created)");
  if (h.abi_major != ZCAL_REPORT_ABI_MAJOR)
    return Refuse(AppRefusal::kVersion, "report ABI major " + std::to_string(h.abi_major) +
                                            ", this agent reads " +
                                            std::to_string(ZCAL_REPORT_ABI_MAJOR));
  if (std::optional<std::string> bad = CheckGeometry(h, file_bytes))
    return Refuse(AppRefusal::kLayout, *bad);
  Result<std::string, ObjectError> name = SanitiseName(std::string_view(h.name, sizeof h.name));
  if (!name) return Fail(std::move(name.error()));
  ObjectHeader out;
  out.header_size = h.header_size;
  out.slot_size = h.slot_size;
  out.slot_header_size = h.slot_header_size;
  out.cell_size = h.cell_size;
  out.scopes = h.scopes;
  out.methods = h.methods;
  out.slots_used = h.slots_used;
  out.owner_pid = h.owner_pid;
  out.generation = h.generation;
  out.closed = (h.flags & ZCAL_REPORT_FLAG_CLOSED) != 0;
  out.name = std::move(*name);
  return out;
}

Result<AppCells, ObjectError> ReadCounts(const unsigned char* base, const ObjectHeader& header,
                                         int attempts) {
  auto sum = std::make_unique<Raw>();
  auto slot = std::make_unique<Raw>();
  for (std::uint32_t i = 0; i < header.slots_used; ++i) {
    *slot = Raw{};
    SlotCopy copy{base, &header, i, attempts, slot.get(), false};
    if (!CopyGuarded(CopySlotGuarded, &copy)) return Fail(Shrunk());
    if (!copy.copied)
      return Fail(ObjectError(AppRefusal::kTorn, "slot " + std::to_string(i) + " stayed busy"));
    for (unsigned s = 0; s < kScopes; ++s)
      for (unsigned m = 0; m < kMethods; ++m)
        for (std::size_t w = 0; w < kCellWords; ++w) (*sum)[s][m][w] += (*slot)[s][m][w];
  }
  AppCells cells;
  for (unsigned s = 0; s < kScopes; ++s) {
    for (unsigned m = 0; m < kMethods; ++m) {
      AppCounters c = ToCounters((*sum)[s][m]);
      if (c.Empty()) continue;
      cells[AppCellKey{static_cast<AppScope>(s), static_cast<calibrator::Method>(m)}] = c;
    }
  }
  return cells;
}

std::uint64_t LoadBytes(const ObjectHeader& header) {
  const std::uint64_t cells = std::uint64_t{std::min<unsigned>(header.scopes, kScopes)} *
                              std::min<unsigned>(header.methods, kMethods);
  return std::uint64_t{header.slots_used} * (8 + cells * kCellWords * 8);
}

bool WentBackwards(const AppCells& last, const AppCells& now) {
  for (const auto& [key, before] : last) {
    const auto it = now.find(key);
    const AppCounters after = it == now.end() ? AppCounters{} : it->second;
    // Since() gives 0 where a word went backwards: a word below its old
    // value shows as Since + before != after.
    AppCounters grown = after.Since(before);
    grown += before;
    if (grown != after) return true;
  }
  return false;
}

}  // namespace zcal::agent::apps
