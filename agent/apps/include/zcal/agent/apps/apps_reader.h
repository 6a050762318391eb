// The agent's reader of the applications' report objects (report ABI 1,
// docs/shm-abi.md "Report objects"): at each read it scans a directory for
// `zcal-report-*`, validates each object as untrusted input, sums its
// threads' slots, keeps each process's last counts, folds the counts of
// processes that exited into their name's totals and removes what they
// left behind (docs/operations.md, "Applications' reports").
#pragma once

#include <sys/stat.h>
#include <sys/types.h>

#include <array>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <map>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "zcal/agent/domain/app_traffic.h"
#include "zcal/agent/domain/apps_settings.h"
#include "zcal/common/unique_fd.h"

namespace zcal::agent {

namespace apps {
struct ObjectHeader;
}

/// Why an object was not read (zcal_app_report_refusals_total{kind}).
enum class AppRefusal : std::uint8_t {
  kTooMany,     ///< beyond apps.max_objects, the read's load budget or the folded bound
  kNotRegular,  ///< not a regular file: a FIFO, a directory, a symlink
  kSize,        ///< below a header or above kMaxObjectBytes, or shrank while read
  kMagic,       ///< no report magic: not a report, or one being created
  kVersion,     ///< a report major this reader does not read
  kLayout,      ///< sizes, counts or offsets that do not fit the file
  kName,        ///< no NUL, empty, or a byte below 0x20, 0x7f or '/'
  kTorn,        ///< a slot's seqlock (a 1.0 writer's) stayed busy: read again next time
  kBackwards,   ///< a counter below the last read of the same process
  kUid,         ///< owned by a user apps.uids does not list
  kOpen,        ///< open, fstat or mmap failed
};
inline constexpr std::size_t kAppRefusals = 11;
/// "too_many", "not_regular", "size", "magic", "version", "layout",
/// "name", "torn", "backwards", "uid", "open" (metric label).
std::string_view AppRefusalName(AppRefusal kind);
inline constexpr std::array<AppRefusal, kAppRefusals> kAllAppRefusals = {
    AppRefusal::kTooMany, AppRefusal::kNotRegular, AppRefusal::kSize,
    AppRefusal::kMagic,   AppRefusal::kVersion,    AppRefusal::kLayout,
    AppRefusal::kName,    AppRefusal::kTorn,       AppRefusal::kBackwards,
    AppRefusal::kUid,     AppRefusal::kOpen};

/// What one read did (ReadStats) or all reads since the reader was made
/// (AppsReader::totals()).
struct AppsReadStats {
  std::uint64_t seen = 0;  ///< directory entries named zcal-report-*
  std::uint64_t read = 0;  ///< objects read and valid
  std::uint64_t live = 0;  ///< of them, open: not closed, owner running
  std::array<std::uint64_t, kAppRefusals> refused{};  ///< by AppRefusal
  std::uint64_t removed = 0;        ///< objects of exited processes unlinked
  std::uint64_t remove_failed = 0;  ///< ... that could not be unlinked
  std::uint64_t folded = 0;         ///< processes folded into their name's totals
  std::uint64_t opened = 0;         ///< files opened (at most max_objects per read)

  std::uint64_t Refused(AppRefusal kind) const {
    return refused[static_cast<std::size_t>(kind)];
  }
  AppsReadStats& operator+=(const AppsReadStats& other);
  bool operator==(const AppsReadStats&) const = default;
};

/// The result of one read.
struct AppsRead {
  AppsSnapshot snapshot;
  AppsReadStats stats;
  /// Log lines (warnings) for the caller to log: at most one per refusal
  /// kind, the first time and then at most once per kLogInterval, each
  /// with how many were refused since the last line; one for a directory
  /// that cannot be read; one for objects that could not be removed.
  std::vector<std::string> messages;
};

/// Whether this process may remove any user's report object: CAP_FOWNER
/// in its effective set (read from `proc_status`, /proc/self/status),
/// which a sticky /dev/shm asks of a process that is not the file's owner.
/// The agent says so in its segment (ZCAL_FLAG_TAKES_REPORTS), and
/// processes then leave their closed objects to it. False when the file
/// cannot be read.
bool MayRemoveAnyUsersObjects(const std::string& proc_status = "/proc/self/status");

/// Reads report objects. Not thread-safe: one caller (the service's
/// event loop) reads; the snapshots it returns are values. The first
/// reader made installs a process-wide SIGBUS handler: an object's owner
/// may shrink it while it is read, and the copy out of the mapping then
/// fails (kSize) instead of killing the process; a SIGBUS anywhere else
/// goes to the handler installed before it, or takes the default action.
///
/// Memory, whatever the directory holds: per object read, its key, its
/// label and its last counts (at most 40 cells of 544 bytes: ~24 KiB),
/// for at most max_objects objects (the largest max_objects configured
/// since start); per name, its exited totals (same bound), for at most
/// max_names + 1 names; per object folded but not removable, its file
/// name and inode, for at most kMaxFoldedMarks objects. A scan of the
/// directory keeps at most max_objects candidate names at a time.
class AppsReader {
 public:
  /// A file larger than this is refused (kSize): report ABI 1's object
  /// is 1,396,992 bytes; the bound leaves room for growth within major 1.
  static constexpr std::uint64_t kMaxObjectBytes = 8u << 20;
  /// Slots an object may declare (a larger count is kLayout).
  static constexpr std::uint32_t kMaxSlots = 4096;
  /// Attempts to copy a slot whose seqlock is busy before kTorn.
  static constexpr int kSlotAttempts = 1024;
  /// Objects folded whose file could not be removed, remembered (by file
  /// name and inode) so that they are not counted again. Beyond it, an
  /// object found dead on its first read is not folded (kTooMany), and a
  /// process seen alive that dies pushes the oldest mark out (that
  /// object, if still there, would be counted again).
  static constexpr std::size_t kMaxFoldedMarks = 4096;
  /// Bytes of counters loaded per read at most (a slot's known cells, for
  /// each used slot): an honest object loads ~10 KiB per sending thread,
  /// a forged one up to its file's size. An object that would exceed what
  /// is left of it is refused (kTooMany) for that read.
  static constexpr std::uint64_t kMaxLoadBytesPerRead = 64u << 20;
  /// Interval of the repeated log line of one refusal kind, in ns.
  static constexpr std::uint64_t kLogInterval = 3600ull * 1000 * 1000 * 1000;

