#include "zcal/agent/apps/apps_reader.h"

#include <dirent.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <set>
#include <utility>

#include "bus_guard.h"
#include "report_object.h"
#include "zcal/common/errno_text.h"
#include "zcal/common/identity.h"
#include "zcal/common/unique_fd.h"
#include "zcal/zcal.h"

namespace zcal::agent {

bool MayRemoveAnyUsersObjects(const std::string& proc_status) {
  constexpr int kCapFowner = 3;  // linux/capability.h
  return common::EffectiveCapability(proc_status, kCapFowner).value_or(false);
}

using apps::ObjectError;
using apps::ObjectHeader;

std::string_view AppRefusalName(AppRefusal kind) {
  switch (kind) {
    case AppRefusal::kTooMany: return "too_many";
    case AppRefusal::kNotRegular: return "not_regular";
    case AppRefusal::kSize: return "size";
    case AppRefusal::kMagic: return "magic";
    case AppRefusal::kVersion: return "version";
    case AppRefusal::kLayout: return "layout";
    case AppRefusal::kName: return "name";
    case AppRefusal::kTorn: return "torn";
    case AppRefusal::kBackwards: return "backwards";
    case AppRefusal::kUid: return "uid";
    case AppRefusal::kOpen: return "open";
  }
  return "unknown";
}

AppsReadStats& AppsReadStats::operator+=(const AppsReadStats& o) {
  seen += o.seen;
  read += o.read;
  live += o.live;
  for (std::size_t i = 0; i < kAppRefusals; ++i) refused[i] += o.refused[i];
  removed += o.removed;
  remove_failed += o.remove_failed;
  folded += o.folded;
  opened += o.opened;
  return *this;
}

namespace {

constexpr std::string_view kPrefix = "zcal-report-";

// A read-only mapping of one object, unmapped at the end of its scope.
class Mapping {
 public:
  Mapping(int fd, std::uint64_t bytes)
      : bytes_(bytes), base_(mmap(nullptr, bytes, PROT_READ, MAP_SHARED, fd, 0)) {}
  ~Mapping() {
    if (ok()) munmap(base_, bytes_);
  }
  Mapping(const Mapping&) = delete;
  Mapping& operator=(const Mapping&) = delete;
  bool ok() const { return base_ != MAP_FAILED; }
  const unsigned char* base() const { return static_cast<const unsigned char*>(base_); }

