// The writer's check of its own segment, and the repair: someone with
// write access (the agent's user, root) may truncate, remove, replace or
// overwrite the file while the agent runs; readers then reject it or keep a
// table nobody refreshes, so the agent puts a whole new segment in place.
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstddef>
#include <cstdio>
#include <cstring>
#include <utility>

#include "shm_encode.h"
#include "zcal/agent/publish/shm_writer.h"
#include "zcal/common/clock.h"
#include "zcal/common/errno_text.h"

namespace zcal::agent {
namespace {


// The header's fields, to name the first one that differs.
struct Field {
  const char* name;
  std::size_t offset;
  std::size_t size;
};
#define ZCAL_FIELD(f) \
  Field { #f, offsetof(zcal_shm_header, f), sizeof(zcal_shm_header::f) }
constexpr Field kFields[] = {
    ZCAL_FIELD(magic),        ZCAL_FIELD(abi_major),     ZCAL_FIELD(abi_minor),
    ZCAL_FIELD(header_size),  ZCAL_FIELD(entry_size),    ZCAL_FIELD(capacity),
    ZCAL_FIELD(seq),          ZCAL_FIELD(generation),    ZCAL_FIELD(publish_time_ns),
    ZCAL_FIELD(heartbeat_ns), ZCAL_FIELD(count),         ZCAL_FIELD(flags),
    ZCAL_FIELD(agent_pid),    ZCAL_FIELD(host_default_source), ZCAL_FIELD(created_ns),
    ZCAL_FIELD(reserved)};
#undef ZCAL_FIELD

std::string ValueText(const Field& field, const unsigned char* bytes) {
  const std::size_t size = field.size;
  if (size > 8) {
    for (std::size_t i = 0; i < size; ++i)
      if (bytes[i] != 0) return "not zero";
    return "zero";
  }
  std::uint64_t value = 0;
  std::memcpy(&value, bytes, size);  // host order, as the segment stores it
  if (std::strcmp(field.name, "magic") == 0) {
    char hex[24];
    std::snprintf(hex, sizeof hex, "0x%016llx", static_cast<unsigned long long>(value));
    return hex;
  }
  return std::to_string(value);
}

// Copies `words` 8-byte words from the mapping. Relaxed atomic loads: other
// processes may store into it at any time, and readers' loads are atomic.
void CopyWords(const void* from, void* to, std::size_t words) {
  const auto* src = static_cast<const std::uint64_t*>(from);
  auto* dst = static_cast<std::uint64_t*>(to);
  for (std::size_t i = 0; i < words; ++i) dst[i] = __atomic_load_n(&src[i], __ATOMIC_RELAXED);
}

}  // namespace

SegmentHealth ShmWriter::Inspect() const {
  SegmentHealth health;
  struct stat mapped {};
  if (fstat(fd_.get(), &mapped) != 0) return health;  // cannot tell: leave it be
  const auto size = static_cast<std::uint64_t>(mapped.st_size);
  if (size < bytes_) {
    health.damage = SegmentDamage::kTruncated;
    health.found = path_ + " is " + std::to_string(size) + " bytes, shorter than the " +
                   std::to_string(bytes_) + " the agent wrote";
    return health;
  }
  struct stat named {};
  if (lstat(path_.c_str(), &named) != 0) {
    if (errno != ENOENT) return health;
    health.damage = SegmentDamage::kRemoved;
    health.found = path_ + " was removed";
    return health;
  }
  if (named.st_dev != mapped.st_dev || named.st_ino != mapped.st_ino) {
    const auto* hdr = static_cast<const zcal_shm_header*>(base_);
    // Another writer that takes the name over retires the segment it
    // replaces (one agent per name; Publish says so): not for this writer
    // to undo. A file put there otherwise leaves this one unretired.
    if (__atomic_load_n(&hdr->magic, __ATOMIC_ACQUIRE) == ZCAL_MAGIC &&
        (__atomic_load_n(&hdr->flags, __ATOMIC_ACQUIRE) & ZCAL_FLAG_RETIRED))
      return health;
    health.damage = SegmentDamage::kReplaced;
    health.found = path_ + " is another file than the one the agent wrote (inode " +
                   std::to_string(named.st_ino) + ", not " +
                   std::to_string(mapped.st_ino) + ")";
    return health;
  }
  if (size > bytes_) {
    health.damage = SegmentDamage::kResized;
    health.found = path_ + " is " + std::to_string(size) + " bytes, longer than the " +
                   std::to_string(bytes_) + " the agent wrote";
    return health;
  }
  return InspectContents();
}

SegmentHealth ShmWriter::InspectContents() const {
  SegmentHealth health;
  zcal_shm_header expected{};
  expected.magic = ZCAL_MAGIC;
  expected.abi_major = ZCAL_ABI_MAJOR;
  expected.abi_minor = ZCAL_ABI_MINOR;
  expected.header_size = sizeof(zcal_shm_header);
  expected.entry_size = sizeof(zcal_shm_entry);
  expected.capacity = options_.capacity;
  expected.seq = seq_;
  expected.generation = generation_;
  expected.publish_time_ns = publish_time_ns_;
  expected.heartbeat_ns = heartbeat_ns_;
  expected.count = static_cast<std::uint32_t>(table_.size());
  expected.flags = flags_;
  expected.agent_pid = pid_;
  expected.host_default_source = host_default_;
  expected.created_ns = created_ns_;
  zcal_shm_header seen{};
  CopyWords(base_, &seen, sizeof seen / 8);
  const auto* want = reinterpret_cast<const unsigned char*>(&expected);
  const auto* got = reinterpret_cast<const unsigned char*>(&seen);
  for (const Field& field : kFields) {
    if (std::memcmp(want + field.offset, got + field.offset, field.size) == 0) continue;
    health.damage = SegmentDamage::kHeader;
    health.found = path_ + ": header field " + field.name + " is " +
                   ValueText(field, got + field.offset) + ", the agent wrote " +
                   ValueText(field, want + field.offset);
    return health;
  }
  const char* table = static_cast<const char*>(base_) + sizeof(zcal_shm_header);
  for (std::size_t i = 0; i < table_.size(); ++i) {
    zcal_shm_entry entry{};
    CopyWords(table + i * sizeof entry, &entry, sizeof entry / 8);
    if (std::memcmp(&entry, &table_[i], sizeof entry) == 0) continue;
    health.damage = SegmentDamage::kTable;
    health.found = path_ + ": entry " + std::to_string(i) + " of " +
                   std::to_string(table_.size()) + " differs from what the agent wrote";
    return health;
  }
  return health;
}

SegmentHealth ShmWriter::Heal() {
  SegmentHealth health = Inspect();
  if (health.damage != SegmentDamage::kNone) health.repaired = Recreate();
  return health;
}

Result<void> ShmWriter::Recreate() {
  // The same path as at start: a whole new file renamed over the name, so
  // that a reader opens the damaged one or the new one, never half of one.
  auto fresh = Create(options_);
  if (!fresh) return tl::unexpected(fresh.error());
  Adopt(**fresh);
  if (published_) Store(flags_);
  return {};
}

void ShmWriter::Adopt(ShmWriter& fresh) {
  // The old file, which no longer has the name, is marked retired over its
  // old table, so that its readers reopen the name.
  RetireOwn();
  std::swap(fd_, fresh.fd_);
  std::swap(base_, fresh.base_);
  std::swap(bytes_, fresh.bytes_);
  std::swap(generation_, fresh.generation_);
  std::swap(seq_, fresh.seq_);
  std::swap(created_ns_, fresh.created_ns_);
  std::swap(heartbeat_ns_, fresh.heartbeat_ns_);
  std::swap(publish_time_ns_, fresh.publish_time_ns_);
  // `fresh` now owns the old mapping: destroying it unmaps and closes it.
}

void ShmWriter::RetireOwn() {
  struct stat st {};
  if (fstat(fd_.get(), &st) != 0) return;
  if (static_cast<std::uint64_t>(st.st_size) < bytes_) {
    // Readers still mapping the cut file would fault on its missing pages;
    // grown back (sparse, zeros) they read a header that is not zcal's, or
    // the retired one below, and reopen the name. Only this writer's own
    // file, which no longer has the name.
    // Allocated, not sparse: the stores below would SIGBUS on a full tmpfs.
    if (posix_fallocate(fd_.get(), 0, static_cast<off_t>(bytes_)) != 0) return;
    if (fstat(fd_.get(), &st) != 0 || static_cast<std::uint64_t>(st.st_size) < bytes_) return;
  }
  // Whatever was written over the header: the fields readers validate,
  // then the last table marked retired under the seqlock, so that a reader
  // that had not noticed the damage moves on at its next lookup.
  auto* hdr = static_cast<zcal_shm_header*>(base_);
  StoreRelease(&hdr->abi_major, static_cast<std::uint16_t>(ZCAL_ABI_MAJOR));
  StoreRelease(&hdr->abi_minor, static_cast<std::uint16_t>(ZCAL_ABI_MINOR));
  StoreRelease(&hdr->header_size, static_cast<std::uint32_t>(sizeof(zcal_shm_header)));
  StoreRelease(&hdr->entry_size, static_cast<std::uint32_t>(sizeof(zcal_shm_entry)));
  StoreRelease(&hdr->capacity, options_.capacity);
  StoreRelease(&hdr->agent_pid, pid_);
  StoreRelease(&hdr->created_ns, created_ns_);
  StoreRelease(&hdr->magic, static_cast<std::uint64_t>(ZCAL_MAGIC));
  Store(flags_ | ZCAL_FLAG_RETIRED);
}

}  // namespace zcal::agent