  explicit AppsReader(AppsSettings settings);
  AppsReader(const AppsReader&) = delete;
  AppsReader& operator=(const AppsReader&) = delete;

  /// Takes new settings (a reload): they apply at the next Read. Names
  /// that already have a series keep it (their counters go on), also
  /// beyond a lowered max_names; a changed directory starts afresh for
  /// the objects but keeps every name's totals.
  void SetSettings(AppsSettings settings);
  const AppsSettings& settings() const { return settings_; }

  /// Reads the directory once. `now_ns`: CLOCK_REALTIME, the snapshot's
  /// read_at_ns and the clock of the log lines' interval.
  AppsRead Read(std::uint64_t now_ns);

  /// Every read's stats summed since the reader was made.
  const AppsReadStats& totals() const { return totals_; }

 private:
  // An object read at least once whose process was alive then.
  struct Known {
    std::uint32_t owner_pid = 0;
    std::uint64_t generation = 0;
    ino_t inode = 0;
    std::string label;
    AppCells last;  // its counts at its last good read
  };
  // A directory entry to read.
  struct Candidate {
    std::string file;
    ino_t inode = 0;
    bool operator<(const Candidate& o) const { return file < o.file; }
  };

  // What one pass over the directory found: the known objects and the
  // marked ones still there under the same inode, and the new ones (the
  // first max_objects by name, of fresh_total).
  struct Listing {
    std::set<std::string> known;
    std::set<std::string> marks;
    std::set<Candidate> fresh;
    std::uint64_t fresh_total = 0;
    bool listed = false;  // false: the directory could not be read
  };
  std::vector<Candidate> Scan(int dir_fd, AppsRead& out);
  // Scan's steps: the pass; forgetting marks whose file went and folding
  // known objects whose file went; the objects to read.
  Listing List(int dir_fd, AppsRead& out);
  void ForgetGone(const Listing& listing, AppsRead& out);
  std::vector<Candidate> Choose(const Listing& listing, AppsRead& out);
  void ReadOne(int dir_fd, const Candidate& candidate, AppsRead& out);
  // ReadOne's steps. The object's file opened and checked for what fstat
  // tells (type, size, owner); an invalid fd when it was refused or is
  // gone (a known object gone is folded: its owner removed it at exit).
  common::UniqueFd OpenObject(int dir_fd, const std::string& file, struct stat& st,
                              AppsRead& out);
  // Its header and counts, within the read's load budget; false when
  // refused.
  bool LoadObject(int fd, std::uint64_t bytes, const std::string& file,
                  apps::ObjectHeader& header, AppCells& counts, AppsRead& out);
  // A process that exited: its final counts go into its name's totals,
  // and the object it left goes, unless it is another file by now.
  // `known`: its entry in known_, or nullptr when never counted.
  void Retire(int dir_fd, const std::string& file, const struct stat& st,
              const apps::ObjectHeader& header, AppCells counts, Known* known, AppsRead& out);
  void Refuse(AppRefusal kind, std::string_view file, std::string_view why, AppsRead& out,
              std::uint64_t count = 1);
  void Fold(Known& known);
  bool Remove(int dir_fd, const std::string& file, AppsRead& out);
  void Mark(const std::string& file, ino_t inode);
  // A closed object this reader does not count (apps.uids refuses its
  // owner; apps.enabled is false): libzcal left it for the agent to remove
  // (docs/shm-abi.md, "Naming and lifetime") and nobody else would. True
  // when `fd` holds a valid report with the CLOSED flag: then it was
  // removed, or marked when it could not be.
  bool RemoveClosed(int dir_fd, const std::string& file, int fd, const struct stat& st,
                    AppsRead& out);
  // With apps.enabled false: RemoveClosed on up to max_objects objects.
  void SweepClosed(int dir_fd, AppsRead& out);
  std::string LabelFor(const std::string& name);
  // Whether a gone owner pid counts as an exit (settings_.owner_check).
  bool CheckOwners() const;
  AppsSnapshot Snapshot(std::uint64_t now_ns) const;

  AppsSettings settings_;
  bool host_pid_namespace_ = false;  // the agent's, read once
  std::uint64_t now_ns_ = 0;
  std::uint64_t load_budget_ = 0;  // of this read, kMaxLoadBytesPerRead at its start
  // Objects read at least once and whose file is still there, by file
  // name (one process per name at a time).
  std::map<std::string, Known> known_;
  // Folded objects whose file could not be removed: file name -> inode.
  std::map<std::string, ino_t> marks_;
  std::deque<std::string> mark_order_;  // oldest first
  // By label: the counts of the processes that exited, and how many.
  struct Exited {
    AppCells cells;
    std::uint64_t processes = 0;
  };
  std::map<std::string, Exited> names_;
  struct LogState {
    std::uint64_t last_ns = 0;
    std::uint64_t since = 0;  // refused since the last line
    bool logged = false;
  };
  std::array<LogState, kAppRefusals> log_;
  LogState remove_log_;
  bool dir_logged_ = false;
  AppsReadStats totals_;
};

}  // namespace zcal::agent