 private:
  std::uint64_t bytes_;
  void* base_;
};

// kill(pid, 0) fails with ESRCH only when no process of that pid exists in
// the agent's pid namespace (EPERM: it exists, owned by another user).
bool OwnerGone(std::uint32_t pid) {
  return kill(static_cast<pid_t>(pid), 0) != 0 && errno == ESRCH;
}

// The initial pid namespace's inode number (PROC_PID_INIT_INO).
constexpr std::string_view kHostPidNamespace = "pid:[4026531836]";

bool InHostPidNamespace() {
  char link[64] = {};
  const ssize_t n = readlink("/proc/self/ns/pid", link, sizeof link - 1);
  return n > 0 && std::string_view(link, static_cast<std::size_t>(n)) == kHostPidNamespace;
}

}  // namespace

AppsReader::AppsReader(AppsSettings settings)
    : settings_(std::move(settings)), host_pid_namespace_(InHostPidNamespace()) {
  apps::InstallBusGuard();
}

bool AppsReader::CheckOwners() const {
  switch (settings_.owner_check) {
    case AppsOwnerCheck::kOn: return true;
    case AppsOwnerCheck::kOff: return false;
    case AppsOwnerCheck::kAuto: return host_pid_namespace_;
  }
  return false;
}

void AppsReader::SetSettings(AppsSettings settings) {
  if (settings.directory != settings_.directory) {
    // Objects of the old directory are no longer seen: their processes
    // count as exited, so that no name's counters go backwards.
    for (auto& [file, known] : known_) Fold(known);
    known_.clear();
    marks_.clear();
    mark_order_.clear();
  }
  settings_ = std::move(settings);
}

void AppsReader::Refuse(AppRefusal kind, std::string_view file, std::string_view why,
                        AppsRead& out, std::uint64_t count) {
  const auto i = static_cast<std::size_t>(kind);
  out.stats.refused[i] += count;
  LogState& log = log_[i];
  log.since += count;
  if (log.logged && now_ns_ - log.last_ns < kLogInterval) return;
  std::string line = "apps: refused report object " + settings_.directory + "/" +
                     std::string(file) + ": " + std::string(why) + " (kind " +
                     std::string(AppRefusalName(kind));
  if (log.logged) line += "; " + std::to_string(log.since) + " refused of this kind since the last line";
  line += "; logged at most once an hour per kind)";
  out.messages.push_back(std::move(line));
  log = LogState{now_ns_, 0, true};
}

void AppsReader::Fold(Known& known) {
  Exited& exited = names_[known.label];
  for (const auto& [key, counters] : known.last) exited.cells[key] += counters;
  ++exited.processes;
  known.last.clear();
}

bool AppsReader::Remove(int dir_fd, const std::string& file, AppsRead& out) {
  if (unlinkat(dir_fd, file.c_str(), 0) == 0 || errno == ENOENT) {
    ++out.stats.removed;
    return true;
  }
  const int err = errno;
  ++out.stats.remove_failed;
  ++remove_log_.since;
  if (!remove_log_.logged || now_ns_ - remove_log_.last_ns >= kLogInterval) {
    out.messages.push_back(
        "apps: cannot remove the report object " + settings_.directory + "/" + file +
        " of an exited process: " + common::ErrnoText(err) + " (" +
        std::to_string(remove_log_.since) +
        " since the last line; its counts are kept in its name's totals; in a sticky "
        "directory only its owner or root may remove it; logged at most once an hour)");
    remove_log_ = LogState{now_ns_, 0, true};
  }
  return false;
}

void AppsReader::Mark(const std::string& file, ino_t inode) {
  if (marks_.size() >= kMaxFoldedMarks && !mark_order_.empty()) {
    marks_.erase(mark_order_.front());
    mark_order_.pop_front();
  }
  if (marks_.insert_or_assign(file, inode).second) mark_order_.push_back(file);
}

bool AppsReader::RemoveClosed(int dir_fd, const std::string& file, int fd,
                              const struct stat& st, AppsRead& out) {
  const auto bytes = static_cast<std::uint64_t>(st.st_size);
  if (!S_ISREG(st.st_mode) || bytes < ZCAL_REPORT_HEADER_SIZE_V1 || bytes > kMaxObjectBytes)
    return false;
  const Mapping map(fd, bytes);
  if (!map.ok()) return false;
  // Only a valid report's header is believed when it says CLOSED.
  const Result<ObjectHeader, ObjectError> header = apps::ReadHeader(map.base(), bytes);
  if (!header || !header->closed) return false;
  struct stat now {};
  const bool same = fstatat(dir_fd, file.c_str(), &now, AT_SYMLINK_NOFOLLOW) == 0 &&
                    now.st_ino == st.st_ino && now.st_dev == st.st_dev;
  if (!(same && Remove(dir_fd, file, out))) Mark(file, st.st_ino);
  return true;
}

void AppsReader::SweepClosed(int dir_fd, AppsRead& out) {
  const int dup_fd = fcntl(dir_fd, F_DUPFD_CLOEXEC, 0);
  DIR* dir = dup_fd < 0 ? nullptr : fdopendir(dup_fd);
  if (dir == nullptr) {
    if (dup_fd >= 0) close(dup_fd);
    return;
  }
  std::vector<std::string> files;
  while (const dirent* entry = readdir(dir)) {
    const std::string_view name = entry->d_name;
    if (!name.starts_with(kPrefix)) continue;
    const std::string file(name);
    if (const auto mark = marks_.find(file); mark != marks_.end() && mark->second == entry->d_ino)
      continue;
    files.push_back(file);
    if (files.size() >= settings_.max_objects) break;
  }
  closedir(dir);
  for (const std::string& file : files) {
    ++out.stats.opened;
    common::UniqueFd fd(
        openat(dir_fd, file.c_str(), O_RDONLY | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK));
    struct stat st {};
    if (!fd || fstat(fd.get(), &st) != 0) continue;
    const auto known = known_.find(file);
    if (!RemoveClosed(dir_fd, file, fd.get(), st, out) || known == known_.end()) continue;
    // Read while reading was on: its last counts go into its name's totals.
    Fold(known->second);
    ++out.stats.folded;
    known_.erase(known);
  }
}

std::string AppsReader::LabelFor(const std::string& name) {
  if (names_.contains(name)) return name;
  const std::size_t own = names_.size() - (names_.contains(std::string(kOtherApps)) ? 1 : 0);
  if (own < settings_.max_names) {
    names_[name];
    return name;
  }
  names_[std::string(kOtherApps)];
  return std::string(kOtherApps);
}

// One pass over the directory: the objects already known that are still
// there, and the first max_objects new ones by name (a bounded set: a
// directory of any size costs one pass and max_objects names of memory).
AppsReader::Listing AppsReader::List(int dir_fd, AppsRead& out) {
  Listing listing;
  const int dup_fd = fcntl(dir_fd, F_DUPFD_CLOEXEC, 0);
  DIR* dir = dup_fd < 0 ? nullptr : fdopendir(dup_fd);
  if (dir == nullptr) {
    if (dup_fd >= 0) close(dup_fd);
    return listing;
  }
  listing.listed = true;
  while (const dirent* entry = readdir(dir)) {
    const std::string_view name = entry->d_name;
    if (!name.starts_with(kPrefix)) continue;
    ++out.stats.seen;
    const std::string file(name);
    if (const auto known = known_.find(file); known != known_.end()) {
      if (known->second.inode == entry->d_ino) {
        listing.known.insert(file);
        continue;
      }
      // Another file under that name: the process read before is gone
      // (ForgetGone, as a known object not present).
    }
    if (const auto mark = marks_.find(file); mark != marks_.end()) {
      if (mark->second == entry->d_ino) {
        listing.marks.insert(file);
        continue;
      }
      // Another file under that name: the marked one is gone.
    }
    ++listing.fresh_total;
    listing.fresh.insert(Candidate{file, entry->d_ino});
    if (listing.fresh.size() > settings_.max_objects) {
      listing.fresh.erase(std::prev(listing.fresh.end()));
    }
  }
  closedir(dir);
  return listing;
}

void AppsReader::ForgetGone(const Listing& listing, AppsRead& out) {
  std::erase_if(mark_order_, [&](const std::string& f) { return !listing.marks.contains(f); });
  std::erase_if(marks_, [&](const auto& m) { return !listing.marks.contains(m.first); });
  // Known objects whose file is gone: their owner removed them at exit.
  for (auto it = known_.begin(); it != known_.end();) {
    if (listing.known.contains(it->first)) {
      ++it;
      continue;
    }
    Fold(it->second);
    ++out.stats.folded;
    it = known_.erase(it);
  }
}

std::vector<AppsReader::Candidate> AppsReader::Choose(const Listing& listing, AppsRead& out) {
  // Known objects first, so that the set read stays the same from read to
  // read; then new ones by name.
  const std::size_t limit = settings_.max_objects;
  std::vector<Candidate> chosen;
  std::uint64_t too_many = 0;
  for (const std::string& file : listing.known) {
    if (chosen.size() < limit) {
      chosen.push_back(Candidate{file, known_.at(file).inode});
    } else {
      ++too_many;
    }
  }
  std::uint64_t fresh_chosen = 0;
  for (const Candidate& c : listing.fresh) {
    if (chosen.size() >= limit) break;
    chosen.push_back(c);
    ++fresh_chosen;
  }
  too_many += listing.fresh_total - fresh_chosen;
  if (too_many > 0) {
    Refuse(AppRefusal::kTooMany, "*",
           std::to_string(too_many) + " objects beyond apps.max_objects (" +
               std::to_string(limit) +
               ") not read; raise it, or remove the objects of processes that are gone",
           out, too_many);
  }
  return chosen;
}

std::vector<AppsReader::Candidate> AppsReader::Scan(int dir_fd, AppsRead& out) {
  const Listing listing = List(dir_fd, out);
  // Nothing is gone when nothing could be seen.
  if (!listing.listed) return {};
  ForgetGone(listing, out);
  return Choose(listing, out);
}

common::UniqueFd AppsReader::OpenObject(int dir_fd, const std::string& file, struct stat& st,
                                        AppsRead& out) {
  common::UniqueFd fd(
      openat(dir_fd, file.c_str(), O_RDONLY | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK));
  if (!fd) {
    const int err = errno;
    if (err == ENOENT) {
      // Removed since the scan: its owner exited.
      if (const auto known = known_.find(file); known != known_.end()) {
        Fold(known->second);
        ++out.stats.folded;
        known_.erase(known);
      }
      return {};
    }
    Refuse(err == ELOOP ? AppRefusal::kNotRegular : AppRefusal::kOpen, file,
           "open: " + common::ErrnoText(err), out);
    return {};
  }
  if (fstat(fd.get(), &st) != 0) {
    Refuse(AppRefusal::kOpen, file, "fstat: " + common::ErrnoText(errno), out);
    return {};
  }
  if (!S_ISREG(st.st_mode)) {
    Refuse(AppRefusal::kNotRegular, file, "not a regular file", out);
    return {};
  }
  const auto bytes = static_cast<std::uint64_t>(st.st_size);
  if (bytes < ZCAL_REPORT_HEADER_SIZE_V1 || bytes > kMaxObjectBytes) {
    Refuse(AppRefusal::kSize, file,
           std::to_string(bytes) + " bytes; a report has 256 to " +
               std::to_string(kMaxObjectBytes),
           out);
    return {};
  }
  if (!settings_.uids.empty() &&
      std::find(settings_.uids.begin(), settings_.uids.end(), st.st_uid) ==
          settings_.uids.end()) {
    Refuse(AppRefusal::kUid, file,
           "owned by uid " + std::to_string(st.st_uid) + ", not listed in apps.uids", out);
    RemoveClosed(dir_fd, file, fd.get(), st, out);
    return {};
  }
  return fd;
}

bool AppsReader::LoadObject(int fd, std::uint64_t bytes, const std::string& file,
                            apps::ObjectHeader& header, AppCells& counts, AppsRead& out) {
  const Mapping map(fd, bytes);
  if (!map.ok()) {
    Refuse(AppRefusal::kOpen, file, "mmap: " + common::ErrnoText(errno), out);
    return false;
  }
  Result<apps::ObjectHeader, ObjectError> read = apps::ReadHeader(map.base(), bytes);
  if (!read) {
    Refuse(read.error().kind, file, read.error().message, out);
    return false;
  }
  const std::uint64_t loads = apps::LoadBytes(*read);
  if (loads > load_budget_) {
    Refuse(AppRefusal::kTooMany, file,
           "its " + std::to_string(read->slots_used) + " slots would exceed the " +
               std::to_string(kMaxLoadBytesPerRead >> 20) + " MiB read per heartbeat",
           out);
    return false;
  }
  load_budget_ -= loads;
  Result<AppCells, ObjectError> loaded = apps::ReadCounts(map.base(), *read, kSlotAttempts);
  if (!loaded) {
    Refuse(loaded.error().kind, file, loaded.error().message, out);
    return false;
  }
  header = std::move(*read);
  counts = std::move(*loaded);
  return true;
}

void AppsReader::ReadOne(int dir_fd, const Candidate& candidate, AppsRead& out) {
  const std::string& file = candidate.file;
  ++out.stats.opened;
  struct stat st {};
  const common::UniqueFd fd = OpenObject(dir_fd, file, st, out);
  if (!fd) return;
  apps::ObjectHeader header;
  AppCells counts;
  if (!LoadObject(fd.get(), static_cast<std::uint64_t>(st.st_size), file, header, counts, out)) {
    return;
  }
  Known* known = nullptr;
  if (const auto known_it = known_.find(file); known_it != known_.end()) {
    if (known_it->second.owner_pid == header.owner_pid &&
        known_it->second.generation == header.generation) {
      known = &known_it->second;
    } else {
      // A new process under the same name: the old one exited.
      Fold(known_it->second);
      ++out.stats.folded;
      known_.erase(known_it);
    }
  }
  if (known != nullptr && apps::WentBackwards(known->last, counts)) {
    Refuse(AppRefusal::kBackwards, file,
           "a counter below its last read for pid " + std::to_string(header.owner_pid) +
               "; the last counts are kept",
           out);
    return;
  }
  ++out.stats.read;
  const bool exited = header.closed || (CheckOwners() && OwnerGone(header.owner_pid));
  if (exited) {
    Retire(dir_fd, file, st, header, std::move(counts), known, out);
    return;
  }
  ++out.stats.live;
  if (known == nullptr) {
    known = &known_[file];
    known->owner_pid = header.owner_pid;
    known->generation = header.generation;
    known->inode = st.st_ino;
    known->label = LabelFor(header.name);
  }
  known->last = std::move(counts);
}

void AppsReader::Retire(int dir_fd, const std::string& file, const struct stat& st,
                        const apps::ObjectHeader& header, AppCells counts, Known* known,
                        AppsRead& out) {
  struct stat now {};
  const bool same = fstatat(dir_fd, file.c_str(), &now, AT_SYMLINK_NOFOLLOW) == 0 &&
                    now.st_ino == st.st_ino && now.st_dev == st.st_dev;
  if (known == nullptr) {
    // Never counted yet: counted only if it can be removed or marked.
    const bool removed = same && Remove(dir_fd, file, out);
    if (!removed && marks_.size() >= kMaxFoldedMarks) {
      Refuse(AppRefusal::kTooMany, file,
             "an exited process's object that cannot be removed, beyond " +
                 std::to_string(kMaxFoldedMarks) + " such objects; not counted",
             out);
      return;
    }
    Known once{header.owner_pid, header.generation, st.st_ino, LabelFor(header.name),
               std::move(counts)};
    Fold(once);
    ++out.stats.folded;
    if (!removed) Mark(file, st.st_ino);
    return;
  }
  known->last = std::move(counts);
  Fold(*known);
  ++out.stats.folded;
  known_.erase(file);
  if (!(same && Remove(dir_fd, file, out))) Mark(file, st.st_ino);
}

AppsSnapshot AppsReader::Snapshot(std::uint64_t now_ns) const {
  AppsSnapshot snap;
  snap.read_at_ns = now_ns;
  for (const auto& [label, exited] : names_) {
    AppTotals& totals = snap.apps[label];
    totals.cells = exited.cells;
    totals.exited_processes = exited.processes;
  }
  for (const auto& [file, known] : known_) {
    AppTotals& totals = snap.apps[known.label];
    ++totals.live_processes;
    for (const auto& [key, counters] : known.last) totals.cells[key] += counters;
  }
  return snap;
}

AppsRead AppsReader::Read(std::uint64_t now_ns) {
  now_ns_ = now_ns;
  AppsRead out;
  if (!settings_.enabled) {
    // Closed objects are left for an agent to remove whether or not it
    // counts them (libzcal sees the heartbeat, not this setting).
    common::UniqueFd dir(
        open(settings_.directory.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC | O_NOFOLLOW));
    if (dir) SweepClosed(dir.get(), out);
  } else {
    common::UniqueFd dir(
        open(settings_.directory.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC | O_NOFOLLOW));
    if (!dir) {
      if (!dir_logged_) {
        out.messages.push_back("apps: cannot read the report objects' directory " +
                               settings_.directory + ": " + common::ErrnoText(errno) +
                               " (apps.directory; logged once until it can be read)");
      }
      dir_logged_ = true;
    } else {
      dir_logged_ = false;
      load_budget_ = kMaxLoadBytesPerRead;
      for (const Candidate& c : Scan(dir.get(), out)) ReadOne(dir.get(), c, out);
    }
  }
  out.snapshot = Snapshot(now_ns);
  totals_ += out.stats;
  return out;
}

}  // namespace zcal::agent
