// The writer of the shared-memory segment that transports read through
// libzcal (client/include/zcal/zcal.h; layout in docs/shm-abi.md).
#pragma once

#include <sys/types.h>

#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "zcal/agent/domain/published_entry.h"
#include "zcal/agent/domain/segment_damage.h"
#include "zcal/agent/domain/segment_name.h"
#include "zcal/calibrator/decision.h"
#include "zcal/calibrator/method.h"
#include "zcal/common/clock.h"
#include "zcal/common/result.h"
#include "zcal/common/unique_fd.h"
#include "zcal/zcal.h"

namespace zcal::agent {


struct ShmWriterOptions {
  std::string name = "/zcal";  ///< "/NAME": the file /dev/shm/NAME
  mode_t mode = 0644;          ///< permission bits; world-writable refused
  std::optional<std::string> group;  ///< group name or numeric gid
  /// Entries the segment has room for at first, 1..65536; a table that
  /// outgrows it grows the segment (Publish).
  std::uint32_t capacity = 256;
  /// Stamps created, publish time and heartbeat with its Wall().
  std::shared_ptr<const common::Clock> clock = common::SystemClock();
};

/// What ShmWriter::Heal found, and whether it repaired it.
struct SegmentHealth {
  SegmentDamage damage = SegmentDamage::kNone;  ///< kNone: as the writer left it
  std::string found;       ///< what differs, a clause naming the file and field
  Result<void> repaired;   ///< a new segment holds the last table; or why not
};

/// Creates and writes one segment. Not thread-safe: one thread publishes.
/// Not copyable, not movable.
class ShmWriter {
 public:
  /// Creates a new segment and puts it in place of any segment of that
  /// name owned by this user (which is marked retired, so that its readers
  /// move to the new one; the writer never shrinks a segment in place).
  /// Refuses, with Errc::kPermission, a symbolic link or a file of another
  /// user at /dev/shm/NAME, and a world-writable mode.
  static Result<std::unique_ptr<ShmWriter>> Create(const ShmWriterOptions& options);
  /// How many times the segment grew (Publish) since Create.
  std::uint64_t grows() const { return grows_; }

  ShmWriter(const ShmWriter&) = delete;
  ShmWriter& operator=(const ShmWriter&) = delete;
  ShmWriter(ShmWriter&&) = delete;
  ShmWriter& operator=(ShmWriter&&) = delete;
  ~ShmWriter();  ///< unmaps; leaves the segment for its readers

  /// Replaces the whole table atomically (seqlock), bumps the generation,
  /// sets publish time and heartbeat; `stale` sets the stale flag. A table
  /// with more entries than the capacity grows the segment: a new one,
  /// doubled until the table fits, made whole with the table under a
  /// temporary name and renamed over the name, and the old one marked
  /// retired, so that readers move from the old table to the new one and
  /// never see an empty or torn one. When it cannot be created (/dev/shm
  /// full: Errc::kIo naming ENOSPC) the old segment keeps the old table,
  /// and the next Publish tries again. Fails with Errc::kInvalidArgument
  /// (table unchanged) for more entries than 65536, an unparsable address, a prefix or interface name out
  /// of range, a threshold verdict without bytes, a confidence outside
  /// [0,1], or two entries with the same scope and method; with
  /// Errc::kBusy once another writer replaced (retired) this segment.
  /// `host_default` says where the host-default entries come from, or why
  /// there are none.
  Result<void> Publish(std::span<const PublishedEntry> entries, bool stale,
                       HostDefaultSource host_default = HostDefaultSource::kUnknown);

  /// Sets or clears ZCAL_FLAG_TAKES_REPORTS: this agent reads report
  /// objects and can remove any user's, so processes leave their closed
  /// objects to it. Kept through every later Publish; stored now if a
  /// table was published (before that, with the first one).
  void SetTakesReports(bool takes);

  /// Refreshes the heartbeat only (readers use it to tell a live agent).
  /// Returns false, having stored nothing, while the file is shorter than
  /// the mapping (Heal repairs that); Publish then fails with Errc::kIo.
  bool Heartbeat();

  /// Checks the segment against what this writer made and last stored:
  /// the file's size against the mapping (fstat), the file at the name
  /// against the mapped one (removed, replaced), then every header field
  /// and every entry in use. On a difference it creates a new segment as
  /// Create does (same options) in place of the name, grows the old file
  /// back to the mapping's size if it was cut (so that readers still
  /// mapping it read zeros, not SIGBUS) and marks it retired, and stores
  /// the last published table in the new one. Never touches a mapping the
  /// file no longer covers. A segment that another writer replaced (and
  /// retired) is not damage: Publish reports it as kBusy. A failed repair
  /// (say, another user's file at the name) leaves the writer as it was;
  /// the next Heal tries again.
  SegmentHealth Heal();

  const std::string& name() const { return options_.name; }
  std::uint32_t capacity() const { return options_.capacity; }
  std::uint64_t generation() const { return generation_; }
  /// The writer's own mapping, for tests that attach a reader to it.
  const void* mapping() const { return base_; }
  std::size_t mapping_bytes() const { return bytes_; }

 private:
  // What a new segment holds before readers can open it.
  struct Initial {
    std::vector<zcal_shm_entry> table;
    std::uint32_t flags = 0;
    std::uint32_t host_default = 0;
  };
  static Result<std::unique_ptr<ShmWriter>> CreateHolding(const ShmWriterOptions& options,
                                                          const Initial* initial);
  // The header of a segment nobody can see yet, `initial` in its table
  // (nullptr: empty), the magic stored last.
  static void WriteHeader(void* base, const ShmWriterOptions& options, std::uint64_t created,
                          const Initial* initial);
  ShmWriter(ShmWriterOptions options, common::UniqueFd fd, void* base, std::size_t bytes,
            std::uint64_t created);
  // Takes `initial` as the last table stored, published at that time.
  void Hold(Initial initial, std::uint64_t publish_time_ns);
  // Replaces this writer's segment with a larger one holding `initial`.
  Result<void> Grow(Initial initial);
  // Retires this writer's segment and takes `fresh`'s (its file, mapping
  // and stamps) in its place; `fresh` is left with the old one, to unmap
  // and close. The one way a writer moves to a new segment (Grow, Recreate).
  void Adopt(ShmWriter& fresh);
  std::optional<off_t> FileSize() const;
  bool Covered() const;  // the file is at least as long as the mapping
  // Stores table_ under the seqlock with `flags`, bumps the generation.
  void Store(std::uint32_t flags);
  // shm_health.cc
  SegmentHealth Inspect() const;
  SegmentHealth InspectContents() const;
  Result<void> Recreate();
  void RetireOwn();

  ShmWriterOptions options_;
  std::string path_;
  common::UniqueFd fd_;
  void* base_;
  std::size_t bytes_;
  std::uint64_t generation_;
  std::uint64_t seq_ = 0;
  // What this writer last stored, to tell its writes from anyone else's.
  std::uint64_t created_ns_;
  std::uint64_t heartbeat_ns_;
  std::uint64_t publish_time_ns_ = 0;
  std::uint32_t pid_;
  std::uint32_t flags_ = 0;
  std::uint32_t takes_reports_ = 0;  // ZCAL_FLAG_TAKES_REPORTS or 0
  std::uint32_t host_default_ = 0;
  bool published_ = false;
  std::uint64_t grows_ = 0;
  std::vector<zcal_shm_entry> table_;
};

}  // namespace zcal::agent
