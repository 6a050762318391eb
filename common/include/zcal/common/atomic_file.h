// Files that appear whole or not at all: written under a temporary name in
// the target's directory, then renamed over the target, so that a reader
// sees the old file or the new one, never part of one. The one way zcal
// replaces a file (the state file, reports, exported settings, the segment).
#pragma once

#include <sys/types.h>

#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include "zcal/common/result.h"
#include "zcal/common/unique_fd.h"

namespace zcal::common {

struct AtomicFileOptions {
  /// Permission bits of the new file (umask does not apply).
  mode_t mode = 0644;
  /// The group of the new file; nullopt = the writer's.
  std::optional<gid_t> group;
  /// Give the new file the mode, owner and group of the file it replaces,
  /// when there is one (owner and group as far as the writer may: chown to
  /// another user needs privilege, and a failure to is not an error).
  bool keep_existing = false;
  /// Create the directory (0755, with its parents) when it is missing.
  bool create_directories = false;
  /// Flush the file before the rename and the directory after it, so that
  /// the new file survives a crash (not needed on tmpfs).
  bool durable = true;
};

/// One file being written. Not copyable or movable; not thread-safe.
class AtomicFile {
 public:
  /// Creates the temporary file beside `path` now (so that an unwritable
  /// directory is found before the content is computed). `path` names the
  /// file to replace; a symbolic link at `path` is replaced by the file, not
  /// followed (resolve it first to replace its target). kIo (or
  /// kPermission) naming the path, the step and the errno text.
  static Result<std::unique_ptr<AtomicFile>> Create(std::string path,
                                                    AtomicFileOptions options = {});
  ~AtomicFile();  ///< removes the temporary file unless committed
  AtomicFile(const AtomicFile&) = delete;
  AtomicFile& operator=(const AtomicFile&) = delete;

  /// Appends `text`. kIo naming the path.
  Result<void> Write(std::string_view text);
  /// The temporary file, for a writer that sizes or maps it itself.
  int fd() const { return fd_.get(); }
  /// Sets mode and owner, flushes and renames the file into place. kIo
  /// (kPermission when the directory refuses) naming the path.
  Result<void> Commit();
  /// The file's descriptor, for a writer that keeps the file open (after
  /// Commit: the file now at `path`). The object no longer closes it.
  UniqueFd TakeFd() { return std::move(fd_); }

  const std::string& path() const { return path_; }

 private:
  AtomicFile(std::string path, std::string temp, UniqueFd dir, UniqueFd fd,
             AtomicFileOptions options);
  std::string path_;
  std::string temp_;  // name in the directory
  UniqueFd dir_;
  UniqueFd fd_;
  AtomicFileOptions options_;
  bool committed_ = false;
};

/// Writes `text` to `path` atomically (Create, Write, Commit).
Result<void> WriteFileAtomically(const std::string& path, std::string_view text,
                                 AtomicFileOptions options = {});

}  // namespace zcal::common
