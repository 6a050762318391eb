// Files replaced whole or not at all.
#include "zcal/common/atomic_file.h"

#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

#include <gtest/gtest.h>

namespace zcal::common::atomic_file_test {
namespace {

namespace fs = std::filesystem;

class Dir {
 public:
  Dir() {
    std::string pattern = (fs::temp_directory_path() / "zcal-atomic-XXXXXX").string();
    path_ = mkdtemp(pattern.data());
  }
  ~Dir() { fs::remove_all(path_); }
  const fs::path& path() const { return path_; }
  // Every name in the directory: no temporary file may be left behind.
  std::size_t Entries() const {
    return static_cast<std::size_t>(std::distance(fs::directory_iterator(path_), {}));
  }

 private:
  fs::path path_;
};

std::string Read(const fs::path& path) {
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

mode_t ModeOf(const fs::path& path) {
  struct stat st {};
  EXPECT_EQ(stat(path.c_str(), &st), 0);
  return st.st_mode & 07777;
}

TEST(AtomicFile, WritesAndReplacesWithoutLeavingATemporaryFile) {
  Dir dir;
  const fs::path file = dir.path() / "out.txt";
  ASSERT_TRUE(WriteFileAtomically(file.string(), "first\n"));
  ASSERT_TRUE(WriteFileAtomically(file.string(), "second\n"));
  EXPECT_EQ(Read(file), "second\n");
  EXPECT_EQ(ModeOf(file), 0644u);
  EXPECT_EQ(dir.Entries(), 1u);
}

TEST(AtomicFile, TheOldFileStaysWholeUntilCommit) {
  Dir dir;
  const fs::path file = dir.path() / "out.txt";
  ASSERT_TRUE(WriteFileAtomically(file.string(), "old\n"));
  {
    auto pending = AtomicFile::Create(file.string());
    ASSERT_TRUE(pending) << pending.error().message;
    ASSERT_TRUE((*pending)->Write("new, but never committed\n"));
    EXPECT_EQ(Read(file), "old\n");
  }
  EXPECT_EQ(Read(file), "old\n");
  EXPECT_EQ(dir.Entries(), 1u) << "the temporary file goes with the object";
}

TEST(AtomicFile, SetsTheModeAskedOrKeepsTheReplacedFilesMode) {
  Dir dir;
  const fs::path file = dir.path() / "out.txt";
  AtomicFileOptions options;
  options.mode = 0600;
  ASSERT_TRUE(WriteFileAtomically(file.string(), "a", options));
  EXPECT_EQ(ModeOf(file), 0600u);
  ASSERT_EQ(chmod(file.c_str(), 0640), 0);
  options.mode = 0644;
  options.keep_existing = true;
  ASSERT_TRUE(WriteFileAtomically(file.string(), "b", options));
  EXPECT_EQ(ModeOf(file), 0640u) << "the replaced file's mode is kept";
  EXPECT_EQ(Read(file), "b");
}

TEST(AtomicFile, CreatesMissingDirectoriesOnlyWhenAsked) {
  Dir dir;
  const fs::path file = dir.path() / "a" / "b" / "out.txt";
  const Result<void> refused = WriteFileAtomically(file.string(), "x");
  ASSERT_FALSE(refused);
  EXPECT_EQ(refused.error().code, Errc::kIo);
  EXPECT_NE(refused.error().message.find(file.string()), std::string::npos)
      << refused.error().message;
  AtomicFileOptions options;
  options.create_directories = true;
  ASSERT_TRUE(WriteFileAtomically(file.string(), "x", options));
  EXPECT_EQ(Read(file), "x");
}

TEST(AtomicFile, ADirectoryThatIsAFileIsReportedWithItsPath) {
  Dir dir;
  const fs::path blocker = dir.path() / "file";
  ASSERT_TRUE(WriteFileAtomically(blocker.string(), "x"));
  AtomicFileOptions options;
  options.create_directories = true;
  const Result<void> failed = WriteFileAtomically((blocker / "out").string(), "y", options);
  ASSERT_FALSE(failed);
  EXPECT_NE(failed.error().message.find(blocker.string()), std::string::npos)
      << failed.error().message;
}

TEST(AtomicFile, ASymbolicLinkAtThePathIsReplacedNotFollowed) {
  Dir dir;
  const fs::path target = dir.path() / "target";
  const fs::path link = dir.path() / "link";
  ASSERT_TRUE(WriteFileAtomically(target.string(), "target\n"));
  fs::create_symlink(target, link);
  ASSERT_TRUE(WriteFileAtomically(link.string(), "new\n"));
  EXPECT_FALSE(fs::is_symlink(link));
  EXPECT_EQ(Read(link), "new\n");
  EXPECT_EQ(Read(target), "target\n");
}

TEST(AtomicFile, TheDescriptorStaysUsableAfterCommit) {
  Dir dir;
  const fs::path file = dir.path() / "segment";
  auto pending = AtomicFile::Create(file.string());
  ASSERT_TRUE(pending);
  ASSERT_EQ(ftruncate((*pending)->fd(), 4096), 0);
  ASSERT_TRUE((*pending)->Commit());
  UniqueFd fd = (*pending)->TakeFd();
  struct stat by_fd {}, by_name {};
  ASSERT_EQ(fstat(fd.get(), &by_fd), 0);
  ASSERT_EQ(stat(file.c_str(), &by_name), 0);
  EXPECT_EQ(by_fd.st_ino, by_name.st_ino);
  EXPECT_EQ(by_fd.st_size, 4096);
}

}  // namespace
}  // namespace zcal::common::atomic_file_test
