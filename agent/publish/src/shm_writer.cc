#include "zcal/agent/publish/shm_writer.h"

#include <fcntl.h>
#include <grp.h>
#include <pwd.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstddef>
#include <cstring>
#include <string_view>
#include <utility>
#include <vector>

#include "shm_encode.h"
#include "zcal/common/atomic_file.h"
#include "zcal/common/clock.h"
#include "zcal/common/unique_fd.h"
#include "zcal/common/errno_text.h"
#include "zcal/common/identity.h"
#include "zcal/zcal.h"

namespace zcal::agent {
namespace {

static_assert(sizeof(zcal_shm_entry) % 8 == 0 && sizeof(zcal_shm_header) % 8 == 0);

constexpr const char* kShmDir = "/dev/shm";


// Marks a segment this agent's user owns as replaced, so that its readers
// reopen the name. Best effort: a segment that is not a valid zcal segment
// has no readers to tell.
void Retire(int fd) {
  struct stat st {};
  if (fstat(fd, &st) != 0 || st.st_size < static_cast<off_t>(sizeof(zcal_shm_header)))
    return;
  void* base = mmap(nullptr, sizeof(zcal_shm_header), PROT_READ | PROT_WRITE,
                    MAP_SHARED, fd, 0);
  if (base == MAP_FAILED) return;
  auto* hdr = static_cast<zcal_shm_header*>(base);
  if (__atomic_load_n(&hdr->magic, __ATOMIC_ACQUIRE) == ZCAL_MAGIC &&
      hdr->abi_major == ZCAL_ABI_MAJOR) {
    std::uint64_t seq = __atomic_load_n(&hdr->seq, __ATOMIC_RELAXED);
    // An odd counter means the old writer died mid-publish.
    seq += (seq & 1u) ? 1u : 2u;
    StoreRelease(&hdr->seq, seq - 1);
    StoreRelease(&hdr->flags, __atomic_load_n(&hdr->flags, __ATOMIC_RELAXED) |
                                  ZCAL_FLAG_RETIRED);
    StoreRelease(&hdr->generation,
                 __atomic_load_n(&hdr->generation, __ATOMIC_RELAXED) + 1);
    StoreRelease(&hdr->seq, seq);
  }
  munmap(base, sizeof(zcal_shm_header));
}


std::string ModeText(mode_t mode) {
  return "0" + std::to_string((mode >> 6) & 7) + std::to_string((mode >> 3) & 7) +
         std::to_string(mode & 7);
}

// The options a segment can be made of; the group resolved to its gid.
Result<std::optional<gid_t>> CheckOptions(const ShmWriterOptions& options) {
  if (auto ok = ValidateSegmentName(options.name); !ok) return tl::unexpected(ok.error());
  const std::string& name = options.name;
  if (!options.clock) return Fail(Errc::kInvalidArgument, "segment " + name + ": no clock given");
  if (options.capacity < 1 || options.capacity > ZCAL_MAX_CAPACITY) {
    return Fail(Errc::kInvalidArgument,
                "segment " + name + ": capacity " + std::to_string(options.capacity) +
                    " is out of range: use 1 to " + std::to_string(ZCAL_MAX_CAPACITY));
  }
  if ((options.mode & ~static_cast<mode_t>(0777)) != 0 || (options.mode & 0002) != 0) {
    return Fail(Errc::kInvalidArgument,
                "segment " + name + ": mode " + ModeText(options.mode) +
                    " is refused: only permission bits, and not writable by "
                    "others (any user could rewrite the thresholds)");
  }
  if (!options.group) return std::optional<gid_t>();
  auto resolved = common::ResolveGroup(*options.group);
  if (!resolved) {
    return Fail(resolved.error().code, "segment " + name + ": " + resolved.error().message);
  }
  return std::optional<gid_t>(*resolved);
}

// Refuses what is at the name unless it is a regular file of this user:
// a link or another user's file could redirect or hijack the agent's
// writes.
Result<void> CheckOccupant(const struct stat& st, const std::string& name,
                           const std::string& path) {
  if (S_ISLNK(st.st_mode)) {
    return Fail(Errc::kPermission,
                "segment " + name + ": " + path +
                    " is a symbolic link; refusing to follow it (a planted "
                    "link would redirect the agent's writes). Remove it, or "
                    "configure another segment name");
  }
  if (!S_ISREG(st.st_mode)) {
    return Fail(Errc::kPermission, "segment " + name + ": " + path +
                                       " is not a regular file; remove it, "
                                       "or configure another segment name");
  }
  if (st.st_uid != geteuid()) {
    return Fail(Errc::kPermission,
                "segment " + name + ": " + path + " belongs to uid " +
                    std::to_string(st.st_uid) + " (" + common::UserName(st.st_uid) +
                    "), not to this agent's uid " + std::to_string(geteuid()) +
                    "; refusing to take over another user's segment. Remove "
                    "it, or configure another segment name");
  }
  return {};
}

// The segment now at the name, to retire once the new one replaces it;
// empty when there is none (or it changed under us: nothing to retire).
Result<common::UniqueFd> OpenOccupant(const std::string& name, const std::string& path) {
  common::UniqueFd dir(open(kShmDir, O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  if (!dir) {
    return Fail(Errc::kIo, "segment " + name + ": cannot open " + kShmDir + ": " +
                               common::ErrnoText(errno) + " (is /dev/shm mounted?)");
  }
  const std::string leaf = name.substr(1);
  struct stat st {};
  if (fstatat(dir.get(), leaf.c_str(), &st, AT_SYMLINK_NOFOLLOW) != 0) {
    if (errno == ENOENT) return common::UniqueFd();
    return Fail(Errc::kIo, "segment " + name + ": cannot inspect " + path + ": " +
                               common::ErrnoText(errno));
  }
  if (auto ok = CheckOccupant(st, name, path); !ok) return tl::unexpected(ok.error());
  common::UniqueFd existing(
      openat(dir.get(), leaf.c_str(), O_RDWR | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK));
  struct stat now {};
  if (existing && fstat(existing.get(), &now) == 0 && now.st_ino == st.st_ino &&
      now.st_dev == st.st_dev && now.st_uid == geteuid() && S_ISREG(now.st_mode)) {
    return existing;
  }
  return common::UniqueFd();
}

// The new segment's file under a temporary name, every page reserved: not
// sized sparsely, since on a full tmpfs the first store into a page that
// has none kills the process with SIGBUS, at creation or later when the
// table grows into an untouched page. tmpfs needs no flush.
Result<std::unique_ptr<common::AtomicFile>> ReserveFile(const ShmWriterOptions& options,
                                                        std::optional<gid_t> gid,
                                                        std::size_t bytes) {
  const std::string& name = options.name;
  common::AtomicFileOptions file_options;
  file_options.mode = options.mode;
  file_options.group = gid;
  file_options.durable = false;
  auto file = common::AtomicFile::Create(std::string(kShmDir) + name, file_options);
  if (!file) return Fail(file.error().code, "segment " + name + ": " + file.error().message);
  if (const int err = posix_fallocate((*file)->fd(), 0, static_cast<off_t>(bytes)); err != 0) {
    return Fail(Errc::kIo, "segment " + name + ": cannot reserve " + std::to_string(bytes) +
                               " bytes in " + kShmDir + ": " + common::ErrnoText(err) +
                               (err == ENOSPC ? "; /dev/shm is full (df /dev/shm)" : ""));
  }
  return file;
}

}  // namespace

Result<std::unique_ptr<ShmWriter>> ShmWriter::Create(const ShmWriterOptions& options) {
  return CreateHolding(options, nullptr);
}

void ShmWriter::WriteHeader(void* base, const ShmWriterOptions& options, std::uint64_t created,
                            const Initial* initial) {
  // Nobody can see the file before the rename, so plain stores suffice
  // except for the magic, which readers take as "initialized".
  auto* hdr = static_cast<zcal_shm_header*>(base);
  hdr->abi_major = ZCAL_ABI_MAJOR;
  hdr->abi_minor = ZCAL_ABI_MINOR;
  hdr->header_size = sizeof(zcal_shm_header);
  hdr->entry_size = sizeof(zcal_shm_entry);
  hdr->capacity = options.capacity;
  // A generation that starts at the creation time never repeats one that a
  // reader cached from an earlier segment of the same name.
  hdr->generation = created;
  hdr->heartbeat_ns = created;
  hdr->created_ns = created;
  hdr->agent_pid = static_cast<std::uint32_t>(getpid());
  if (initial != nullptr) {
    // A reader that opens the name right after the rename finds the table.
    std::memcpy(static_cast<char*>(base) + sizeof(zcal_shm_header), initial->table.data(),
                initial->table.size() * sizeof(zcal_shm_entry));
    hdr->count = static_cast<std::uint32_t>(initial->table.size());
    hdr->flags = initial->flags;
    hdr->host_default_source = initial->host_default;
    hdr->publish_time_ns = created;
  }
  StoreRelease(&hdr->magic, static_cast<std::uint64_t>(ZCAL_MAGIC));
}

// The new segment is made whole under a temporary name and renamed into
// place, so that a reader never maps a half-initialised one.
Result<std::unique_ptr<ShmWriter>> ShmWriter::CreateHolding(const ShmWriterOptions& options,
                                                            const Initial* initial) {
  const Result<std::optional<gid_t>> gid = CheckOptions(options);
  if (!gid) return tl::unexpected(gid.error());
  const std::string& name = options.name;
  Result<common::UniqueFd> old = OpenOccupant(name, std::string(kShmDir) + name);
  if (!old) return tl::unexpected(old.error());
  const std::size_t bytes =
      sizeof(zcal_shm_header) + std::size_t{options.capacity} * sizeof(zcal_shm_entry);
  auto file = ReserveFile(options, *gid, bytes);
  if (!file) return tl::unexpected(file.error());
  void* base = mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_SHARED, (*file)->fd(), 0);
  if (base == MAP_FAILED) {
    return Fail(Errc::kIo, "segment " + name + ": cannot map it: " + common::ErrnoText(errno));
  }
  const std::uint64_t created = options.clock->Wall();
  WriteHeader(base, options, created, initial);
  if (Result<void> placed = (*file)->Commit(); !placed) {
    munmap(base, bytes);
    return Fail(placed.error().code, "segment " + name + ": " + placed.error().message);
  }
  // Retire only after the rename, so that readers reopening the name find
  // the new segment.
  if (*old) Retire(old->get());
  auto writer = std::unique_ptr<ShmWriter>(
      new ShmWriter(options, (*file)->TakeFd(), base, bytes, created));
  if (initial != nullptr) writer->Hold(*initial, created);
  return writer;
}

void ShmWriter::Hold(Initial initial, std::uint64_t publish_time_ns) {
  table_ = std::move(initial.table);
  flags_ = initial.flags;
  host_default_ = initial.host_default;
  publish_time_ns_ = publish_time_ns;
  published_ = true;
}

Result<void> ShmWriter::Grow(Initial initial) {
  const std::uint32_t from = options_.capacity;
  ShmWriterOptions grown = options_;
  while (grown.capacity < initial.table.size()) {
    grown.capacity = std::min<std::uint32_t>(grown.capacity * 2, ZCAL_MAX_CAPACITY);
  }
  auto fresh = CreateHolding(grown, &initial);
  if (!fresh) {
    return Fail(fresh.error().code,
                "growing it from " + std::to_string(from) + " to " +
                    std::to_string(grown.capacity) + " entries for a table of " +
                    std::to_string(initial.table.size()) + " failed: " + fresh.error().message +
                    "; it keeps its previous table, and the next publish tries again");
  }
  Adopt(**fresh);
  options_.capacity = grown.capacity;
  Hold(std::move(initial), publish_time_ns_);
  ++grows_;
  return {};
}

ShmWriter::ShmWriter(ShmWriterOptions options, common::UniqueFd fd, void* base,
                     std::size_t bytes, std::uint64_t created)
    : options_(std::move(options)),
      path_(std::string(kShmDir) + options_.name),
      fd_(std::move(fd)),
      base_(base),
      bytes_(bytes),
      generation_(created),
      created_ns_(created),
      heartbeat_ns_(created),
      pid_(static_cast<std::uint32_t>(getpid())) {}

ShmWriter::~ShmWriter() { munmap(base_, bytes_); }

std::optional<off_t> ShmWriter::FileSize() const {
  struct stat st {};
  if (fstat(fd_.get(), &st) != 0) return std::nullopt;
  return st.st_size;
}

bool ShmWriter::Covered() const {
  const std::optional<off_t> size = FileSize();
  return size && *size >= static_cast<off_t>(bytes_);
}

Result<void> ShmWriter::Publish(std::span<const PublishedEntry> entries, bool stale,
                                HostDefaultSource host_default) {
  if (entries.size() > ZCAL_MAX_CAPACITY) {
    return Fail(Errc::kInvalidArgument,
                std::to_string(entries.size()) + " entries exceed the largest segment (" +
                    std::to_string(ZCAL_MAX_CAPACITY) + " entries) for segment " + name() +
                    ": keep fewer peers (peers.keep)");
  }
  auto encoded = EncodeTable(entries, name());
  if (!encoded) return tl::unexpected(encoded.error());
  if (!Covered()) {
    return Fail(Errc::kIo, "segment " + name() + ": " + path_ +
                               " is shorter than the writer's mapping of " +
                               std::to_string(bytes_) +
                               " bytes; nothing written (the next check recreates it)");
  }
  auto* hdr = static_cast<zcal_shm_header*>(base_);
  if (__atomic_load_n(&hdr->flags, __ATOMIC_ACQUIRE) & ZCAL_FLAG_RETIRED) {
    return Fail(Errc::kBusy,
                "segment " + name() +
                    " was replaced by another agent's segment: this agent's "
                    "publications no longer reach readers. Run one agent per "
                    "segment name");
  }
  const std::uint32_t flags = (stale ? ZCAL_FLAG_STALE : std::uint32_t{0}) | takes_reports_;
  if (encoded->size() > options_.capacity) {
    return Grow(Initial{std::move(*encoded), flags, static_cast<std::uint32_t>(host_default)});
  }
  table_ = std::move(*encoded);
  flags_ = flags;
  host_default_ = static_cast<std::uint32_t>(host_default);
  published_ = true;
  Store(flags_);
  return {};
}

void ShmWriter::SetTakesReports(bool takes) {
  const std::uint32_t bit = takes ? ZCAL_FLAG_TAKES_REPORTS : std::uint32_t{0};
  if (bit == takes_reports_) return;
  takes_reports_ = bit;
  flags_ = (flags_ & ~ZCAL_FLAG_TAKES_REPORTS) | bit;
  if (published_) Store(flags_);
}

void ShmWriter::Store(std::uint32_t flags) {
  auto* hdr = static_cast<zcal_shm_header*>(base_);
  auto* slots = reinterpret_cast<std::uint64_t*>(static_cast<char*>(base_) +
                                                 sizeof(zcal_shm_header));
  const std::uint64_t now = options_.clock->Wall();
  // The odd value must be visible before any data word: the release
  // stores below order it.
  __atomic_store_n(&hdr->seq, seq_ + 1, __ATOMIC_RELAXED);
  constexpr std::size_t kWords = sizeof(zcal_shm_entry) / 8;
  for (std::size_t i = 0; i < table_.size(); ++i) {
    std::uint64_t words[kWords];
    std::memcpy(words, &table_[i], sizeof words);
    for (std::size_t w = 0; w < kWords; ++w) StoreRelease(&slots[i * kWords + w], words[w]);
  }
  StoreRelease(&hdr->count, static_cast<std::uint32_t>(table_.size()));
  StoreRelease(&hdr->flags, flags);
  StoreRelease(&hdr->host_default_source, host_default_);
  StoreRelease(&hdr->publish_time_ns, now);
  ++generation_;
  StoreRelease(&hdr->generation, generation_);
  seq_ += 2;
  StoreRelease(&hdr->seq, seq_);
  StoreRelease(&hdr->heartbeat_ns, now);
  publish_time_ns_ = now;
  heartbeat_ns_ = now;
}

bool ShmWriter::Heartbeat() {
  // A file cut shorter than the mapping faults (SIGBUS) on the first store
  // past its end: Heal recreates it instead.
  if (!Covered()) return false;
  const std::uint64_t now = options_.clock->Wall();
  StoreRelease(&static_cast<zcal_shm_header*>(base_)->heartbeat_ns, now);
  heartbeat_ns_ = now;
  return true;
}

}  // namespace zcal::agent
