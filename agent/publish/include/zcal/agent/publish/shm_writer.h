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

#include "zcal/agent/domain/published_entry.h"
#include "zcal/agent/domain/segment_name.h"
#include "zcal/calibrator/decision.h"
#include "zcal/calibrator/method.h"
#include "zcal/common/result.h"

namespace zcal::agent {


struct ShmWriterOptions {
  std::string name = "/zcal";  ///< "/NAME": the file /dev/shm/NAME
  mode_t mode = 0644;          ///< permission bits; world-writable refused
  std::optional<std::string> group;  ///< group name or numeric gid
  std::uint32_t capacity = 256;      ///< entries, 1..65536
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

  ShmWriter(const ShmWriter&) = delete;
  ShmWriter& operator=(const ShmWriter&) = delete;
  ShmWriter(ShmWriter&&) = delete;
  ShmWriter& operator=(ShmWriter&&) = delete;
  ~ShmWriter();  ///< unmaps; leaves the segment for its readers

  /// Replaces the whole table atomically (seqlock), bumps the generation,
  /// sets publish time and heartbeat; `stale` sets the stale flag. Fails
  /// with Errc::kInvalidArgument (table unchanged) for more entries than
  /// the capacity, an unparsable address, a prefix or interface name out
  /// of range, a threshold verdict without bytes, a confidence outside
  /// [0,1], or two entries with the same scope and method; with
  /// Errc::kBusy once another writer replaced (retired) this segment.
  /// `host_default` says where the host-default entries come from, or why
  /// there are none.
  Result<void> Publish(std::span<const PublishedEntry> entries, bool stale,
                       HostDefaultSource host_default = HostDefaultSource::kUnknown);

  /// Refreshes the heartbeat only (readers use it to tell a live agent).
  void Heartbeat();

  const std::string& name() const { return name_; }
  std::uint32_t capacity() const { return capacity_; }
  std::uint64_t generation() const { return generation_; }
  /// The writer's own mapping, for tests that attach a reader to it.
  const void* mapping() const { return base_; }
  std::size_t mapping_bytes() const { return bytes_; }

 private:
  ShmWriter(std::string name, int fd, void* base, std::size_t bytes,
            std::uint32_t capacity, std::uint64_t generation);

  std::string name_;
  int fd_;
  void* base_;
  std::size_t bytes_;
  std::uint32_t capacity_;
  std::uint64_t generation_;
  std::uint64_t seq_ = 0;
};

}  // namespace zcal::agent
