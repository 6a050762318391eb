// The agent's reader of report objects against forged, truncated and
// hostile objects in a private directory (any local user can create one
// with any content), and against the lifecycle of honest ones: read,
// folded when their process exits, removed.
#include "zcal/agent/apps/apps_reader.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <string>

#include <gtest/gtest.h>

#include "report_object.h"
#include "zcal/zcal.h"

namespace zcal::agent::apps_reader_test {
namespace {

using calibrator::Method;
namespace fs = std::filesystem;
constexpr std::uint64_t kSecond = 1'000'000'000;
constexpr std::uint64_t kObjectBytes =
    ZCAL_REPORT_HEADER_SIZE_V1 + std::uint64_t{ZCAL_REPORT_SLOTS} * sizeof(zcal_report_slot);

// A private directory of objects, removed at the end of the test.
class ObjectDir {
 public:
  ObjectDir() {
    char path[] = "/tmp/zcal-apps-test-XXXXXX";
    if (mkdtemp(path) == nullptr) std::abort();
    path_ = path;
  }
  ~ObjectDir() {
    std::error_code ec;
    fs::remove_all(path_, ec);
  }
  ObjectDir(const ObjectDir&) = delete;
  ObjectDir& operator=(const ObjectDir&) = delete;
  const std::string& path() const { return path_; }
  std::string File(const std::string& name) const { return path_ + "/" + name; }

 private:
  std::string path_;
};

// What a forged object holds: an honest 1.0 object by default.
struct Forge {
  zcal_report_header header{};
  // (slot, scope, method) -> cell
  struct Cell {
    std::uint32_t slot = 0;
    int scope = 0;
    int method = 1;
    zcal_report_cell cell{};
  };
  std::vector<Cell> cells;
  std::vector<std::pair<std::uint32_t, std::uint64_t>> seqs;  // (slot, seq)
  std::uint64_t file_bytes = kObjectBytes;

  explicit Forge(const char* name = "rpc", pid_t pid = getpid(), std::uint64_t generation = 7) {
    header.magic = ZCAL_REPORT_MAGIC;
    header.abi_major = ZCAL_REPORT_ABI_MAJOR;
    header.abi_minor = ZCAL_REPORT_ABI_MINOR;
    header.header_size = ZCAL_REPORT_HEADER_SIZE_V1;
    header.slot_size = sizeof(zcal_report_slot);
    header.slot_header_size = ZCAL_REPORT_SLOT_HEADER_SIZE_V1;
    header.cell_size = ZCAL_REPORT_CELL_SIZE_V1;
    header.scopes = ZCAL_REPORT_SCOPES;
    header.methods = ZCAL_REPORT_METHODS;
    header.size_buckets = ZCAL_REPORT_SIZE_BUCKETS;
    header.depth_classes = ZCAL_DEPTH_CLASSES;
    header.slots = ZCAL_REPORT_SLOTS;
    header.slots_used = 2;
    header.owner_pid = static_cast<std::uint32_t>(pid);
    header.total_size = kObjectBytes;
    header.generation = generation;
    std::strncpy(header.name, name, sizeof header.name - 1);
  }
  // `sends` zerocopy sends of 64 KiB at stream depth by threshold, all
  // completed, `copied` of them copied, into (slot, scope, method).
  Forge& Sends(std::uint64_t sends, std::uint64_t copied = 0, std::uint32_t slot = 1,
               int scope = 0, int method = 1) {
    Cell c{slot, scope, method, {}};
    c.cell.answers[3][1][ZCAL_REPORT_BY_THRESHOLD] = sends;
    c.cell.bytes[1] = sends * 65536;
    c.cell.completions = sends;
    c.cell.copied = copied;
    c.cell.sizes[16] = sends;
    cells.push_back(c);
    return *this;
  }

