#include "zcal/agent/publish/shm_writer.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <grp.h>
#include <pwd.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <cerrno>
#include <cmath>
#include <cstddef>
#include <cstring>
#include <ctime>
#include <string_view>
#include <tuple>
#include <utility>
#include <vector>

#include "zcal/common/atomic_file.h"
#include "zcal/common/clock.h"
#include "zcal/common/unique_fd.h"
#include "zcal/common/errno_text.h"
#include "zcal/common/identity.h"
#include "zcal/zcal.h"

namespace zcal::agent {
namespace {

using calibrator::Method;
using calibrator::Reason;
using calibrator::Verdict;

static_assert(static_cast<int>(ScopeKind::kHostDefault) == ZCAL_SCOPE_HOST_DEFAULT);
static_assert(static_cast<int>(ScopeKind::kLoopback) == ZCAL_SCOPE_LOOPBACK);
static_assert(static_cast<int>(ScopeKind::kPeer) == ZCAL_SCOPE_PEER);
static_assert(static_cast<int>(ScopeKind::kInterface) == ZCAL_SCOPE_INTERFACE);
static_assert(static_cast<int>(ScopeKind::kDiscard) == ZCAL_SCOPE_DISCARD);
static_assert(static_cast<int>(HostDefaultSource::kPeers) == ZCAL_HOST_DEFAULT_PEERS);
static_assert(static_cast<int>(HostDefaultSource::kEstimated) == ZCAL_HOST_DEFAULT_ESTIMATED);
static_assert(static_cast<int>(HostDefaultSource::kNoPath) == ZCAL_HOST_DEFAULT_NONE_NO_PATH);
static_assert(static_cast<int>(HostDefaultSource::kIommuTranslates) ==
              ZCAL_HOST_DEFAULT_NONE_IOMMU);
static_assert(static_cast<int>(HostDefaultSource::kIommuUnknown) ==
              ZCAL_HOST_DEFAULT_NONE_IOMMU_UNKNOWN);
static_assert(static_cast<int>(HostDefaultSource::kDisabled) ==
              ZCAL_HOST_DEFAULT_NONE_DISABLED);
static_assert(static_cast<int>(Method::kCopy) == ZCAL_METHOD_COPY);
static_assert(static_cast<int>(Method::kMsgZerocopy) == ZCAL_METHOD_MSG_ZEROCOPY);
static_assert(static_cast<int>(Method::kUringSend) == ZCAL_METHOD_URING_SEND);
static_assert(static_cast<int>(Method::kUringSendZc) == ZCAL_METHOD_URING_SEND_ZC);
static_assert(static_cast<int>(Method::kUringSendZcFixed) ==
              ZCAL_METHOD_URING_SEND_ZC_FIXED);
static_assert(static_cast<int>(Verdict::kThreshold) == ZCAL_VERDICT_THRESHOLD);
static_assert(static_cast<int>(Verdict::kAlways) == ZCAL_VERDICT_ALWAYS);
static_assert(static_cast<int>(Verdict::kNever) == ZCAL_VERDICT_NEVER);
static_assert(static_cast<int>(Verdict::kInconclusive) == ZCAL_VERDICT_INCONCLUSIVE);
static_assert(static_cast<int>(Reason::kNone) == ZCAL_REASON_NONE);
static_assert(static_cast<int>(Reason::kSlower) == ZCAL_REASON_SLOWER);
static_assert(static_cast<int>(Reason::kKernelCopied) == ZCAL_REASON_KERNEL_COPIED);
static_assert(static_cast<int>(Reason::kUnsupported) == ZCAL_REASON_UNSUPPORTED);
static_assert(static_cast<int>(Reason::kFailed) == ZCAL_REASON_FAILED);
static_assert(static_cast<int>(Reason::kNoisy) == ZCAL_REASON_NOISY);
static_assert(static_cast<int>(Reason::kNoBaseline) == ZCAL_REASON_NO_BASELINE);
static_assert(sizeof(zcal_shm_entry) % 8 == 0 && sizeof(zcal_shm_header) % 8 == 0);

constexpr const char* kShmDir = "/dev/shm";

// Readers load every word with acquire; the writer stores every word it
// changes with release, so that seqlock ordering needs no fence (which
// GCC 12 rejects under -fsanitize=thread).
template <typename T>
void StoreRelease(T* word, T value) {
  __atomic_store_n(word, value, __ATOMIC_RELEASE);
}

// Encodes entry `index` of segment `name`.
Result<zcal_shm_entry> Encode(const PublishedEntry& in, const std::string& name,
                              std::size_t index) {
  // Built only on failure: publishing is on the agent's hot path in tests.
  auto where = [&] { return "segment " + name + ": entry " + std::to_string(index); };
  zcal_shm_entry out{};
  out.scope = static_cast<std::uint8_t>(in.scope);
  out.method = static_cast<std::uint8_t>(in.method);
  out.verdict = static_cast<std::uint8_t>(in.verdict);
  out.reason = static_cast<std::uint8_t>(in.reason);
  out.measured_at_ns = in.measured_at_ns;
  out.fingerprint = in.fingerprint;
  switch (in.scope) {
    case ScopeKind::kPeer: {
      unsigned max_prefix = 0;
      if (inet_pton(AF_INET, in.address.c_str(), out.address) == 1) {
        out.family = ZCAL_FAMILY_IPV4;
        max_prefix = 32;
      } else if (inet_pton(AF_INET6, in.address.c_str(), out.address) == 1) {
        out.family = ZCAL_FAMILY_IPV6;
        max_prefix = 128;
      } else {
        return Fail(Errc::kInvalidArgument,
                    where() + ": peer address \"" + in.address +
                        "\" is not a numeric IPv4 or IPv6 address");
      }
      if (in.prefix_len > max_prefix) {
        return Fail(Errc::kInvalidArgument,
                    where() + ": prefix length " + std::to_string(in.prefix_len) +
                        " exceeds " + std::to_string(max_prefix) + " for " +
                        in.address);
      }
      out.prefix_len = in.prefix_len;
      // Host bits are cleared so that readers match on the network alone.
      for (unsigned bit = in.prefix_len; bit < max_prefix; ++bit)
        out.address[bit / 8] &= static_cast<std::uint8_t>(~(0x80u >> (bit % 8)));
      break;
    }
    case ScopeKind::kInterface:
      if (in.interface.empty() || in.interface.size() >= ZCAL_IFNAME_SIZE) {
        return Fail(Errc::kInvalidArgument,
                    where() + ": interface name \"" + in.interface +
                        "\" must be 1 to 15 bytes");
      }
      std::memcpy(out.interface, in.interface.data(), in.interface.size());
      break;
    case ScopeKind::kHostDefault:
    case ScopeKind::kLoopback:
    case ScopeKind::kDiscard:
      break;
  }
  if (in.estimated) out.entry_flags |= ZCAL_ENTRY_ESTIMATED;
  if (in.verdict == Verdict::kThreshold && !in.threshold_bytes) {
    return Fail(Errc::kInvalidArgument,
                where() + ": verdict threshold without threshold_bytes");
  }
  if (in.threshold_bytes) {
    out.entry_flags |= ZCAL_ENTRY_HAS_THRESHOLD;
    out.threshold_bytes = *in.threshold_bytes;
  }
  out.confidence_ppm = ZCAL_CONFIDENCE_UNKNOWN;
  if (in.confidence) {
    const double c = *in.confidence;
    if (!(c >= 0.0 && c <= 1.0)) {
      return Fail(Errc::kInvalidArgument,
                  where() + ": confidence " + std::to_string(c) +
                      " is outside [0,1]");
    }
    out.confidence_ppm = static_cast<std::uint32_t>(std::lround(c * 1e6));
  }
  return out;
}

// What makes two entries the same for a reader: every byte before the
// threshold (scope, method, family, prefix, address, interface), with the
// verdict, reason and flags masked out.
struct EntryKey {
  std::array<std::uint8_t, offsetof(zcal_shm_entry, threshold_bytes)> bytes;
  std::size_t index;
};
EntryKey KeyOf(const zcal_shm_entry& e, std::size_t index) {
  EntryKey key{};
  std::memcpy(key.bytes.data(), &e, key.bytes.size());
  key.bytes[offsetof(zcal_shm_entry, verdict)] = 0;
  key.bytes[offsetof(zcal_shm_entry, reason)] = 0;
  key.bytes[offsetof(zcal_shm_entry, entry_flags)] = 0;
  key.bytes[offsetof(zcal_shm_entry, entry_flags) + 1] = 0;
  key.index = index;
  return key;
}

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


}  // namespace

Result<std::unique_ptr<ShmWriter>> ShmWriter::Create(const ShmWriterOptions& options) {
  if (auto ok = ValidateSegmentName(options.name); !ok) return tl::unexpected(ok.error());
  const std::string& name = options.name;
  const std::string path = std::string(kShmDir) + name;
  if (options.capacity < 1 || options.capacity > ZCAL_MAX_CAPACITY) {
    return Fail(Errc::kInvalidArgument,
                "segment capacity " + std::to_string(options.capacity) +
                    " is out of range: use 1 to " + std::to_string(ZCAL_MAX_CAPACITY));
  }
  if ((options.mode & ~static_cast<mode_t>(0777)) != 0 || (options.mode & 0002) != 0) {
    return Fail(Errc::kInvalidArgument,
                "segment mode 0" + std::to_string((options.mode >> 6) & 7) +
                    std::to_string((options.mode >> 3) & 7) +
                    std::to_string(options.mode & 7) +
                    " is refused: only permission bits, and not writable by "
                    "others (any user could rewrite the thresholds)");
  }
  std::optional<gid_t> gid;
  if (options.group) {
    auto resolved = common::ResolveGroup(*options.group);
    if (!resolved) return tl::unexpected(resolved.error());
    gid = *resolved;
  }

  common::UniqueFd dir(open(kShmDir, O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  if (dir.get() < 0) {
    return Fail(Errc::kIo, std::string("cannot open ") + kShmDir + ": " +
                               common::ErrnoText(errno) + " (is /dev/shm mounted?)");
  }
  const std::string leaf = name.substr(1);

  // An existing file at the name must be ours and a regular file; a link
  // or another user's file could redirect or hijack the agent's writes.
  common::UniqueFd old;
  struct stat st {};
  if (fstatat(dir.get(), leaf.c_str(), &st, AT_SYMLINK_NOFOLLOW) == 0) {
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
    common::UniqueFd existing(openat(dir.get(), leaf.c_str(),
                                     O_RDWR | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK));
    struct stat now {};
    if (existing.get() >= 0 && fstat(existing.get(), &now) == 0 &&
        now.st_ino == st.st_ino && now.st_dev == st.st_dev &&
        now.st_uid == geteuid() && S_ISREG(now.st_mode)) {
      old = std::move(existing);
    }
  } else if (errno != ENOENT) {
    return Fail(Errc::kIo, "segment " + name + ": cannot inspect " + path + ": " +
                               common::ErrnoText(errno));
  }

  // The new segment is made whole under a temporary name and renamed into
  // place, so that a reader never maps a half-initialised one. tmpfs needs
  // no flush.
  common::AtomicFileOptions file_options;
  file_options.mode = options.mode;
  file_options.group = gid;
  file_options.durable = false;
  Result<std::unique_ptr<common::AtomicFile>> created_file =
      common::AtomicFile::Create(path, file_options);
  if (!created_file) {
    return Fail(created_file.error().code, "segment " + name + ": " + created_file.error().message);
  }
  common::AtomicFile& file = **created_file;
  const std::size_t bytes =
      sizeof(zcal_shm_header) + std::size_t{options.capacity} * sizeof(zcal_shm_entry);
  if (ftruncate(file.fd(), static_cast<off_t>(bytes)) != 0) {
    return Fail(Errc::kIo, "segment " + name + ": cannot size it to " + std::to_string(bytes) +
                               " bytes: " + common::ErrnoText(errno));
  }
  void* base = mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_SHARED, file.fd(), 0);
  if (base == MAP_FAILED) {
    return Fail(Errc::kIo, "segment " + name + ": cannot map it: " + common::ErrnoText(errno));
  }
  // Nobody can see the file before the rename, so plain stores suffice
  // except for the magic, which readers take as "initialized".
  auto* hdr = static_cast<zcal_shm_header*>(base);
  const std::uint64_t created = common::RealtimeNs();
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
  StoreRelease(&hdr->magic, static_cast<std::uint64_t>(ZCAL_MAGIC));

  if (Result<void> placed = file.Commit(); !placed) {
    munmap(base, bytes);
    return Fail(placed.error().code, "segment " + name + ": " + placed.error().message);
  }
  // Retire only after the rename, so that readers reopening the name find
  // the new segment.
  if (old) Retire(old.get());
  return std::unique_ptr<ShmWriter>(
      new ShmWriter(name, file.TakeFd().Release(), base, bytes, options.capacity, created));
}

ShmWriter::ShmWriter(std::string name, int fd, void* base, std::size_t bytes,
                     std::uint32_t capacity, std::uint64_t generation)
    : name_(std::move(name)),
      fd_(fd),
      base_(base),
      bytes_(bytes),
      capacity_(capacity),
      generation_(generation) {}

ShmWriter::~ShmWriter() {
  munmap(base_, bytes_);
  close(fd_);
}

Result<void> ShmWriter::Publish(std::span<const PublishedEntry> entries, bool stale,
                                HostDefaultSource host_default) {
  if (entries.size() > capacity_) {
    return Fail(Errc::kInvalidArgument,
                std::to_string(entries.size()) + " entries exceed the capacity " +
                    std::to_string(capacity_) + " of segment " + name_ +
                    ": raise the segment capacity in the configuration");
  }
  std::vector<zcal_shm_entry> encoded;
  encoded.reserve(entries.size());
  std::vector<EntryKey> keys;
  keys.reserve(entries.size());
  for (std::size_t i = 0; i < entries.size(); ++i) {
    auto entry = Encode(entries[i], name_, i);
    if (!entry) return tl::unexpected(entry.error());
    encoded.push_back(*entry);
    keys.push_back(KeyOf(*entry, i));
  }
  std::sort(keys.begin(), keys.end(), [](const EntryKey& a, const EntryKey& b) {
    return std::tie(a.bytes, a.index) < std::tie(b.bytes, b.index);
  });
  for (std::size_t i = 1; i < keys.size(); ++i) {
    if (keys[i].bytes == keys[i - 1].bytes) {
      return Fail(Errc::kInvalidArgument,
                  "segment " + name_ + ": entries " + std::to_string(keys[i - 1].index) +
                      " and " + std::to_string(keys[i].index) +
                      " have the same scope and method; publish one of them");
    }
  }

  auto* hdr = static_cast<zcal_shm_header*>(base_);
  if (__atomic_load_n(&hdr->flags, __ATOMIC_ACQUIRE) & ZCAL_FLAG_RETIRED) {
    return Fail(Errc::kBusy,
                "segment " + name_ +
                    " was replaced by another agent's segment: this agent's "
                    "publications no longer reach readers. Run one agent per "
                    "segment name");
  }
  auto* slots = reinterpret_cast<std::uint64_t*>(static_cast<char*>(base_) +
                                                 sizeof(zcal_shm_header));
  const std::uint64_t now = common::RealtimeNs();
  // The odd value must be visible before any data word: the release
  // stores below order it.
  __atomic_store_n(&hdr->seq, seq_ + 1, __ATOMIC_RELAXED);
  constexpr std::size_t kWords = sizeof(zcal_shm_entry) / 8;
  for (std::size_t i = 0; i < encoded.size(); ++i) {
    std::uint64_t words[kWords];
    std::memcpy(words, &encoded[i], sizeof words);
    for (std::size_t w = 0; w < kWords; ++w) StoreRelease(&slots[i * kWords + w], words[w]);
  }
  StoreRelease(&hdr->count, static_cast<std::uint32_t>(encoded.size()));
  StoreRelease(&hdr->flags, stale ? ZCAL_FLAG_STALE : std::uint32_t{0});
  StoreRelease(&hdr->host_default_source, static_cast<std::uint32_t>(host_default));
  StoreRelease(&hdr->publish_time_ns, now);
  ++generation_;
  StoreRelease(&hdr->generation, generation_);
  seq_ += 2;
  StoreRelease(&hdr->seq, seq_);
  StoreRelease(&hdr->heartbeat_ns, now);
  return {};
}

void ShmWriter::Heartbeat() {
  StoreRelease(&static_cast<zcal_shm_header*>(base_)->heartbeat_ns, common::RealtimeNs());
}

}  // namespace zcal::agent