  void Write(const std::string& path) const {
    const int fd = open(path.c_str(), O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    ASSERT_GE(fd, 0) << path;
    ASSERT_EQ(ftruncate(fd, static_cast<off_t>(file_bytes)), 0);
    const auto put = [&](const void* data, std::size_t n, std::uint64_t at) {
      if (at + n > file_bytes) n = at < file_bytes ? file_bytes - at : 0;
      if (n > 0) {
        ASSERT_EQ(pwrite(fd, data, n, static_cast<off_t>(at)), static_cast<ssize_t>(n));
      }
    };
    put(&header, sizeof header, 0);
    for (const Cell& c : cells) {
      const std::uint64_t at = ZCAL_REPORT_HEADER_SIZE_V1 + c.slot * sizeof(zcal_report_slot) +
                               offsetof(zcal_report_slot, cells) +
                               (static_cast<std::uint64_t>(c.scope) * ZCAL_REPORT_METHODS +
                                static_cast<std::uint64_t>(c.method)) *
                                   sizeof(zcal_report_cell);
      put(&c.cell, sizeof c.cell, at);
    }
    for (const auto& [slot, seq] : seqs) {
      put(&seq, sizeof seq, ZCAL_REPORT_HEADER_SIZE_V1 + slot * sizeof(zcal_report_slot));
    }
    close(fd);
  }
};

AppsSettings In(const ObjectDir& dir) {
  AppsSettings s;
  s.directory = dir.path();
  // Whatever pid namespace the tests run in: their pids are the reader's.
  s.owner_check = AppsOwnerCheck::kOn;
  return s;
}

constexpr AppCellKey kZc{AppScope::kHostDefault, Method::kMsgZerocopy};

std::uint64_t SendsOf(const AppsSnapshot& snap, const std::string& name) {
  const auto it = snap.apps.find(name);
  if (it == snap.apps.end()) return 0;
  std::uint64_t n = 0;
  for (const auto& [key, c] : it->second.cells) n += c.Sends();
  return n;
}

// A pid no process has: a child that exited and was reaped.
pid_t DeadPid() {
  const pid_t pid = fork();
  if (pid == 0) _exit(0);
  int status = 0;
  waitpid(pid, &status, 0);
  return pid;
}

TEST(AppsReader, SumsTheSlotsOfAnHonestObject) {
  ObjectDir dir;
  Forge f("rpc");
  f.Sends(10, 1, 0).Sends(5, 2, 1);
  f.Write(dir.File("zcal-report-1"));
  AppsReader reader(In(dir));
  const AppsRead r = reader.Read(kSecond);
  EXPECT_EQ(r.stats.seen, 1u);
  EXPECT_EQ(r.stats.read, 1u);
  EXPECT_EQ(r.stats.live, 1u);
  EXPECT_TRUE(r.messages.empty());
  ASSERT_TRUE(r.snapshot.apps.contains("rpc"));
  const AppTotals& rpc = r.snapshot.apps.at("rpc");
  EXPECT_EQ(rpc.live_processes, 1u);
  ASSERT_EQ(rpc.cells.size(), 1u);
  const AppCounters& c = rpc.cells.at(kZc);
  EXPECT_EQ(c.Sends(true), 15u);
  EXPECT_EQ(c.bytes[1], 15u * 65536);
  EXPECT_EQ(c.completions, 15u);
  EXPECT_EQ(c.copied, 3u);
  EXPECT_EQ(c.sizes[16], 15u);
  EXPECT_TRUE(fs::exists(dir.File("zcal-report-1")));
}

TEST(AppsReader, RefusesEachForgeryOnceWithOneLinePerKind) {
  ObjectDir dir;
  Forge bad_magic;
  bad_magic.header.magic = 1;
  bad_magic.Write(dir.File("zcal-report-magic"));
  Forge bad_version;
  bad_version.header.abi_major = 2;
  bad_version.Write(dir.File("zcal-report-version"));
  Forge small_slot;
  small_slot.header.slot_size = 64;
  small_slot.Write(dir.File("zcal-report-slot"));
  Forge overflowing;  // slots * slot_size beyond any file, in 64 bits
  overflowing.header.slots = 4096;
  overflowing.header.slot_size = 0xfffffff8u;
  overflowing.Write(dir.File("zcal-report-overflow"));
  Forge lying_total;
  lying_total.header.total_size = 1ull << 62;
  lying_total.Write(dir.File("zcal-report-total"));
  Forge truncated;  // the header says 1.0's size, the file is shorter
  truncated.file_bytes = 4096;
  truncated.Write(dir.File("zcal-report-truncated"));
  Forge tiny;
  tiny.file_bytes = 100;
  tiny.Write(dir.File("zcal-report-tiny"));
  Forge huge;  // 16 MiB of a valid-looking header: beyond the bound
  huge.file_bytes = 16u << 20;
  huge.Write(dir.File("zcal-report-huge"));
  {  // 1 MiB of 'A': no NUL anywhere, no magic
    const std::string mib(1u << 20, 'A');
    const int fd = open(dir.File("zcal-report-mib").c_str(), O_WRONLY | O_CREAT, 0644);
    ASSERT_EQ(write(fd, mib.data(), mib.size()), static_cast<ssize_t>(mib.size()));
    close(fd);
  }
  Forge no_nul;
  std::memset(no_nul.header.name, 'x', sizeof no_nul.header.name);
  no_nul.Write(dir.File("zcal-report-nonul"));
  Forge control("bad\x1b[2Jname");
  control.Write(dir.File("zcal-report-control"));
  Forge slash("a/b");
  slash.Write(dir.File("zcal-report-slash"));
  Forge pid_zero("rpc", 0);
  pid_zero.Write(dir.File("zcal-report-pid0"));
  Forge torn;
  torn.seqs.push_back({1, 3});  // slot 1's writer never finishes
  torn.Write(dir.File("zcal-report-torn"));
  ASSERT_EQ(symlink(dir.File("zcal-report-magic").c_str(), dir.File("zcal-report-link").c_str()),
            0);
  ASSERT_EQ(mkfifo(dir.File("zcal-report-fifo").c_str(), 0644), 0);
  ASSERT_EQ(mkdir(dir.File("zcal-report-dir").c_str(), 0755), 0);
  {
    const int fd = open(dir.File("not-a-report").c_str(), O_WRONLY | O_CREAT, 0644);
    close(fd);
  }

  AppsReader reader(In(dir));
  const AppsRead r = reader.Read(kSecond);
  EXPECT_EQ(r.stats.seen, 17u);
  EXPECT_EQ(r.stats.opened, 17u);
  EXPECT_EQ(r.stats.read, 0u);
  EXPECT_EQ(r.stats.Refused(AppRefusal::kMagic), 2u);  // magic, mib
  EXPECT_EQ(r.stats.Refused(AppRefusal::kVersion), 1u);
  // slot, overflow, total, truncated, pid0
  EXPECT_EQ(r.stats.Refused(AppRefusal::kLayout), 5u);
  EXPECT_EQ(r.stats.Refused(AppRefusal::kSize), 2u);  // tiny, huge
  EXPECT_EQ(r.stats.Refused(AppRefusal::kName), 3u);  // nonul, control, slash
  EXPECT_EQ(r.stats.Refused(AppRefusal::kTorn), 1u);
  EXPECT_EQ(r.stats.Refused(AppRefusal::kNotRegular), 3u);  // link, fifo, dir
  EXPECT_EQ(r.stats.Refused(AppRefusal::kTooMany), 0u);
  EXPECT_EQ(r.messages.size(), 7u);  // one per kind
  EXPECT_TRUE(r.snapshot.apps.empty());
  for (const std::string& line : r.messages) {
    EXPECT_EQ(line.find('\x1b'), std::string::npos) << line;
  }
  // The same again within the hour: counted, not logged.
  const AppsRead again = reader.Read(2 * kSecond);
  EXPECT_EQ(again.stats.Refused(AppRefusal::kLayout), 5u);
  EXPECT_TRUE(again.messages.empty());
  // After the hour: one line per kind, with the count since the last.
  const AppsRead later = reader.Read(2 * kSecond + AppsReader::kLogInterval);
  ASSERT_EQ(later.messages.size(), 7u);
  bool counted = false;
  for (const std::string& line : later.messages) {
    counted |= line.find("10 refused of this kind since the last line") != std::string::npos;
  }
  EXPECT_TRUE(counted);  // layout: 5 + 5
  EXPECT_EQ(reader.totals().Refused(AppRefusal::kLayout), 15u);
  // Nothing refused was removed.
  EXPECT_EQ(later.stats.removed, 0u);
  EXPECT_TRUE(fs::exists(dir.File("zcal-report-magic")));
}

TEST(AppsReader, SanitisesNamesForLabels) {
  ObjectDir dir;
  Forge("my app\xc3\xa9:v1.2-x_y").Write(dir.File("zcal-report-1"));
  AppsReader reader(In(dir));
  const AppsRead r = reader.Read(kSecond);
  EXPECT_EQ(r.stats.read, 1u);
  ASSERT_EQ(r.snapshot.apps.size(), 1u);
  EXPECT_EQ(r.snapshot.apps.begin()->first, "my_app__:v1.2-x_y");
}

TEST(AppsReader, OpensAtMostMaxObjectsOfTenThousandAndTheSameEachRead) {
  ObjectDir dir;
  for (int i = 0; i < 10000; ++i) {
    const int fd = open(dir.File("zcal-report-" + std::to_string(100000 + i)).c_str(),
                        O_WRONLY | O_CREAT, 0644);
    ASSERT_GE(fd, 0);
    close(fd);
  }
  Forge().Sends(3).Write(dir.File("zcal-report-0honest"));
  AppsSettings s = In(dir);
  s.max_objects = 16;
  AppsReader reader(s);
  for (int read = 0; read < 3; ++read) {
    const AppsRead r = reader.Read((1 + static_cast<std::uint64_t>(read)) * kSecond);
    EXPECT_EQ(r.stats.seen, 10001u);
    EXPECT_EQ(r.stats.opened, 16u);
    EXPECT_EQ(r.stats.read, 1u);  // the honest one sorts first, and stays
    EXPECT_EQ(r.stats.Refused(AppRefusal::kSize), 15u);
    EXPECT_EQ(r.stats.Refused(AppRefusal::kTooMany), 9985u);
    EXPECT_EQ(SendsOf(r.snapshot, "rpc"), 3u);
    EXPECT_LE(r.messages.size(), 2u);
  }
}

TEST(AppsReader, BoundsTheBytesLoadedPerRead) {
  ObjectDir dir;
  // One cell per slot, 4096 slots all used: 2.2 MB of loads each, from a
  // 2.5 MB sparse file.
  Forge f;
  f.header.scopes = 1;
  f.header.methods = 1;
  f.header.slot_size = ZCAL_REPORT_SLOT_HEADER_SIZE_V1 + ZCAL_REPORT_CELL_SIZE_V1;
  f.header.slots = 4096;
  f.header.slots_used = 4096;
  f.file_bytes = ZCAL_REPORT_HEADER_SIZE_V1 + std::uint64_t{4096} * f.header.slot_size;
  f.header.total_size = f.file_bytes;
  for (int i = 0; i < 40; ++i) f.Write(dir.File("zcal-report-" + std::to_string(10 + i)));
  AppsReader reader(In(dir));
  const AppsRead r = reader.Read(kSecond);
  const std::uint64_t each = 4096u * (8 + ZCAL_REPORT_CELL_SIZE_V1);
  const std::uint64_t fits = AppsReader::kMaxLoadBytesPerRead / each;
  ASSERT_LT(fits, 40u);
  EXPECT_EQ(r.stats.opened, 40u);
  EXPECT_EQ(r.stats.read, fits);
  EXPECT_EQ(r.stats.Refused(AppRefusal::kTooMany), 40u - fits);
}

TEST(AppsReader, KnownObjectsKeepTheirPlaceBeyondMaxObjects) {
  ObjectDir dir;
  Forge("late").Sends(4).Write(dir.File("zcal-report-9"));
  AppsSettings s = In(dir);
  s.max_objects = 1;
  AppsReader reader(s);
  EXPECT_EQ(SendsOf(reader.Read(kSecond).snapshot, "late"), 4u);
  // A new object that sorts first does not push the known one out.
  Forge("early").Sends(1).Write(dir.File("zcal-report-1"));
  const AppsRead r = reader.Read(2 * kSecond);
  EXPECT_EQ(r.stats.opened, 1u);
  EXPECT_EQ(r.stats.Refused(AppRefusal::kTooMany), 1u);
  EXPECT_EQ(SendsOf(r.snapshot, "late"), 4u);
  EXPECT_FALSE(r.snapshot.apps.contains("early"));
}

TEST(AppsReader, RefusesCountersThatGoBackwardsAndKeepsTheLast) {
  ObjectDir dir;
  Forge("rpc").Sends(100).Write(dir.File("zcal-report-1"));
  AppsReader reader(In(dir));
  EXPECT_EQ(SendsOf(reader.Read(kSecond).snapshot, "rpc"), 100u);
  Forge("rpc").Sends(40).Write(dir.File("zcal-report-1"));  // same pid and generation
  // Rewritten in place: the same inode, so the same object.
  const AppsRead r = reader.Read(2 * kSecond);
  EXPECT_EQ(r.stats.Refused(AppRefusal::kBackwards), 1u);
  EXPECT_EQ(r.messages.size(), 1u);
  EXPECT_EQ(SendsOf(r.snapshot, "rpc"), 100u);
  Forge("rpc").Sends(120).Write(dir.File("zcal-report-1"));
  const AppsRead grown = reader.Read(3 * kSecond);
  EXPECT_EQ(grown.stats.Refused(AppRefusal::kBackwards), 0u);
  EXPECT_EQ(SendsOf(grown.snapshot, "rpc"), 120u);
}

TEST(AppsReader, ANewGenerationUnderTheSameNameIsANewProcess) {
  ObjectDir dir;
  Forge("rpc", getpid(), 7).Sends(100).Write(dir.File("zcal-report-1"));
  AppsReader reader(In(dir));
  EXPECT_EQ(SendsOf(reader.Read(kSecond).snapshot, "rpc"), 100u);
  Forge("rpc", getpid(), 8).Sends(5).Write(dir.File("zcal-report-1"));
  const AppsRead r = reader.Read(2 * kSecond);
  EXPECT_EQ(r.stats.Refused(AppRefusal::kBackwards), 0u);
  EXPECT_EQ(r.stats.folded, 1u);
  EXPECT_EQ(SendsOf(r.snapshot, "rpc"), 105u);
  EXPECT_EQ(r.snapshot.apps.at("rpc").exited_processes, 1u);
  EXPECT_EQ(r.snapshot.apps.at("rpc").live_processes, 1u);
}

TEST(AppsReader, FoldsAndRemovesAClosedObject) {
  ObjectDir dir;
  Forge f("rpc");
  f.Sends(10);
  f.Write(dir.File("zcal-report-1"));
  AppsReader reader(In(dir));
  EXPECT_EQ(SendsOf(reader.Read(kSecond).snapshot, "rpc"), 10u);
  f.cells.clear();
  f.Sends(12);
  f.header.flags = ZCAL_REPORT_FLAG_CLOSED;
  f.Write(dir.File("zcal-report-1"));
  const AppsRead r = reader.Read(2 * kSecond);
  EXPECT_EQ(r.stats.folded, 1u);
  EXPECT_EQ(r.stats.removed, 1u);
  EXPECT_EQ(r.stats.live, 0u);
  EXPECT_FALSE(fs::exists(dir.File("zcal-report-1")));
  EXPECT_EQ(SendsOf(r.snapshot, "rpc"), 12u);  // its final counts
  EXPECT_EQ(r.snapshot.apps.at("rpc").live_processes, 0u);
  EXPECT_EQ(r.snapshot.apps.at("rpc").exited_processes, 1u);
  const AppsRead after = reader.Read(3 * kSecond);
  EXPECT_EQ(SendsOf(after.snapshot, "rpc"), 12u);
  EXPECT_EQ(after.stats.folded, 0u);
}

// libzcal leaves a closed object for a live agent: its last read adds only
// what the process counted since the read before, once.
TEST(AppsReader, FoldsTheFinalCountsOfAClosedObjectExactlyOnce) {
  ObjectDir dir;
  Forge f("rpc");
  f.Sends(10, 1);
  f.Write(dir.File("zcal-report-1"));
  AppsReader reader(In(dir));
  EXPECT_EQ(SendsOf(reader.Read(kSecond).snapshot, "rpc"), 10u);
  EXPECT_EQ(SendsOf(reader.Read(2 * kSecond).snapshot, "rpc"), 10u);
  // Counted after the last read, then closed at exit.
  f.cells.clear();
  f.Sends(25, 3);
  f.header.flags = ZCAL_REPORT_FLAG_CLOSED;
  f.Write(dir.File("zcal-report-1"));
  const AppsRead r = reader.Read(3 * kSecond);
  EXPECT_EQ(r.stats.folded, 1u);
  EXPECT_EQ(r.stats.removed, 1u);
  EXPECT_FALSE(fs::exists(dir.File("zcal-report-1")));
  const AppTotals& totals = r.snapshot.apps.at("rpc");
  EXPECT_EQ(SendsOf(r.snapshot, "rpc"), 25u);
  EXPECT_EQ(totals.cells.at(kZc).completions, 25u);
  EXPECT_EQ(totals.cells.at(kZc).copied, 3u);
  EXPECT_EQ(totals.exited_processes, 1u);
  EXPECT_EQ(totals.live_processes, 0u);
  // The next process of that pid starts from zero; the first stays counted.
  Forge("rpc", getpid(), 8).Sends(4).Write(dir.File("zcal-report-1"));
  const AppsRead next = reader.Read(4 * kSecond);
  EXPECT_EQ(next.stats.folded, 0u);
  EXPECT_EQ(SendsOf(next.snapshot, "rpc"), 29u);
  EXPECT_EQ(next.snapshot.apps.at("rpc").exited_processes, 1u);
}

TEST(AppsReader, FoldsAndRemovesTheObjectOfADeadOwnerFoundOnItsFirstRead) {
  ObjectDir dir;
  Forge("killed", DeadPid()).Sends(7).Write(dir.File("zcal-report-1"));
  AppsReader reader(In(dir));
  const AppsRead r = reader.Read(kSecond);
  EXPECT_EQ(r.stats.read, 1u);
  EXPECT_EQ(r.stats.live, 0u);
  EXPECT_EQ(r.stats.folded, 1u);
  EXPECT_EQ(r.stats.removed, 1u);
  EXPECT_FALSE(fs::exists(dir.File("zcal-report-1")));
  EXPECT_EQ(SendsOf(r.snapshot, "killed"), 7u);
  EXPECT_EQ(SendsOf(reader.Read(2 * kSecond).snapshot, "killed"), 7u);
}

TEST(AppsReader, LeavesTheObjectOfAGoneOwnerAloneWithoutTheOwnerCheck) {
  ObjectDir dir;
  Forge("elsewhere", DeadPid()).Sends(7).Write(dir.File("zcal-report-1"));
  AppsSettings s = In(dir);
  s.owner_check = AppsOwnerCheck::kOff;  // another pid namespace's writer
  AppsReader reader(s);
  const AppsRead r = reader.Read(kSecond);
  EXPECT_EQ(r.stats.live, 1u);
  EXPECT_EQ(r.stats.folded, 0u);
  EXPECT_EQ(r.stats.removed, 0u);
  EXPECT_TRUE(fs::exists(dir.File("zcal-report-1")));
  EXPECT_EQ(r.snapshot.apps.at("elsewhere").live_processes, 1u);
  EXPECT_EQ(SendsOf(r.snapshot, "elsewhere"), 7u);
}

TEST(AppsReader, FoldsAnObjectItsOwnerRemoved) {
  ObjectDir dir;
  Forge("rpc").Sends(9).Write(dir.File("zcal-report-1"));
  AppsReader reader(In(dir));
  EXPECT_EQ(reader.Read(kSecond).snapshot.apps.at("rpc").live_processes, 1u);
  ASSERT_EQ(unlink(dir.File("zcal-report-1").c_str()), 0);
  const AppsRead r = reader.Read(2 * kSecond);
  EXPECT_EQ(r.stats.folded, 1u);
  EXPECT_EQ(r.stats.removed, 0u);
  EXPECT_EQ(SendsOf(r.snapshot, "rpc"), 9u);
  EXPECT_EQ(r.snapshot.apps.at("rpc").live_processes, 0u);
}

TEST(AppsReader, SumsNamesBeyondMaxNamesUnderOther) {
  ObjectDir dir;
  for (int i = 0; i < 5; ++i) {
    Forge(("app" + std::to_string(i)).c_str()).Sends(1).Write(
        dir.File("zcal-report-" + std::to_string(i)));
  }
  AppsSettings s = In(dir);
  s.max_names = 2;
  AppsReader reader(s);
  const AppsRead r = reader.Read(kSecond);
  EXPECT_EQ(r.snapshot.apps.size(), 3u);
  EXPECT_EQ(SendsOf(r.snapshot, "app0"), 1u);
  EXPECT_EQ(SendsOf(r.snapshot, "app1"), 1u);
  EXPECT_EQ(SendsOf(r.snapshot, std::string(kOtherApps)), 3u);
  EXPECT_EQ(r.snapshot.apps.at(std::string(kOtherApps)).live_processes, 3u);
}

TEST(AppsReader, ReadsOnlyTheListedOwners) {
  ObjectDir dir;
  Forge().Sends(1).Write(dir.File("zcal-report-1"));
  AppsSettings s = In(dir);
  s.uids = {getuid() + 1};
  AppsReader reader(s);
  const AppsRead r = reader.Read(kSecond);
  EXPECT_EQ(r.stats.Refused(AppRefusal::kUid), 1u);
  EXPECT_TRUE(r.snapshot.apps.empty());
  EXPECT_TRUE(fs::exists(dir.File("zcal-report-1")));  // open: its owner's
  s.uids = {getuid()};
  reader.SetSettings(s);
  EXPECT_EQ(SendsOf(reader.Read(2 * kSecond).snapshot, "rpc"), 1u);
}

// libzcal cannot see apps.uids: a closed object of an owner it does not
// list is removed, uncounted, or it would stay for good.
TEST(AppsReader, RemovesAClosedObjectOfAnUnlistedOwnerWithoutCountingIt) {
  ObjectDir dir;
  Forge f("rpc");
  f.Sends(5);
  f.header.flags = ZCAL_REPORT_FLAG_CLOSED;
  f.Write(dir.File("zcal-report-1"));
  Forge("forged").Sends(1).Write(dir.File("zcal-report-2"));  // open
  AppsSettings s = In(dir);
  s.uids = {getuid() + 1};
  AppsReader reader(s);
  const AppsRead r = reader.Read(kSecond);
  EXPECT_EQ(r.stats.Refused(AppRefusal::kUid), 2u);
  EXPECT_EQ(r.stats.removed, 1u);
  EXPECT_EQ(r.stats.folded, 0u);
  EXPECT_FALSE(fs::exists(dir.File("zcal-report-1")));
  EXPECT_TRUE(fs::exists(dir.File("zcal-report-2")));
  EXPECT_TRUE(r.snapshot.apps.empty());
}

// The owner (any local user, for a forgery) may shrink its object between
// the reader's fstat and its loads: the loads beyond the new end raise
// SIGBUS, which the reader turns into a refusal.
TEST(AppsReader, AnObjectShrunkWhileReadIsRefusedNotFatal) {
  ObjectDir dir;
  const std::string path = dir.File("zcal-report-1");
  Forge().Sends(3).Write(path);
  const AppsReader reader(In(dir));  // installs the SIGBUS guard
  const int fd = open(path.c_str(), O_RDWR | O_CLOEXEC);
  ASSERT_GE(fd, 0);
  void* map = mmap(nullptr, kObjectBytes, PROT_READ, MAP_SHARED, fd, 0);
  ASSERT_NE(map, MAP_FAILED);
  const auto* base = static_cast<const unsigned char*>(map);
  const auto header = apps::ReadHeader(base, kObjectBytes);
  ASSERT_TRUE(header) << header.error().message;
  ASSERT_EQ(ftruncate(fd, 0), 0);
  const auto counts = apps::ReadCounts(base, *header, 4);
  ASSERT_FALSE(counts);
  EXPECT_EQ(counts.error().kind, AppRefusal::kSize);
  const auto again = apps::ReadHeader(base, kObjectBytes);
  ASSERT_FALSE(again);
  EXPECT_EQ(again.error().kind, AppRefusal::kSize);
  munmap(map, kObjectBytes);
  close(fd);
}

TEST(AppsReader, LogsOnceADirectoryItCannotRead) {
  AppsSettings s;
  s.directory = "/nonexistent/zcal-apps";
  AppsReader reader(s);
  const AppsRead r = reader.Read(kSecond);
  ASSERT_EQ(r.messages.size(), 1u);
  EXPECT_NE(r.messages[0].find("/nonexistent/zcal-apps"), std::string::npos);
  EXPECT_TRUE(reader.Read(2 * kSecond).messages.empty());
}

// Disabled, it counts nothing, but removes what libzcal left closed for
// it: libzcal sees a live agent, not its settings.
TEST(AppsReader, ReadsNothingWhenDisabledButRemovesClosedObjects) {
  ObjectDir dir;
  Forge().Sends(1).Write(dir.File("zcal-report-1"));
  Forge closed("rpc", getpid(), 9);
  closed.Sends(2);
  closed.header.flags = ZCAL_REPORT_FLAG_CLOSED;
  closed.Write(dir.File("zcal-report-2"));
  Forge forged = closed;
  forged.header.magic = 0;  // not a report: not believed to be closed
  forged.Write(dir.File("zcal-report-3"));
  AppsSettings s = In(dir);
  s.enabled = false;
  AppsReader reader(s);
  const AppsRead r = reader.Read(kSecond);
  EXPECT_EQ(r.stats.seen, 0u);
  EXPECT_EQ(r.stats.read, 0u);
  EXPECT_EQ(r.stats.removed, 1u);
  EXPECT_TRUE(r.snapshot.apps.empty());
  EXPECT_TRUE(fs::exists(dir.File("zcal-report-1")));
  EXPECT_FALSE(fs::exists(dir.File("zcal-report-2")));
  EXPECT_TRUE(fs::exists(dir.File("zcal-report-3")));
}

// Turned off by a reload: a process read before that closes is folded
// with the counts of its last read, as when its object vanishes.
TEST(AppsReader, FoldsAKnownObjectClosedWhileDisabled) {
  ObjectDir dir;
  Forge f("rpc");
  f.Sends(6);
  f.Write(dir.File("zcal-report-1"));
  AppsSettings s = In(dir);
  AppsReader reader(s);
  EXPECT_EQ(reader.Read(kSecond).snapshot.apps.at("rpc").live_processes, 1u);
  s.enabled = false;
  reader.SetSettings(s);
  f.header.flags = ZCAL_REPORT_FLAG_CLOSED;
  f.Write(dir.File("zcal-report-1"));
  const AppsRead r = reader.Read(2 * kSecond);
  EXPECT_EQ(r.stats.removed, 1u);
  EXPECT_EQ(r.stats.folded, 1u);
  EXPECT_EQ(SendsOf(r.snapshot, "rpc"), 6u);
  EXPECT_EQ(r.snapshot.apps.at("rpc").live_processes, 0u);
  EXPECT_EQ(r.snapshot.apps.at("rpc").exited_processes, 1u);
}

// Whether the agent can remove any user's objects comes from CAP_FOWNER in
// its effective set, nothing else: root without it cannot in a sticky
// /dev/shm either.
TEST(MayRemoveAnyUsersObjects, ReadsCapFownerFromTheEffectiveSet) {
  const fs::path dir = fs::temp_directory_path() / ("zcal-capeff-" + std::to_string(getpid()));
  fs::create_directories(dir);
  const auto status = [&](const std::string& capeff) {
    const fs::path file = dir / "status";
    FILE* f = std::fopen(file.c_str(), "w");
    std::fprintf(f, "Name:\tzcal\nUid:\t0\t0\t0\t0\nCapInh:\t0000000000000000\n"
                    "CapPrm:\t000001ffffffffff\nCapEff:\t%s\n", capeff.c_str());
    std::fclose(f);
    return file.string();
  };
  EXPECT_TRUE(MayRemoveAnyUsersObjects(status("000001ffffffffff")));  // root's
  EXPECT_TRUE(MayRemoveAnyUsersObjects(status("0000000000000008")));  // CAP_FOWNER alone
  EXPECT_FALSE(MayRemoveAnyUsersObjects(status("0000000000000000")));
  EXPECT_FALSE(MayRemoveAnyUsersObjects(status("00000000000000f7")));  // all but it
  EXPECT_FALSE(MayRemoveAnyUsersObjects(status("not hex")));
  EXPECT_FALSE(MayRemoveAnyUsersObjects((dir / "missing").string()));
  fs::remove_all(dir);
}

}  // namespace
}  // namespace zcal::agent::apps_reader_test
